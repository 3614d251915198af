"""A raw HTTP/1.1 server on 127.0.0.1 for transport tests: each connection runs a small
handler on its own thread, which reads requests and writes whatever bytes the test wants
(malformed, slow, early, cut off). Leaving the `with` block shuts every socket down and
joins every thread."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes
    connection: int
    """Which accepted connection (0, 1, …) carried it."""


class Peer:
    """One accepted connection, as a handler sees it."""

    def __init__(self, sock: socket.socket, index: int, server: Server) -> None:
        self.sock = sock
        self.index = index
        self._server = server
        self._buffer = b""
        self.count = 0
        """Requests read so far."""

    def request(self) -> Request | None:
        """The next request on this connection (recorded on the server), None at its end."""
        while (end := self._buffer.find(b"\r\n\r\n")) < 0:
            if not self._fill():
                return None
        lines = self._buffer[:end].decode("latin-1").split("\r\n")
        self._buffer = self._buffer[end + 4 :]
        method, target, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self._buffer) < length:
            if not self._fill():
                return None
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        request = Request(method, target, headers, body, self.index)
        self._server.requests.append(request)
        self.count += 1
        return request

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def drain(self) -> bytes:
        """Everything the client sends until it closes."""
        while self._fill():
            pass
        data, self._buffer = self._buffer, b""
        return data

    def _fill(self) -> bool:
        data = self.sock.recv(65536)
        self._buffer += data
        return bool(data)


Handler = Callable[[Peer], None]


class Server:
    """A TCP (or TLS) server on 127.0.0.1 running `handler` on a thread per connection;
    the connection is closed when the handler returns."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self._handler = handler
        self._tls = tls
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.requests: list[Request] = []
        self.accepted = 0
        self._finished = 0
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, name="test-server-accept")

    @property
    def url(self) -> str:
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}"

    def __enter__(self) -> Server:
        self._acceptor.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._acceptor.join()
        with self._changed:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join()
        for sock in sockets:
            sock.close()
        self._listener.close()

    def wait_finished(self, count: int) -> None:
        """Until `count` connections have been handled and closed."""
        with self._changed:
            assert self._changed.wait_for(lambda: self._finished >= count, timeout=2.0)

    def _accept(self) -> None:
        self._listener.settimeout(0.01)
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            sock.settimeout(5.0)  # a safety net: no handler waits longer
            with self._changed:
                index = self.accepted
                self.accepted += 1
                self._sockets.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock, index), name="test-peer")
            self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket, index: int) -> None:
        try:
            with contextlib.suppress(OSError):  # the client went away, as clients do
                if self._tls is not None:
                    sock = self._tls.wrap_socket(
                        sock, server_side=True, do_handshake_on_connect=False
                    )
                    with self._changed:
                        self._sockets.append(sock)
                    sock.do_handshake()
                self._handler(Peer(sock, index, self))
        finally:
            sock.close()
            with self._changed:
                self._finished += 1
                self._changed.notify_all()


def answer(
    body: bytes = b"ok",
    *,
    status: str = "200 OK",
    headers: tuple[tuple[str, str], ...] = (),
    version: str = "1.1",
) -> bytes:
    """A response with a Content-Length (unless `headers` frame it otherwise)."""
    fields = list(headers)
    framed = {name.lower() for name, _ in fields} & {"content-length", "transfer-encoding"}
    if not framed:
        fields.append(("Content-Length", str(len(body))))
    head = "".join(f"{name}: {value}\r\n" for name, value in fields)
    return f"HTTP/{version} {status}\r\n{head}\r\n".encode("latin-1") + body


def chunked(*pieces: bytes) -> bytes:
    frames = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    return answer(frames, headers=(("Transfer-Encoding", "chunked"),))


def serving(*answers: bytes) -> Handler:
    """Answer every request of every connection with the next answer; the last repeats."""
    queue = deque(answers)
    lock = threading.Lock()

    def handle(peer: Peer) -> None:
        while peer.request() is not None:
            with lock:
                reply = queue.popleft() if len(queue) > 1 else queue[0]
            peer.send(reply)

    return handle


def silent(peer: Peer) -> None:
    """Read the request, never answer."""
    peer.request()
    peer.drain()
