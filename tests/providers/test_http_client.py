"""Our use of http.client's HTTP/1.1 framing, through the pool, against raw servers on
127.0.0.1 (the cases of the former own-framing tests that still apply): whatever way a
server cuts its chunks and the network cuts its reads, the body comes out whole, once and
as it arrives; a broken answer is a lost connection, never a hang or a ValueError; what
we send reads back the same in h11, and what cannot go on the wire is refused."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import h11
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codecoder.providers.pool import BadURL, ConnectionLost, Pool
from tests.fakes.raw_server import Handler, Peer, Server, answer, serving

CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
VALUE_CHARS = "".join(map(chr, [*range(0x21, 0x7F), *range(0xA0, 0x100)])) + " \t"

tokens = st.text(TOKEN_CHARS, min_size=1, max_size=12)
values = st.text(VALUE_CHARS, max_size=30).map(lambda v: v.strip(" \t"))
extensions = st.sampled_from(["", ";a", ";name=value", ";a=1;b"])


@pytest.fixture
def pool() -> Iterator[Pool]:
    connections = Pool(connect=2.0, read=2.0, write=2.0, user_agent="pool-test/1")
    yield connections
    connections.close()


def fetch(pool: Pool, url: str, method: str = "GET") -> tuple[int, bytes]:
    response = pool.request(method, url, headers={})
    try:
        return response.status, response.read()
    finally:
        response.close()


def replying(*parts: bytes, pause: float = 0.0) -> Handler:
    """A handler answering every request with `parts`, written one by one."""

    def handle(peer: Peer) -> None:
        while peer.request() is not None:
            for part in parts:
                peer.send(part)
                time.sleep(pause)

    return handle


# --- chunked bodies ----------------------------------------------------------------------


@st.composite
def chunked_bodies(draw: st.DrawFn) -> tuple[list[bytes], bytes]:
    """(the wire bytes after the head, cut where the server flushes; the body they carry):
    sizes in either case or with leading zeros, chunk extensions, trailer fields."""
    chunks = draw(st.lists(st.binary(min_size=1, max_size=200), max_size=8))
    wire = b""
    for chunk in chunks:
        size = format(len(chunk), "x")
        size = draw(st.sampled_from([size, size.upper(), "00" + size]))
        wire += f"{size}{draw(extensions)}\r\n".encode() + chunk + b"\r\n"
    trailers = draw(st.lists(st.tuples(tokens.map(lambda t: "x-" + t), values), max_size=3))
    fields = "".join(f"{name}: {value}\r\n" for name, value in trailers)
    wire += f"0{draw(extensions)}\r\n{fields}\r\n".encode("latin-1")
    cuts = sorted(draw(st.lists(st.integers(0, len(wire)), max_size=6)))
    bounds = [0, *cuts, len(wire)]
    return [wire[a:b] for a, b in itertools.pairwise(bounds) if b > a], b"".join(chunks)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunked_bodies())
def test_any_cut_of_a_chunked_body_gives_the_body_once_and_keeps_the_connection(
    message: tuple[list[bytes], bytes],
) -> None:
    pieces, body = message
    pool = Pool(connect=2.0, read=2.0, write=2.0, user_agent="pool-test/1")
    with Server(replying(CHUNKED_HEAD, *pieces, pause=0.002)) as server:
        assert fetch(pool, server.url) == (200, body)
        assert fetch(pool, server.url) == (200, body)  # trailers read: the next one fits
    pool.close()
    assert server.accepted == 1


def test_the_chunks_of_one_read_come_out_as_one_piece(pool: Pool) -> None:
    """A streaming server sends one chunk per token: the SSE decoder and the kernel see one
    batch per network read, not one per token."""
    tokens = [f"data: token {n}\n\n".encode() for n in range(400)]
    wire = b"".join(b"%x\r\n%s\r\n" % (len(t), t) for t in tokens) + b"0\r\n\r\n"
    with Server(replying(CHUNKED_HEAD + wire)) as server:
        response = pool.request("GET", server.url, headers={})
        pieces = list(response.iter_bytes())
        response.close()
    assert b"".join(pieces) == b"".join(tokens)
    assert len(pieces) <= 2  # one read, or two should the network cut it


def test_a_chunk_comes_out_as_it_arrives(pool: Pool) -> None:
    """Half a chunk is given at once, not held until the chunk (or the next) is whole."""
    first_half = threading.Event()

    def handle(peer: Peer) -> None:
        peer.request()
        peer.send(CHUNKED_HEAD + b"a\r\n01234")
        assert first_half.wait(5)
        peer.send(b"56789\r\n")
        peer.send(b"3\r\nabc\r\n")  # the CRLF of a chunk alone in a read, then the next
        peer.send(b"0\r\n\r\n")

    with Server(handle) as server:
        response = pool.request("GET", server.url, headers={})
        pieces = response.iter_bytes()
        assert next(pieces) == b"01234"
        first_half.set()
        assert b"".join(pieces) == b"56789abc"
        response.close()


@pytest.mark.parametrize(
    "wire",
    [b"zz\r\n", b"1x\r\nab\r\n", b"\r\n", b" \r\n", b";ext\r\n", b"1;" + b"x" * 70_000],
    ids=["letters", "trailing-letter", "empty", "blank", "only-extension", "endless-line"],
)
def test_a_bad_chunk_size_is_a_lost_connection(pool: Pool, wire: bytes) -> None:
    with Server(replying(CHUNKED_HEAD + wire)) as server:
        response = pool.request("GET", server.url, headers={})
        with pytest.raises(ConnectionLost):
            response.read()
        response.close()


def test_an_endless_trailer_line_is_a_lost_connection(pool: Pool) -> None:
    with Server(replying(CHUNKED_HEAD + b"0\r\nx-b: " + b"y" * 70_000)) as server:
        response = pool.request("GET", server.url, headers={})
        with pytest.raises(ConnectionLost):
            response.read()
        response.close()


@pytest.mark.parametrize(
    "reply",
    [CHUNKED_HEAD + b"5\r\nab", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab"],
    ids=["chunked", "content-length"],
)
def test_a_connection_closed_mid_body_is_lost(pool: Pool, reply: bytes) -> None:
    def handle(peer: Peer) -> None:
        peer.request()
        peer.send(reply)

    with Server(handle) as server:
        response = pool.request("GET", server.url, headers={})
        with pytest.raises(ConnectionLost):
            response.read()
        response.close()


# --- what we send --------------------------------------------------------------------------


class RawHeads:
    """A server that keeps the raw head of each request and answers `ok`."""

    def __init__(self) -> None:
        self.heads: list[bytes] = []

    def __call__(self, peer: Peer) -> None:
        buffer = b""
        while True:
            while (end := buffer.find(b"\r\n\r\n")) < 0:
                data = peer.sock.recv(65536)
                if not data:
                    return
                buffer += data
            head, buffer = buffer[: end + 4], buffer[end + 4 :]
            self.heads.append(head)
            peer.send(answer(b"ok"))


def test_the_request_head_on_the_wire(pool: Pool) -> None:
    heads = RawHeads()
    with Server(heads) as server:
        response = pool.request(
            "POST", server.url + "/v1/messages?beta=1", headers={"X-Key": "k"}, body=b"{}"
        )
        assert response.read() == b"ok"
        response.close()
    assert heads.heads == [
        b"POST /v1/messages?beta=1 HTTP/1.1\r\n"
        + f"Host: 127.0.0.1:{server.port}\r\n".encode()
        + b"User-Agent: pool-test/1\r\nAccept-Encoding: identity\r\nX-Key: k\r\n"
        + b"Content-Length: 2\r\n\r\n"
    ]


def test_given_headers_replace_the_defaults(pool: Pool) -> None:
    heads = RawHeads()
    with Server(heads) as server:
        given = {"user-agent": "mine/2", "Accept-Encoding": "gzip"}
        response = pool.request("GET", server.url, headers=given)
        response.read()
        response.close()
    [head] = heads.heads
    assert head.count(b"User-Agent") + head.count(b"user-agent") == 1
    assert b"user-agent: mine/2\r\n" in head and b"Accept-Encoding: gzip\r\n" in head


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["GET", "POST", "PUT", "DELETE"]),
    st.text("abcxyz0189-._~%/=&?", max_size=30)
    .map(lambda t: "/" + t)
    .filter(lambda t: t.find("?") != len(t) - 1),  # an empty query is left out
    st.dictionaries(tokens.map(lambda t: "X-" + t), values, max_size=6),
)
def test_a_request_head_reads_back_the_same_with_h11(
    method: str, target: str, headers: dict[str, str]
) -> None:
    heads = RawHeads()
    pool = Pool(connect=2.0, read=2.0, write=2.0, user_agent="pool-test/1")
    with Server(heads) as server:
        response = pool.request(method, server.url + target, headers=headers)
        response.read()
        response.close()
    pool.close()
    reader = h11.Connection(h11.SERVER)
    reader.receive_data(heads.heads[0])
    event = reader.next_event()
    assert isinstance(event, h11.Request)
    assert (event.method, event.target) == (method.encode(), target.encode())
    sent = [(n.decode(), v.decode("latin-1")) for n, v in event.headers.raw_items()]
    assert [item for item in sent if item[0].startswith("X-")] == list(headers.items())


@pytest.mark.parametrize(
    "headers",
    [
        {"X-A": "v\r\nEvil: 1"},
        {"X-A": "v\nEvil: 1"},
        {"X-A": "v\rEvil: 1"},
        {"X-A": "v\r\n Evil: 1"},
        {"X-A": "v\0"},
        {"X-A: b": "v"},
        {"X-A\r\nEvil": "v"},
        {"X-A": "wait…"},
        {"X-Ā": "v"},
    ],
)
def test_a_header_that_cannot_go_on_the_wire_is_refused_before_connecting(
    pool: Pool, headers: dict[str, str]
) -> None:
    with Server(serving(answer())) as server, pytest.raises(BadURL, match="cannot build"):
        pool.request("POST", server.url, headers=headers, body=b"x")
    assert server.accepted == 0


# --- what we read ----------------------------------------------------------------------


def test_a_head_gives_status_reason_and_lowercased_headers(pool: Pool) -> None:
    reply = (
        b"HTTP/1.1 429 Too Many Requests\r\n"
        b"Content-Type: application/json\r\n"
        b"Retry-After:  7 \r\n"
        b"Set-Cookie: a=1\r\n"
        b"set-cookie: b=2\r\n"
        b"X-Empty:\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )
    with Server(replying(reply)) as server:
        response = pool.request("GET", server.url, headers={})
        assert (response.status, response.reason) == (429, "Too Many Requests")
        assert response.headers == {
            "content-type": "application/json",
            "retry-after": "7",
            "set-cookie": "a=1, b=2",
            "x-empty": "",
            "content-length": "2",
        }
        assert response.read() == b"{}"
        response.close()


@pytest.mark.parametrize(
    ("reply", "status", "body"),
    [
        (b"HTTP/1.1 204\r\n\r\n", 204, b""),
        (b"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b\n\nhi", 200, b"hi"),
    ],
    ids=["no-reason", "bare-lf"],
)
def test_unusual_but_valid_heads_are_read(
    pool: Pool, reply: bytes, status: int, body: bytes
) -> None:
    with Server(replying(reply)) as server:
        assert fetch(pool, server.url) == (status, body)
        assert fetch(pool, server.url) == (status, body)
    assert server.accepted == 1


@pytest.mark.parametrize(
    ("head", "kept"),
    [
        (b"HTTP/1.1 200 OK\r\n", True),
        (b"HTTP/1.1 200 OK\r\nConnection: Upgrade, Close\r\n", False),
        (b"HTTP/1.0 200 OK\r\n", False),
        (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n", True),
        (b"HTTP/1.1 204 No Content\r\n", True),
        (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n", True),
    ],
)
def test_keep_alive_follows_the_version_and_connection(pool: Pool, head: bytes, kept: bool) -> None:
    bodiless = b" 204 " in head or b" 304 " in head
    reply = head + (b"\r\n" if bodiless else b"Content-Length: 2\r\n\r\nok")
    with Server(replying(reply)) as server:
        for _ in range(2):
            assert fetch(pool, server.url)[1] == (b"" if bodiless else b"ok")
    assert server.accepted == (1 if kept else 2)


def test_a_head_request_reads_no_body(pool: Pool) -> None:
    with Server(replying(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")) as server:
        assert fetch(pool, server.url, "HEAD") == (200, b"")
        assert fetch(pool, server.url, "HEAD") == (200, b"")
    assert server.accepted == 1


@pytest.mark.parametrize(
    "head",
    [
        b"\r\n\r\n",
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/2 200 OK\r\n\r\n",
        b"http/1.1 200 OK\r\n\r\n",
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n",
    ],
    ids=[
        "empty",
        "short-code",
        "long-code",
        "letters",
        "http2",
        "lowercase",
        "ssh",
        "conflicting-length",
        "empty-length",
        "negative-length",
        "hex-length",
        "superscript-length",
        "huge-length",
    ],
)
def test_a_garbage_head_is_a_lost_connection_not_a_hang(pool: Pool, head: bytes) -> None:
    """Whatever the server sends, the caller sees a TransportError at once: never a
    ValueError, nor a wait for the close of a connection the server keeps open."""

    def handle(peer: Peer) -> None:
        peer.request()
        peer.send(head)
        peer.drain()

    with Server(handle) as server:
        started = time.monotonic()
        with pytest.raises(ConnectionLost):
            pool.request("GET", server.url, headers={})
        assert time.monotonic() - started < 1.0
