"""The connection pool (http.client underneath) against real sockets on 127.0.0.1: bodies,
keep-alive and its failures, timeouts, redirects, TLS and its certificates, proxies and the
socket a cancel shuts down.

Each server is a thread accepting connections and a thread per connection running a
small handler; `Server.stop` shuts their sockets down and joins them all."""

from __future__ import annotations

import base64
import contextlib
import gzip
import os
import resource
import select
import socket
import ssl
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

import codecoder.providers.pool as pool_module
from codecoder.providers.pool import (
    CA,
    BadURL,
    ConnectFailed,
    ConnectionLost,
    ConnectRefused,
    Pool,
    ReadTimedOut,
    TLSFailed,
    TransportError,
    TrustStore,
)
from tests.fakes.raw_server import Peer, Server, answer, chunked, serving, silent

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")

# --- fixtures ------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def pool() -> Iterator[Pool]:
    connections = Pool(connect=2.0, read=2.0, write=2.0, user_agent="pool-test/1")
    yield connections
    connections.close()


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def server_tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    return context


@pytest.fixture
def trust_ca(ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client trusts our CA only (through SSL_CERT_FILE), from a fresh TLS context."""
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    monkeypatch.setenv("SSL_CERT_FILE", str(path))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


def fetch(pool: Pool, url: str, method: str = "GET", *, body: bytes = b"") -> tuple[int, bytes]:
    response = pool.request(method, url, headers={}, body=body)
    try:
        return response.status, response.read()
    finally:
        response.close()


# --- bodies --------------------------------------------------------------------------


def test_a_content_length_body_and_the_request_the_server_saw(pool: Pool) -> None:
    reply = answer(b'{"id": 1}', headers=(("Content-Type", "application/json"),))
    with Server(serving(reply)) as server:
        response = pool.request(
            "POST", server.url + "/v1/x?q=1", headers={"X-Key": "k"}, body=b'{"a": 1}'
        )
        assert (response.status, response.reason) == (200, "OK")
        assert response.headers["content-type"] == "application/json"
        assert response.read() == b'{"id": 1}'
        response.close()
    [seen] = server.requests
    assert (seen.method, seen.target, seen.body) == ("POST", "/v1/x?q=1", b'{"a": 1}')
    assert seen.headers["host"] == f"127.0.0.1:{server.port}"
    assert seen.headers["content-length"] == "8"
    assert seen.headers["user-agent"] == "pool-test/1"
    assert seen.headers["x-key"] == "k"


def test_a_chunked_body_sent_in_many_writes(pool: Pool) -> None:
    def handle(peer: Peer) -> None:
        peer.request()
        peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for n in range(5):
            peer.send(b"6\r\nevent%d\r\n" % n)
        peer.send(b"0\r\n\r\n")
        peer.drain()

    with Server(handle) as server:
        assert fetch(pool, server.url) == (200, b"".join(b"event%d" % n for n in range(5)))


def test_a_body_delimited_by_the_close(pool: Pool) -> None:
    def handle(peer: Peer) -> None:
        peer.request()
        peer.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil ")
        peer.send(b"the end")

    with Server(handle) as server:
        assert fetch(pool, server.url) == (200, b"until the end")


@pytest.mark.parametrize("one_write", [False, True], ids=["two-writes", "one-write"])
def test_an_interim_100_continue_is_skipped(pool: Pool, one_write: bool) -> None:
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    final = answer(b"created", status="201 Created")

    def handle(peer: Peer) -> None:
        peer.request()
        if one_write:
            peer.send(interim + final)
        else:
            peer.send(interim)
            time.sleep(0.05)
            peer.send(final)
        peer.drain()

    with Server(handle) as server:
        result = fetch(pool, server.url, "POST", body=b"x")
    assert result == (201, b"created")


@pytest.mark.parametrize("kind", ["gzip", "deflate"])
def test_a_compressed_body_comes_out_decoded(pool: Pool, kind: str) -> None:
    text = b"data: compressed anyway\n\n" * 200
    if kind == "gzip":
        reply = answer(gzip.compress(text), headers=(("Content-Encoding", "gzip"),))
    else:
        packed = zlib.compress(text)
        frames = b"%x\r\n%s\r\n0\r\n\r\n" % (len(packed), packed)
        coding = (("Transfer-Encoding", "chunked"), ("Content-Encoding", "deflate"))
        reply = answer(frames, headers=coding)
    with Server(serving(reply)) as server:
        assert fetch(pool, server.url) == (200, text)


def test_an_unasked_content_coding_is_refused(pool: Pool) -> None:
    reply = answer(b"\x1b\x00", headers=(("Content-Encoding", "br"),))
    with Server(serving(reply)) as server, pytest.raises(ConnectionLost, match="br"):
        pool.request("GET", server.url, headers={})


def test_a_head_larger_than_64_kib_is_refused(pool: Pool) -> None:
    def handle(peer: Peer) -> None:
        peer.request()
        peer.send(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (70 * 1024))
        peer.drain()

    with Server(handle) as server, pytest.raises(ConnectionLost, match="65536 bytes"):
        pool.request("GET", server.url, headers={})


@pytest.mark.parametrize(
    "head",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n",
    ],
    ids=["not-http", "conflicting-length", "superscript-length"],
)
def test_a_garbage_head_is_a_lost_connection(pool: Pool, head: bytes) -> None:
    """Whatever the server sends, the caller sees a TransportError, never a ValueError."""

    def handle(peer: Peer) -> None:
        peer.request()
        peer.send(head)
        peer.drain()

    with Server(handle) as server, pytest.raises(ConnectionLost):
        pool.request("GET", server.url, headers={})


# --- keep-alive ----------------------------------------------------------------------


@pytest.mark.parametrize("reply", [answer(b"ok"), chunked(b"o", b"k")], ids=["length", "chunked"])
def test_two_requests_in_a_row_share_one_connection(pool: Pool, reply: bytes) -> None:
    with Server(serving(reply)) as server:
        assert fetch(pool, server.url + "/1") == (200, b"ok")
        assert fetch(pool, server.url + "/2") == (200, b"ok")
    assert server.accepted == 1
    assert [(r.target, r.connection) for r in server.requests] == [("/1", 0), ("/2", 0)]


@pytest.mark.parametrize(
    "reply",
    [
        answer(b"ok", headers=(("Connection", "close"),)),
        answer(b"ok", version="1.0"),
        answer(
            b"2\r\nok\r\n0\r\n\r\n",
            headers=(("Transfer-Encoding", "chunked"), ("Content-Length", "7")),
        ),
    ],
    ids=["connection-close", "http-1.0", "te-and-cl"],
)
def test_a_connection_that_must_not_carry_more_is_not_reused(pool: Pool, reply: bytes) -> None:
    """The server would go on serving; the client must not ask it to."""
    with Server(serving(reply)) as server:
        assert fetch(pool, server.url) == (200, b"ok")
        assert fetch(pool, server.url) == (200, b"ok")
    assert server.accepted == 2
    assert [r.connection for r in server.requests] == [0, 1]


def test_a_body_abandoned_half_way_does_not_return_the_connection(pool: Pool) -> None:
    partial = answer(b"5\r\nfirst\r\n", headers=(("Transfer-Encoding", "chunked"),))
    with Server(serving(partial, answer(b"ok"))) as server:
        response = pool.request("GET", server.url, headers={})
        pieces = response.iter_bytes()
        assert next(pieces) == b"first"
        response.close()
        assert fetch(pool, server.url) == (200, b"ok")
    assert server.accepted == 2
    assert [r.connection for r in server.requests] == [0, 1]


def test_an_idle_connection_the_server_closed_is_replaced(pool: Pool) -> None:
    def handle(peer: Peer) -> None:
        while peer.request() is not None:
            peer.send(answer(b"ok"))
            if peer.index == 0:
                return  # closes the connection, which the client keeps idle

    with Server(handle) as server:
        assert fetch(pool, server.url + "/1") == (200, b"ok")
        server.wait_finished(1)
        assert fetch(pool, server.url + "/2") == (200, b"ok")
    assert server.accepted == 2
    assert [(r.target, r.connection) for r in server.requests] == [("/1", 0), ("/2", 1)]


def test_stray_bytes_on_an_idle_connection_make_it_unusable(pool: Pool) -> None:
    """Bytes no request asked for (after a body whose length was wrong, say) would be read
    as the next answer: such a connection is dropped before it is used."""

    def handle(peer: Peer) -> None:
        while peer.request() is not None:
            peer.send(answer(b"ok"))
            if peer.index == 0:
                time.sleep(0.05)
                peer.send(b"XX")

    with Server(handle) as server:
        assert fetch(pool, server.url + "/1") == (200, b"ok")
        time.sleep(0.2)
        assert fetch(pool, server.url + "/2") == (200, b"ok")
    assert [(r.target, r.connection) for r in server.requests] == [("/1", 0), ("/2", 1)]


def reset_close(peer: Peer) -> None:
    """Close with a reset (SO_LINGER 0), as a kernel does for a socket with unread data."""
    peer.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@pytest.mark.parametrize("method", ["POST", "GET"])
@pytest.mark.parametrize("ending", ["close", "reset"])
def test_a_request_sent_whole_on_a_reused_connection_is_never_sent_again(
    pool: Pool, method: str, ending: str
) -> None:
    """The server read the request on a kept-alive connection and then closed it without a
    byte of an answer. It may have begun to act on it (a model request is billed), so the
    request is not sent again, whatever the method: a lost connection."""

    def handle(peer: Peer) -> None:
        while peer.request() is not None:
            if peer.count == 2:
                if ending == "reset":
                    reset_close(peer)
                return
            peer.send(answer(b"ok"))

    with Server(handle) as server:
        assert fetch(pool, server.url + "/1") == (200, b"ok")
        with pytest.raises(ConnectionLost, match="not sent again"):
            fetch(pool, server.url + "/2", method, body=b"bill me once")
    assert server.accepted == 1
    assert [(r.target, r.connection) for r in server.requests] == [("/1", 0), ("/2", 0)]


def test_a_request_the_server_dropped_before_reading_it_is_sent_again(pool: Pool) -> None:
    """The keep-alive race: the server drops the idle connection as the next request
    arrives, before reading it. The upload then fails before its last byte, with no
    answer to read: the server cannot have acted on a request it never got whole, so it
    goes once more on a fresh connection, at once."""
    body = b"x" * (16 << 20)  # more than the socket buffers hold: sending must fail

    def handle(peer: Peer) -> None:
        if peer.index == 0:
            peer.request()
            peer.send(answer(b"ok"))
            while b"\r\n\r\n" not in peer.sock.recv(65536, socket.MSG_PEEK):
                time.sleep(0.01)  # the next request's head has come, its body has not
            reset_close(peer)
            return
        serving(answer(b"second try"))(peer)

    with Server(handle) as server:
        assert fetch(pool, server.url + "/1") == (200, b"ok")
        assert fetch(pool, server.url + "/2", "POST", body=body) == (200, b"second try")
    assert server.accepted == 2
    assert [(r.target, r.connection) for r in server.requests] == [("/1", 0), ("/2", 1)]
    assert server.requests[1].body == body


def test_a_fresh_connection_dropped_before_the_request_was_read_is_lost(pool: Pool) -> None:
    """Sending again is for a kept-alive connection that went stale; a new one that fails
    is the retry policy's business."""

    def handle(peer: Peer) -> None:
        while b"\r\n\r\n" not in peer.sock.recv(65536, socket.MSG_PEEK):
            time.sleep(0.01)
        reset_close(peer)

    with Server(handle) as server, pytest.raises(ConnectionLost, match="before the request"):
        fetch(pool, server.url, "POST", body=b"x" * (16 << 20))
    assert server.accepted == 1


def test_a_reused_connection_that_began_to_answer_is_not_retried(pool: Pool) -> None:
    """An interim answer shows the server has the request: sending it again could make it
    act twice, so a close after `100 Continue` is a lost connection, not a stale one."""

    def handle(peer: Peer) -> None:
        peer.request()
        peer.send(answer(b"ok"))
        peer.request()
        peer.send(b"HTTP/1.1 100 Continue\r\n\r\n")

    with Server(handle) as server:
        assert fetch(pool, server.url + "/1") == (200, b"ok")
        with pytest.raises(ConnectionLost, match="not sent again"):
            fetch(pool, server.url + "/2", "POST", body=b"x")
    assert server.accepted == 1


# --- failures ------------------------------------------------------------------------


def read_then_close(peer: Peer) -> None:
    peer.request()


def test_a_fresh_connection_closed_without_an_answer_is_lost(pool: Pool) -> None:
    with Server(read_then_close) as server, pytest.raises(ConnectionLost, match="an answer"):
        pool.request("GET", server.url, headers={})
    assert server.accepted == 1  # a fresh connection is not retried


def test_a_silent_server_times_the_read_out() -> None:
    impatient = Pool(connect=2.0, read=0.2, write=2.0, user_agent="pool-test/1")
    with Server(silent) as server:
        started = time.monotonic()
        with pytest.raises(ReadTimedOut):
            impatient.request("GET", server.url, headers={})
        assert time.monotonic() - started < 2.0


def test_a_refused_port_fails_to_connect(pool: Pool) -> None:
    with socket.socket() as bound:  # bound, not listening: the kernel refuses
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        with pytest.raises(
            ConnectRefused, match=f"^connection refused by 127.0.0.1:{port}$"
        ) as caught:
            pool.request("GET", f"http://127.0.0.1:{port}/", headers={})
        assert caught.value.loopback  # so the retry policy gives up sooner


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/", "http:///nohost", "http://h:99999/"])
def test_a_bad_url_is_refused_before_connecting(pool: Pool, url: str) -> None:
    with pytest.raises(BadURL):
        pool.request("GET", url, headers={})


def test_a_header_that_cannot_go_on_the_wire_is_refused(pool: Pool) -> None:
    with Server(silent) as server, pytest.raises(BadURL, match="cannot build"):
        pool.request("GET", server.url, headers={"X-A": "a\r\nX-Evil: 1"})
    assert server.accepted == 0


class Cancelled(Exception):
    pass


class Watch:
    """A SocketWatch that records what it is told. `refuse`: attach raises, as a cancelled
    request's does; `fired`: detach says the socket was shut down."""

    def __init__(self, *, refuse: bool = False, fired: bool = False) -> None:
        self.refuse = refuse
        self.fired = fired
        self.attached: list[socket.socket] = []
        self.connected_when_attached: list[bool] = []

    def attach(self, sock: socket.socket) -> None:
        if self.refuse:
            raise Cancelled
        self.attached.append(sock)
        try:
            sock.getpeername()
        except OSError:
            self.connected_when_attached.append(False)
        else:
            self.connected_when_attached.append(True)

    def detach(self, sock: socket.socket) -> bool:
        return not self.fired

    def check(self) -> None:
        if self.refuse:
            raise Cancelled

    def shut_down_later(self, delay: float) -> threading.Timer:
        """A cancel in `delay` seconds: from then on the watch refuses, as `_Watch` does."""

        def shut() -> None:
            self.refuse = True
            with contextlib.suppress(OSError):
                socket.socket.shutdown(self.attached[-1], socket.SHUT_RDWR)

        timer = threading.Timer(delay, shut)
        timer.start()
        return timer


def test_the_watch_learns_of_a_socket_before_its_connect_ends(pool: Pool) -> None:
    watch = Watch()
    with Server(serving(answer(b"ok"))) as server:
        response = pool.request("GET", server.url, headers={}, watch=watch)
        assert response.read() == b"ok"
        response.close()
    assert len(watch.attached) == 1
    assert watch.attached[0].gettimeout() == 2.0  # back to blocking with a timeout


def test_a_refusing_watch_stops_the_request_before_it_connects(pool: Pool) -> None:
    with Server(serving(answer(b"ok"))) as server:
        with pytest.raises(Cancelled):
            pool.request("POST", server.url, headers={}, body=b"x", watch=Watch(refuse=True))
        time.sleep(0.05)
    assert server.accepted == 0


def test_a_refusing_watch_stops_a_reused_connection_too(pool: Pool) -> None:
    with Server(serving(answer(b"ok"))) as server:
        assert fetch(pool, server.url) == (200, b"ok")
        with pytest.raises(Cancelled):
            pool.request("POST", server.url, headers={}, body=b"x", watch=Watch(refuse=True))
        assert fetch(pool, server.url) == (200, b"ok")  # the refused one was not kept
    assert len(server.requests) == 2
    assert server.accepted == 2


def test_a_socket_the_watch_shut_down_never_returns_to_the_pool(pool: Pool) -> None:
    """Another request, with another cancel token, would take it and die with it."""
    with Server(serving(answer(b"ok"))) as server:
        for _ in range(2):
            response = pool.request("GET", server.url, headers={}, watch=Watch(fired=True))
            assert response.read() == b"ok"
            response.close()
    assert server.accepted == 2


def test_shutting_the_socket_down_wakes_a_request_waiting_for_its_head(pool: Pool) -> None:
    watch = Watch()
    with Server(silent) as server:
        started = time.monotonic()
        timer = watch.shut_down_later(0.1)
        try:
            with pytest.raises(ConnectionLost):
                pool.request("GET", server.url, headers={}, watch=watch)
        finally:
            timer.join()
        assert time.monotonic() - started < 1.0


def test_a_cancel_while_waiting_on_a_reused_connection_opens_no_new_one(pool: Pool) -> None:
    """The request went out whole: the shut-down socket is a lost connection, not a stale
    one to try again."""

    def handle(peer: Peer) -> None:
        peer.request()
        peer.send(answer(b"ok"))
        peer.request()
        peer.drain()  # and never answers the second

    watch = Watch()
    with Server(handle) as server:
        assert fetch(pool, server.url) == (200, b"ok")
        timer = watch.shut_down_later(0.1)
        try:
            with pytest.raises(ConnectionLost):
                pool.request("GET", server.url, headers={}, watch=watch)
        finally:
            timer.join()
    assert server.accepted == 1


def test_a_cancel_during_an_upload_on_a_reused_connection_opens_no_new_one(pool: Pool) -> None:
    """An upload cut short looks like a stale connection, which may be tried again: not
    after a cancel (not even a name lookup, which nothing could wake)."""

    def handle(peer: Peer) -> None:
        peer.request()
        peer.send(answer(b"ok"))
        time.sleep(1.0)  # reads nothing more: the upload stalls in the socket buffers

    watch = Watch()
    with Server(handle) as server:
        assert fetch(pool, server.url) == (200, b"ok")
        timer = watch.shut_down_later(0.1)
        try:
            with pytest.raises(Cancelled):
                pool.request("POST", server.url, headers={}, body=b"x" * (16 << 20), watch=watch)
        finally:
            timer.join()
    assert server.accepted == 1


def test_shutting_the_socket_down_wakes_a_tls_handshake(pool: Pool, trust_ca: None) -> None:
    """The server takes the connection and never answers the ClientHello."""
    watch = Watch()

    def mute(peer: Peer) -> None:
        peer.drain()

    with Server(mute) as server:
        started = time.monotonic()
        timer = watch.shut_down_later(0.1)
        try:
            with pytest.raises(ConnectFailed):
                pool.request("GET", f"https://127.0.0.1:{server.port}/", headers={}, watch=watch)
        finally:
            timer.join()
        assert time.monotonic() - started < 1.0
    assert len(watch.attached) == 2  # the TCP socket, then the TLS one that took it over


def test_a_failed_handshake_leaves_no_socket_open(pool: Pool, server_tls: ssl.SSLContext) -> None:
    """wrap_socket takes the descriptor over: the TLS socket itself must be closed."""
    before = len(os.listdir("/proc/self/fd"))
    errors: list[TLSFailed] = []  # kept alive: a socket they held would stay open
    with Server(serving(answer(b"ok")), tls=server_tls) as server:
        for _ in range(3):
            with pytest.raises(TLSFailed) as caught:  # our CA is not trusted in this test
                pool.request("GET", server.url, headers={})
            errors.append(caught.value)
    assert len(os.listdir("/proc/self/fd")) == before


def test_connect_goes_on_to_the_next_address(pool: Pool, monkeypatch: pytest.MonkeyPatch) -> None:
    """As socket.create_connection does: an address family the host lacks, then a refused
    address, then the one that answers."""
    with Server(serving(answer(b"ok"))) as server:
        stream = socket.SOCK_STREAM
        addresses = [
            (255, stream, 0, "", ("127.0.0.1", server.port)),  # no such family
            (socket.AF_INET, stream, 6, "", ("127.0.0.1", 9)),  # nothing listens there
            (socket.AF_INET, stream, 6, "", ("127.0.0.1", server.port)),
        ]
        monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: addresses)
        assert fetch(pool, f"http://somewhere:{server.port}/") == (200, b"ok")


# --- uploads -------------------------------------------------------------------------


@pytest.mark.parametrize("interim", [b"", b"HTTP/1.1 100 Continue\r\n\r\n"])
def test_an_answer_before_the_upload_ended_is_read(pool: Pool, interim: bytes) -> None:
    """413 or 401 sent after the head (after an unasked 100 Continue, maybe), then a close
    with the body unread (a reset): the server's answer, not a lost connection."""
    refusal = interim + answer(b"too large", status="413 Payload Too Large")

    def handle(peer: Peer) -> None:
        while b"\r\n\r\n" not in peer.sock.recv(65536, socket.MSG_PEEK):
            time.sleep(0.01)
        peer.send(refusal)
        time.sleep(0.1)

    with Server(handle) as server:
        assert fetch(pool, server.url, "POST", body=b"x" * (16 << 20)) == (413, b"too large")


@pytest.mark.parametrize("tls", [False, True])
def test_the_write_timeout_is_per_send_not_for_the_whole_body(
    tls: bool, server_tls: ssl.SSLContext, trust_ca: None
) -> None:
    """A slow link that keeps taking bytes is not a silent server."""
    patient = Pool(connect=2.0, read=2.0, write=0.3, user_agent="pool-test/1")
    size = 8 << 20  # SSLSocket.send() writes all it is given under one deadline: slices

    def handle(peer: Peer) -> None:
        received = paced = 0
        while received < size:
            got = len(peer.sock.recv(128 * 1024))  # a TLS read gives one 16 KiB record
            received += got
            paced += got
            if paced >= 128 * 1024:  # ~12 MB/s: slower than the client can send
                paced = 0
                time.sleep(0.01)
        peer.send(answer(b"got it"))

    with Server(handle, tls=server_tls if tls else None) as server:
        started = time.monotonic()
        assert fetch(patient, server.url, "POST", body=b"x" * size) == (200, b"got it")
        took = time.monotonic() - started
    patient.close()
    assert took > 0.3  # longer than the write timeout, which the old sendall() broke


# --- the pool ------------------------------------------------------------------------


def test_a_closed_pool_stays_usable(pool: Pool) -> None:
    with Server(serving(answer(b"ok"))) as server:
        assert fetch(pool, server.url) == (200, b"ok")
        pool.close()
        assert fetch(pool, server.url) == (200, b"ok")
        assert fetch(pool, server.url) == (200, b"ok")
    assert server.accepted == 2  # one before the close, one kept alive after it


def test_keep_alive_holds_with_descriptors_past_1023(pool: Pool) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("cannot open 1,100 descriptors here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        with Server(serving(answer(b"ok"))) as server:
            for _ in range(3):
                assert fetch(pool, server.url) == (200, b"ok")
        assert server.accepted == 1
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# --- redirects -----------------------------------------------------------------------


def test_a_307_sends_the_post_again_to_the_new_path(pool: Pool) -> None:
    def handle(peer: Peer) -> None:
        while (request := peer.request()) is not None:
            if request.target == "/old":
                moved = (("Location", "/new?x=1"),)
                peer.send(answer(b"moved", status="307 Temporary Redirect", headers=moved))
            else:
                peer.send(answer(b"done"))

    with Server(handle) as server:
        result = fetch(pool, server.url + "/old", "POST", body=b'{"m": 1}')
    assert result == (200, b"done")
    assert [(r.method, r.target, r.body, r.connection) for r in server.requests] == [
        ("POST", "/old", b'{"m": 1}', 0),
        ("POST", "/new?x=1", b'{"m": 1}', 0),
    ]


@pytest.mark.parametrize(
    ("method", "status", "followed"),
    [("GET", "302 Found", True), ("GET", "301 Moved", True), ("POST", "302 Found", False)],
)
def test_301_to_303_are_followed_for_get_only(
    pool: Pool, method: str, status: str, followed: bool
) -> None:
    def handle(peer: Peer) -> None:
        while (request := peer.request()) is not None:
            if request.target == "/old":
                peer.send(answer(b"", status=status, headers=(("Location", "/new"),)))
            else:
                peer.send(answer(b"new"))

    with Server(handle) as server:
        code, _ = fetch(pool, server.url + "/old", method)
    assert (code == 200) is followed
    assert [r.target for r in server.requests] == (["/old", "/new"] if followed else ["/old"])


def test_a_redirect_loop_ends(pool: Pool) -> None:
    loop = answer(b"", status="308 Permanent Redirect", headers=(("Location", "/again"),))
    with Server(serving(loop)) as server, pytest.raises(BadURL, match="redirects"):
        pool.request("POST", server.url, headers={}, body=b"x")
    assert len(server.requests) == 6


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_redirect_elsewhere_comes_back_unfollowed(pool: Pool, host: str) -> None:
    """The request carries the key and the conversation: only the configured origin gets
    them. Another port is another program (on 127.0.0.1, any local user's), and
    `localhost` is another host, as far as a URL says."""
    with Server(serving(answer(b"there"))) as there:
        moved = (("Location", f"http://{host}:{there.port}/final"),)
        with Server(serving(answer(b"", status="307 Temporary Redirect", headers=moved))) as here:
            sent = {"Authorization": "Bearer sk-secret"}
            response = pool.request("POST", here.url + "/start", headers=sent, body=b"b")
            assert response.status == 307
            response.close()
    assert there.requests == []


@pytest.mark.parametrize(
    ("method", "url", "status", "location", "followed"),
    [
        ("POST", "http://h/v1/a", 307, "/v1/b?x=1", "http://h/v1/b?x=1"),
        ("POST", "https://h/v1/a", 308, "https://H/v1/b", "https://H/v1/b"),
        ("GET", "http://h/a", 302, "http://h/b", "http://h/b"),
        ("POST", "http://h/a", 302, "http://h/b", None),
        ("POST", "http://h/a", 307, "https://h/a", "https://h/a"),
        ("POST", "http://h:8080/a", 307, "https://h:8443/a", None),
        ("POST", "http://h/a", 307, "http://h:8080/a", None),
        ("POST", "https://h/a", 307, "http://h/a", None),
        ("POST", "HTTPS://h/a", 307, "http://h/a", None),
        ("POST", "http://h/a", 307, "http://other/a", None),
        ("POST", "http://h/a", 307, "//other/a", None),
        ("POST", "http://h/a", 307, "ftp://h/a", None),
        ("POST", "http://h/a", 307, "http://[::1/a", None),
        ("POST", "http://h/a", 307, None, None),
        ("POST", "http://h/a", 200, "/b", None),
    ],
)
def test_which_redirects_are_followed(
    method: str, url: str, status: int, location: str | None, followed: str | None
) -> None:
    """The same origin, or the same host moving from http on 80 to https on 443."""
    assert pool_module._redirect(method, url, status, location) == followed


@pytest.mark.parametrize("scheme", ["https", "HTTPS"])
def test_a_redirect_from_https_to_http_is_not_followed(
    pool: Pool, server_tls: ssl.SSLContext, trust_ca: None, scheme: str
) -> None:
    with Server(serving(answer(b"plain"))) as plain:
        moved = (("Location", f"http://127.0.0.1:{plain.port}/plain"),)
        reply = answer(b"", status="307 Temporary Redirect", headers=moved)
        with Server(serving(reply), tls=server_tls) as server:
            url = f"{scheme}://127.0.0.1:{server.port}/v1"
            response = pool.request("POST", url, headers={"Authorization": "x"}, body=b"b")
            assert response.status == 307
            response.close()
    assert plain.requests == []


# --- TLS -----------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_request_over_tls(
    pool: Pool, server_tls: ssl.SSLContext, trust_ca: None, host: str
) -> None:
    with Server(serving(answer(b"secure")), tls=server_tls) as server:
        url = f"https://{host}:{server.port}/v1/x"
        assert fetch(pool, url) == (200, b"secure")
        assert fetch(pool, url) == (200, b"secure")
    assert server.accepted == 1
    assert server.requests[0].headers["host"] == f"{host}:{server.port}"


def test_an_untrusted_certificate_fails_tls(
    pool: Pool, server_tls: ssl.SSLContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with (
        Server(serving(answer()), tls=server_tls) as server,
        pytest.raises(TLSFailed, match="not trusted"),
    ):
        pool.request("GET", server.url, headers={})
    assert server.requests == []


@pytest.mark.parametrize(
    ("store", "trusted"),
    [(None, True), ("system", True), ("certifi", False)],
    ids=["default", "system", "certifi"],
)
def test_which_certificates_a_server_must_chain_to(
    server_tls: ssl.SSLContext, trust_ca: None, store: CA | None, trusted: bool
) -> None:
    """Our CA is in SSL_CERT_FILE only. The default honours it, as does the OS store
    (OpenSSL reads SSL_CERT_FILE for its default paths); certifi's bundle lacks it."""
    pool = Pool(connect=2.0, read=2.0, write=2.0, user_agent="t", trust=TrustStore(store))
    with Server(serving(answer(b"secure")), tls=server_tls) as server:
        if trusted:
            assert fetch(pool, server.url) == (200, b"secure")
        else:
            with pytest.raises(TLSFailed, match="not trusted"):
                fetch(pool, server.url)
    pool.close()


def test_the_system_store_is_the_os_one_and_certifi_its_bundle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import certifi

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    system = TrustStore("system").context()
    assert system.cert_store_stats() == ssl.create_default_context().cert_store_stats()
    bundle = ssl.create_default_context(cafile=certifi.where()).cert_store_stats()
    assert TrustStore("certifi").context().cert_store_stats() == bundle
    assert TrustStore().context().cert_store_stats() == bundle


def test_one_store_builds_one_context_for_every_pool() -> None:
    """Building one costs ~48 ms: `doctor` checks its providers with one store."""
    trust = TrustStore()
    pools = [Pool(connect=1, read=1, write=1, user_agent="t", trust=trust) for _ in range(3)]
    assert len({id(pool.trust.context()) for pool in pools}) == 1


def test_shutting_the_socket_down_wakes_a_tls_body_read(
    pool: Pool, server_tls: ssl.SSLContext, trust_ca: None
) -> None:
    def handle(peer: Peer) -> None:
        peer.request()
        peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        peer.drain()  # and then nothing

    watch = Watch()
    with Server(handle, tls=server_tls) as server:
        response = pool.request("GET", server.url, headers={}, watch=watch)
        pieces = response.iter_bytes()
        assert next(pieces) == b"hello"
        started = time.monotonic()
        timer = watch.shut_down_later(0.1)
        try:
            with contextlib.suppress(ConnectionLost):
                assert list(pieces) == []
        finally:
            timer.join()
            response.close()
        assert time.monotonic() - started < 1.0


# --- proxies -------------------------------------------------------------------------


def relay(client: socket.socket, upstream: socket.socket) -> None:
    """Bytes both ways until either side closes."""
    ends = [client, upstream]
    while True:
        readable, _, _ = select.select(ends, [], [], 5.0)
        if not readable:
            return
        for end in readable:
            data = end.recv(65536)
            if not data:
                return
            (upstream if end is client else client).sendall(data)


def tunnelling(peer: Peer) -> None:
    """A CONNECT proxy: it records the request (on the server) and relays."""
    request = peer.request()
    if request is None:
        return
    host, _, port = request.target.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=2.0) as upstream:
        peer.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
        relay(peer.sock, upstream)


def test_https_through_a_connect_proxy_with_credentials(
    pool: Pool, server_tls: ssl.SSLContext, trust_ca: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        Server(serving(answer(b"tunnelled")), tls=server_tls) as origin,
        Server(tunnelling) as proxy,
    ):
        monkeypatch.setenv("https_proxy", f"http://user:pa%20ss@127.0.0.1:{proxy.port}")
        url = f"https://localhost:{origin.port}/v1/messages"
        assert fetch(pool, url, "POST", body=b"{}") == (200, b"tunnelled")
    [connect] = proxy.requests
    assert (connect.method, connect.target) == ("CONNECT", f"localhost:{origin.port}")
    scheme, _, token = connect.headers["proxy-authorization"].partition(" ")
    assert scheme == "Basic"
    assert base64.b64decode(token) == b"user:pa ss"
    [seen] = origin.requests
    assert (seen.method, seen.target) == ("POST", "/v1/messages")
    assert "proxy-authorization" not in seen.headers


def test_a_proxy_refusing_the_tunnel_fails_to_connect(
    pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusal = answer(b"", status="407 Proxy Authentication Required")
    with Server(serving(refusal)) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{proxy.port}")
        with pytest.raises(ConnectFailed, match="407"):
            pool.request("GET", "https://api.example.invalid/v1/models", headers={})
    assert [r.method for r in proxy.requests] == ["CONNECT"]


@pytest.mark.parametrize("variable", ["http_proxy", "HTTP_PROXY", "all_proxy"])
def test_http_through_a_proxy_uses_the_absolute_form(
    pool: Pool, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    with Server(serving(answer(b"proxied"))) as proxy:
        monkeypatch.setenv(variable, f"http://u:p@127.0.0.1:{proxy.port}")
        url = "http://api.example.invalid/v1/x?q=1"
        assert fetch(pool, url) == (200, b"proxied")
        assert fetch(pool, url) == (200, b"proxied")
    assert proxy.accepted == 1
    first = proxy.requests[0]
    assert first.target == url
    assert first.headers["host"] == "api.example.invalid"
    assert first.headers["proxy-authorization"] == "Basic " + base64.b64encode(b"u:p").decode()


@pytest.mark.parametrize("no_proxy", ["*", ".localhost", "example.com, LOCALHOST"])
def test_no_proxy_goes_direct(pool: Pool, monkeypatch: pytest.MonkeyPatch, no_proxy: str) -> None:
    with socket.socket() as dead:  # a proxy that would refuse every connection
        dead.bind(("127.0.0.1", 0))
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{dead.getsockname()[1]}")
        with Server(serving(answer(b"direct"))) as server:
            url = f"http://localhost:{server.port}/"
            monkeypatch.setenv("NO_PROXY", "example.com")
            with pytest.raises(ConnectFailed):  # the proxy is in force...
                fetch(pool, url)
            monkeypatch.setenv("no_proxy", no_proxy)  # ...except where no_proxy says
            assert fetch(pool, url) == (200, b"direct")


@pytest.mark.parametrize(
    ("host", "bypassed"),
    [
        ("example.com", True),
        ("api.example.com", True),
        ("a.b.example.com", True),
        ("badexample.com", False),
        ("example.com.evil", False),
        ("other.org", False),
    ],
)
def test_a_leading_dot_in_no_proxy_covers_the_domain_and_its_subdomains(
    monkeypatch: pytest.MonkeyPatch, host: str, bypassed: bool
) -> None:
    monkeypatch.setenv("https_proxy", "http://proxy.internal:3128")
    monkeypatch.setenv("no_proxy", "localhost, .Example.COM")
    proxy = pool_module._proxy_for("https", host, 443)
    assert (proxy is None) is bypassed


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "bypassed"),
    [
        ("10.0.0.0/8", "10.1.2.3", 443, True),
        ("10.0.0.0/8", "11.1.2.3", 443, False),
        ("10.0.0.0/8", "ten.example", 443, False),
        ("192.168.1.7/24", "192.168.1.200", 80, True),  # host bits set: still the range
        ("fd00::/8", "fd12::1", 443, True),
        ("fd00::/8", "fe80::1", 443, False),
        ("::1", "::1", 8080, True),
        ("[::1]", "::1", 8080, True),
        ("[::1]:8080", "::1", 8080, True),
        ("[::1]:8080", "::1", 8081, False),
        ("localhost:8080", "localhost", 8080, True),
        ("localhost:8080", "localhost", 9000, False),
        ("127.0.0.1:8080", "127.0.0.1", 8080, True),
        ("*.example.com", "api.example.com", 443, True),
        ("10.0.0.0/33", "10.0.0.1", 443, False),  # not a range: matches nothing
        (" , ,", "anything", 443, False),
    ],
)
def test_no_proxy_takes_ranges_and_ports(
    monkeypatch: pytest.MonkeyPatch, no_proxy: str, host: str, port: int, bypassed: bool
) -> None:
    monkeypatch.setenv("https_proxy", "http://proxy.internal:3128")
    monkeypatch.setenv("no_proxy", no_proxy)
    assert (pool_module._proxy_for("https", host, port) is None) is bypassed


def test_a_range_in_no_proxy_goes_direct(pool: Pool, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as dead:  # a proxy that would refuse every connection
        dead.bind(("127.0.0.1", 0))
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{dead.getsockname()[1]}")
        monkeypatch.setenv("no_proxy", "example.com, 127.0.0.0/8")
        with Server(serving(answer(b"direct"))) as server:
            assert fetch(pool, server.url) == (200, b"direct")


def test_only_http_proxies_are_supported(pool: Pool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "socks5://127.0.0.1:1080")
    with pytest.raises(BadURL, match="only http://"):
        pool.request("GET", "https://api.example.invalid/", headers={})


def test_every_failure_is_a_transport_error() -> None:
    kinds = (BadURL, ConnectFailed, ConnectionLost, ReadTimedOut, TLSFailed)
    assert all(issubclass(kind, TransportError) for kind in kinds)
