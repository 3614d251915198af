"""The SSRF guard alone: which addresses are public, the numeric forms and URL tricks
refused before any lookup, and what `[web] allow_private` opens (tests/tools/
test_web_fetch.py drives it through a real fetch)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence

import pytest

from codecoder.providers.pool import AddrInfo
from codecoder.tools.ssrf import Guard, Refused, parse_exception, refusal


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.255.255.254", "a loopback address"),
        ("::1", "a loopback address"),
        ("0.0.0.0", "in 0.0.0.0/8 (this host)"),
        ("0.1.2.3", "in 0.0.0.0/8 (this host)"),
        ("::", "in 0.0.0.0/8 (this host)"),
        ("10.1.2.3", "a private address"),
        ("172.16.0.1", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fd12::1", "a private address"),
        ("169.254.1.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("100.64.0.1", "in the CGNAT range (100.64.0.0/10)"),
        ("100.127.255.254", "in the CGNAT range (100.64.0.0/10)"),
        ("224.0.0.1", "a multicast address"),
        ("239.1.1.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("168.63.129.16", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("192.0.2.1", "a private address"),  # documentation (TEST-NET-1)
        ("240.0.0.1", "a private address"),  # reserved
        ("255.255.255.255", "a private address"),
        ("::ffff:10.0.0.1", "a private address, inside an IPv6 address"),
        ("64:ff9b::a9fe:a9fe", "a cloud metadata address, inside an IPv6 address"),  # NAT64
        ("2002:7f00:1::", "a loopback address, inside an IPv6 address"),  # 6to4
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "a loopback address, inside an IPv6 address"),
    ],
)
def test_addresses_that_are_not_public(address: str, why: str) -> None:
    assert refusal(ipaddress.ip_address(address)) == why


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "host",
    [
        "2130706433",
        "0x7f000001",
        "0X7F000001",
        "0x7f.0x0.0x0.0x1",
        "0177.0.0.1",
        "0177.0000.0000.0001",
        "127.1",
        "127.0.1",
        "127.000.000.001",
        "1.2.3.4.5",
        "256.1.1.1",
        "08.8.8.8",
    ],
)
def test_ipv4_in_any_form_but_dotted_decimal_is_refused(host: str) -> None:
    with pytest.raises(Refused, match="decimal, octal or hex"):
        Guard().check_url(f"http://{host}/")


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://[::ffff:127.0.0.1]/", "IPv4-mapped IPv6 (127.0.0.1"),
        ("http://[::ffff:8.8.8.8]/", "IPv4-mapped IPv6"),  # even a public one: a form
        ("http://a@example.com/", "user@host"),
        ("http://a:b@example.com/", "user@host"),
        ("http://example.com\\@evil.example/", "user@host"),
        ("javascript:alert(1)", "only http:// and https://"),
        ("data:text/html,<b>x</b>", "only http:// and https://"),
        ("//example.com/", "only http:// and https://"),
        ("http:///path", "names no host"),
        ("http://exa mple.com/", "no host name has"),
        ("http://ex%41mple.com/", "no host name has"),
        ("http://example.com:99999/", "not a URL"),
        ("http://[not-v6]/", "not a URL"),
        ("http://METADATA.google.internal./", "a cloud metadata service"),
    ],
)
def test_url_tricks_are_refused_before_a_lookup(url: str, fragment: str) -> None:
    with pytest.raises(Refused, match=fragment.replace("(", r"\(").replace("?", r"\?")):
        Guard().check_url(url)


def test_names_are_normalised() -> None:
    guard = Guard()
    assert guard.check_url("HTTPS://Docs.Python.ORG./3/").host == "docs.python.org"
    target = guard.check_url("http://bücher.example/")
    assert (target.host, target.port) == ("xn--bcher-kva.example", 80)
    assert guard.check_url("https://example.com:8443/").port == 8443
    v6 = guard.check_url("http://[2606:4700::1111]:81/")
    assert v6.host == "2606:4700::1111" and v6.address == ipaddress.ip_address("2606:4700::1111")


def lookup_of(table: dict[str, list[str]]) -> object:
    def lookup(host: str, port: int) -> Sequence[AddrInfo]:
        return [
            (
                socket.AF_INET6 if ":" in a else socket.AF_INET,
                socket.SOCK_STREAM,
                6,
                "",
                (a, port, 0, 0) if ":" in a else (a, port),
            )
            for a in table[host]
        ]

    return lookup


def test_resolve_checks_every_address_and_returns_them() -> None:
    table = {"ok.test": ["93.184.216.34", "2606:4700::1111"], "bad.test": ["93.184.216.34", "::1"]}
    guard = Guard(lookup=lookup_of(table))  # type: ignore[arg-type]
    assert [info[4][0] for info in guard.resolve("ok.test", 443)] == [
        "93.184.216.34",
        "2606:4700::1111",
    ]
    with pytest.raises(Refused, match=r"refused bad.test \(::1\): a loopback address"):
        guard.resolve("bad.test", 443)


def test_a_literal_address_is_not_looked_up() -> None:
    def lookup(host: str, port: int) -> Sequence[AddrInfo]:
        raise AssertionError("no lookup for an address")

    (info,) = Guard(["10.0.0.0/8"], lookup=lookup).resolve("10.1.2.3", 8080)
    assert info[4] == ("10.1.2.3", 8080)


@pytest.mark.parametrize(
    ("entries", "host", "address", "port", "opened"),
    [
        (["localhost:3000"], "localhost", "127.0.0.1", 3000, True),
        (["localhost:3000"], "localhost", "::1", 3000, True),
        (["localhost:3000"], "localhost", "127.0.0.1", 3001, False),
        (["localhost:3000"], "127.0.0.1", "127.0.0.1", 3000, False),  # another host name
        (["LocalHost"], "localhost", "127.0.0.1", 1, True),
        (["10.0.0.0/8"], "build.lan", "10.9.8.7", 80, True),
        (["10.0.0.0/8"], "build.lan", "192.168.1.1", 80, False),
        (["192.168.1.5:8080"], "printer", "192.168.1.5", 8080, True),
        (["192.168.1.5:8080"], "printer", "192.168.1.5", 80, False),
        (["[::1]:8080"], "x", "::1", 8080, True),
        (["169.254.169.254"], "x", "169.254.169.254", 80, False),  # never metadata
        (["169.254.0.0/16"], "x", "169.254.169.254", 80, False),
        (["169.254.0.0/16"], "x", "169.254.1.1", 80, True),
    ],
)
def test_allow_private_opens_exceptions(
    entries: list[str], host: str, address: str, port: int, opened: bool
) -> None:
    guard = Guard(entries, lookup=lookup_of({host: [address]}))  # type: ignore[arg-type]
    if opened:
        assert guard.resolve(host, port)[0][4][0] == address
    else:
        with pytest.raises(Refused):
            guard.resolve(host, port)


@pytest.mark.parametrize("entry", ["", "local host", "host:0", "host:x", "10.0.0.0/8:80", "[::1"])
def test_a_bad_allow_private_entry_is_an_error(entry: str) -> None:
    with pytest.raises(ValueError):
        parse_exception(entry)
