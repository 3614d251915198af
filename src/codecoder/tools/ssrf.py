"""web_fetch's guard against server-side request forgery (docs/permissions.md, "web_fetch").

A model that can fetch URLs can be talked (by a page, an issue, a file) into fetching
what only this machine can reach: a local admin page, a database's HTTP port, the cloud
metadata service that hands out credentials. So:

- `check_url` refuses before any lookup: a scheme other than http and https; a user
  name or password (`http://good.com@evil.com/`: which host is meant?); a host with
  characters no host name has; IPv4 written in any form but dotted decimal (`2130706433`,
  `0x7f.0.0.1`, `0177.0.0.1`, `127.1`), which parsers disagree on; IPv4-mapped IPv6
  (`[::ffff:127.0.0.1]`); the metadata services' names; and an address written in the
  URL that is not a public one.
- `resolve` (the pool's resolver) looks the host up once, refuses the whole host when
  any of its addresses is not public, and returns the addresses it checked, which are the
  only ones the pool connects to: no second lookup for a DNS rebinding to answer.

Not public: loopback, private, link-local, CGNAT (100.64.0.0/10), multicast, 0.0.0.0/8
and unspecified, reserved and documentation ranges, and the IPv4 inside a mapped, NAT64,
6to4 or Teredo address; the cloud metadata addresses are named as such. `[web]
allow_private` (the user's config only) opens exceptions by host, host and port,
address or range; never for a metadata address.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

import msgspec

from codecoder.providers.pool import AddrInfo, ConnectFailed, TransportError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean …
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.170.23",  # AWS EKS pod identity
        "168.63.129.16",  # Azure wire server
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS EKS pod identity over IPv6
    )
)
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
    }
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+")
_DOTTED_DECIMAL = re.compile(r"(0|[1-9][0-9]{0,2})(\.(0|[1-9][0-9]{0,2})){3}")
_HOST_NAME = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")


class Refused(TransportError):
    """The URL, or an address its host has, is not fetched; the message names it."""


class Target(msgspec.Struct, frozen=True):
    scheme: str
    host: str
    """Lower case, IDNA-encoded, no trailing dot, no brackets around IPv6."""
    port: int
    address: IPAddress | None = None
    """The address when the URL names one."""


class _Exception(msgspec.Struct, frozen=True):
    """One `allow_private` entry."""

    host: str | None = None
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    port: int | None = None

    def covers(self, host: str, address: IPAddress, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.host is not None:
            return host == self.host
        return self.network is not None and address in self.network


def parse_exception(entry: str) -> _Exception:
    """`localhost`, `localhost:3000`, `[::1]:8080`, `10.1.2.3`, `10.0.0.0/8`; ValueError
    for anything else."""
    text = entry.strip().lower()
    port: int | None = None
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket:
            raise ValueError(f"expected [address] or [address]:port, got {entry!r}")
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"expected [address]:port, got {entry!r}")
            port = _port(rest[1:], entry)
        text = inside
    elif text.count(":") == 1:
        text, _, raw_port = text.partition(":")
        port = _port(raw_port, entry)
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        network = None
    if network is not None:
        if "/" in text and port is not None:
            raise ValueError(f"a range takes no port: {entry!r}")
        return _Exception(network=network, port=port)
    host = text.rstrip(".")
    if not _HOST_NAME.fullmatch(host):
        raise ValueError(f"expected a host, host:port, address or range, got {entry!r}")
    return _Exception(host=host, port=port)


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"bad port in {entry!r}")
    return int(text)


def refusal(address: IPAddress) -> str | None:
    """Why `address` is not fetched (None: it is a public address)."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded(address)
        if inner is not None:
            why = refusal(inner)
            return f"{why}, inside an IPv6 address" if why else None
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_unspecified or address in _THIS_NETWORK:
        return "in 0.0.0.0/8 (this host)"
    if address.is_link_local:
        return "a link-local address"
    if address in _CGNAT:
        return "in the CGNAT range (100.64.0.0/10)"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private address"
    if address.is_reserved or not address.is_global:
        return "not a public address"
    return None


def _embedded(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside a mapped, NAT64, 6to4 or Teredo IPv6 address."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


Lookup = Callable[[str, int], Sequence[AddrInfo]]


def _getaddrinfo(host: str, port: int) -> Sequence[AddrInfo]:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


class Guard:
    """The checks of one session (its `[web] allow_private`). `lookup` is the name
    lookup (getaddrinfo; tests give a table of their own)."""

    def __init__(self, allow_private: Sequence[str] = (), lookup: Lookup = _getaddrinfo) -> None:
        """ValueError for an entry that cannot be read."""
        self.exceptions = tuple(parse_exception(entry) for entry in allow_private)
        self._lookup = lookup

    def check_url(self, url: str) -> Target:
        """The URL's target, or Refused naming what is wrong with it."""
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError as exc:
            raise Refused(f"refused {url!r}: not a URL ({exc})") from exc
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            what = f"{scheme}:" if scheme else "no scheme"
            raise Refused(f"refused {url!r}: only http:// and https:// URLs are fetched ({what})")
        if "@" in parts.netloc:
            raise Refused(
                f"refused {url!r}: a user name or password in a URL (user@host) can hide which "
                "host is meant; leave it out"
            )
        host = _normal_host(parts.hostname or "", url)
        port = port or (443 if scheme == "https" else 80)
        address = _literal(host, url)
        if address is not None:
            self._check(host, address, port)
        elif host in METADATA_NAMES:
            raise Refused(f"refused {host}: a cloud metadata service")
        return Target(scheme=scheme, host=host, port=port, address=address)

    def resolve(self, host: str, port: int) -> list[AddrInfo]:
        """The addresses to connect to (the pool's resolver): every address the host has,
        each checked; Refused when one is not public (and no exception opens it)."""
        address = _literal(host, host)
        if address is not None:
            self._check(host, address, port)
            family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
            sockaddr = (str(address), port, 0, 0) if address.version == 6 else (str(address), port)
            return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", sockaddr)]
        try:
            found = list(self._lookup(host, port))
        except OSError as exc:
            raise ConnectFailed(f"cannot look up {host}: {exc.strerror or exc}") from exc
        if not found:
            raise ConnectFailed(f"{host} has no address")
        for info in found:
            self._check(host, ipaddress.ip_address(str(info[4][0]).partition("%")[0]), port)
        return found

    def _check(self, host: str, address: IPAddress, port: int) -> None:
        why = refusal(address)
        if why is None:
            return
        if why != "a cloud metadata address" and any(
            e.covers(host, address, port) for e in self.exceptions
        ):
            return
        where = f"{host} ({address})" if host != str(address) else str(address)
        hint = "" if why == "a cloud metadata address" else "; [web] allow_private can open it"
        raise Refused(f"refused {where}: {why}{hint}")


def _normal_host(raw: str, url: str) -> str:
    if not raw:
        raise Refused(f"refused {url!r}: it names no host")
    host = raw.lower()
    if host.endswith("."):
        host = host[:-1]
    if ":" in host:  # an IPv6 literal (urlsplit took the brackets off)
        return host
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise Refused(f"refused {url!r}: {raw!r} is not a valid host name") from exc
    if not _HOST_NAME.fullmatch(host):
        raise Refused(f"refused {url!r}: {raw!r} has characters no host name has")
    return host


def _literal(host: str, url: str) -> IPAddress | None:
    """The address a host spells, None for a name; Refused for the forms that parsers
    read differently (every IPv4 form but dotted decimal) and for IPv4-mapped IPv6."""
    if ":" in host:
        try:
            address = ipaddress.IPv6Address(host.partition("%")[0])
        except ValueError as exc:
            raise Refused(f"refused {url!r}: {host!r} is not an IPv6 address") from exc
        if address.ipv4_mapped is not None:
            raise Refused(
                f"refused {host}: IPv4-mapped IPv6 ({address.ipv4_mapped} written as IPv6); "
                "write the IPv4 address"
            )
        return address
    labels = host.split(".")
    if not all(_NUMERIC_LABEL.fullmatch(label) for label in labels):
        return None
    if not _DOTTED_DECIMAL.fullmatch(host) or any(int(label) > 255 for label in labels):
        raise Refused(
            f"refused {host}: an IP address written in decimal, octal or hex, or shortened; "
            "write a.b.c.d"
        )
    return ipaddress.IPv4Address(host)
