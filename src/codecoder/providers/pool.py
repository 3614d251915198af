"""Connections for the provider path: TCP (TLS for https), environment proxies, keep-alive
reuse, redirects, and a socket handed to whoever must be able to wake a blocked read.

One `Pool` per endpoint, shared by the threads that stream through it (sub-agents do so
at once). A request takes an idle connection of its origin or opens one, writes the whole
request, reads the head; the `Response` gives the body read by read and puts the
connection back once the body has ended cleanly and both sides allow keep-alive.

A kept-alive connection may have been closed by the server meanwhile. If writing to it
fails, or it ends before a byte of the answer, the request goes once more on a fresh
connection at once (the server cannot have acted on a request it never answered, the
same rule browsers use); the retry policy with its backoff is for real failures only.

Failures are `TransportError`s named for what the user can do about them; `errors`
turns them into `ProviderError`s.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import threading
import time
import zlib  # loaded at start-up anyway (shutil imports it)
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote, urljoin, urlsplit

from codecoder.providers.http1 import (
    HEAD_LIMIT,
    Body,
    Head,
    InvalidRequest,
    ProtocolError,
    body_for,
    find_head_end,
    parse_head,
    request_head,
)

if TYPE_CHECKING:
    import ssl

_READ_SIZE = 64 * 1024
_SEND_SLICE = 64 * 1024
_MAX_REDIRECTS = 5
_IDLE_EXPIRY = 5.0
_MAX_IDLE = 8
_DECODED_PIECE = 256 * 1024
MAX_DECODED = 128 * 1024 * 1024
"""The most a compressed body may decode to: a long reply's event stream is a few tens
of MB, a decompression bomb (1 KB that inflates to 1 MB) is refused past this."""


class TransportError(Exception):
    """The request did not get through, or its answer did not come back whole."""


class ConnectFailed(TransportError):
    pass


class ConnectRefused(ConnectFailed):
    """Nothing listens there. `loopback`: every address tried was this machine's own, where
    a server that is not running now will not be in a few seconds either."""

    def __init__(self, message: str, *, loopback: bool) -> None:
        super().__init__(message)
        self.loopback = loopback


class ConnectTimedOut(TransportError):
    pass


class ReadTimedOut(TransportError):
    pass


class ConnectionLost(TransportError):
    """The connection closed or broke, or the server's bytes were not valid HTTP."""


class TLSFailed(TransportError):
    """The TLS handshake failed, e.g. a certificate that does not verify."""


class BadURL(TransportError):
    pass


class BodyTooLarge(TransportError):
    """A compressed body decoded to more than `MAX_DECODED` bytes."""


Origin = tuple[str, str, int]
"""(scheme, host, port)."""


class SocketWatch(Protocol):
    """Whoever must be able to wake a blocked socket of a request (its cancel)."""

    def attach(self, sock: socket.socket) -> None:
        """`sock` is about to connect, shake hands, send or read for the request; may
        raise to stop it (a cancel that came first)."""
        ...

    def detach(self, sock: socket.socket) -> bool:
        """The request is done with `sock`; False if the watch has already acted on it
        (the socket is shut down and must not go back to the pool)."""
        ...

    def check(self) -> None:
        """Raises if the request is to stop: before work no socket can be woken from
        (name resolution, a new connection)."""
        ...


class _Connection:
    __slots__ = ("idle_since", "key", "sock")

    def __init__(self, sock: socket.socket, key: Origin) -> None:
        self.sock = sock
        self.key = key
        self.idle_since = 0.0

    def close(self) -> None:
        self.sock.close()

    def looks_alive(self) -> bool:
        """An idle connection with something to read has been closed by the server (or
        sent bytes no request asked for): either way it cannot be used."""
        if time.monotonic() - self.idle_since > _IDLE_EXPIRY:
            return False
        poller = select.poll()  # not select(): it refuses descriptors past 1023
        poller.register(self.sock, select.POLLIN)
        return not poller.poll(0)


class Response:
    """The head of an answer and its body, read as the caller asks. Not thread-safe: a
    blocked read is woken through the request's watch, which holds its socket."""

    def __init__(
        self,
        pool: Pool,
        connection: _Connection,
        *,
        head: Head,
        body: Body,
        first: bytes,
        watch: SocketWatch | None,
        reusable: bool = True,
    ) -> None:
        self._pool = pool
        self._watch = watch
        self._connection: _Connection | None = connection
        self.status = head.status
        self.reason = head.reason
        self.headers = head.headers
        self._keep_alive = head.keep_alive and reusable
        self._body = body
        self._first = first
        self._decoder = _decoder(head.headers.get("content-encoding", ""))

    def iter_bytes(self) -> Iterator[bytes]:
        """The body, one piece per socket read that brought any of it."""
        connection = self._connection
        if connection is None:
            return
        body = self._body
        data, self._first = self._first, b""
        connection.sock.settimeout(self._pool.read_timeout)
        while True:
            if data:
                try:
                    piece = body.feed(data)
                except ProtocolError as exc:
                    raise ConnectionLost(str(exc)) from exc
                if piece and self._decoder is not None:
                    yield from self._decoder.decompress(piece)
                elif piece:
                    yield piece
            if body.done:
                break
            data = _recv(connection.sock)
            if not data:
                try:
                    body.end_of_stream()
                except ProtocolError as exc:
                    raise ConnectionLost(str(exc)) from exc
                break
        if self._decoder is not None and (tail := self._decoder.flush()):
            yield tail
        self._finish(body)

    def read(self, limit: int | None = None) -> bytes:
        """The body, or its first `limit` bytes or a little more."""
        parts: list[bytes] = []
        size = 0
        for part in self.iter_bytes():
            parts.append(part)
            size += len(part)
            if limit is not None and size >= limit:
                break
        return b"".join(parts)

    def close(self) -> None:
        """Before the body ended, the connection is closed, not reused."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def _finish(self, body: Body) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        released = self._watch is None or self._watch.detach(connection.sock)
        if released and body.reusable and not body.extra and self._keep_alive:
            self._pool.release(connection)
        else:
            connection.close()


class Pool:
    """Keep-alive connections to the origins one endpoint needs (a redirect may add one);
    thread-safe."""

    def __init__(self, *, connect: float, read: float, write: float, user_agent: str) -> None:
        self.connect_timeout = connect
        self.read_timeout = read
        self.write_timeout = write
        self.user_agent = user_agent
        self._lock = threading.Lock()
        self._idle: list[_Connection] = []

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes = b"",
        watch: SocketWatch | None = None,
    ) -> Response:
        """Send and read the answer's head. Redirects are followed on the same host only
        (307 and 308 always, 301, 302 and 303 for a GET; http may become https, never the
        reverse): a request carries keys and the conversation, which another host gets
        only if the user's configuration names it. Other redirects come back as they are.
        `watch` is told of every socket the request is about to use."""
        for _ in range(_MAX_REDIRECTS + 1):
            response = self._send(method, url, headers=headers, body=body, watch=watch)
            target = _redirect(method, url, response.status, response.headers.get("location"))
            if target is None:
                return response
            try:
                response.read(HEAD_LIMIT)  # a short note at most; frees the connection
            finally:
                response.close()
            url = target
        raise BadURL(f"more than {_MAX_REDIRECTS} redirects from {url}")

    def release(self, connection: _Connection) -> None:
        connection.idle_since = time.monotonic()
        with self._lock:
            if len(self._idle) < _MAX_IDLE:
                self._idle.append(connection)
                return
        connection.close()

    def close(self) -> None:
        """Closes the idle connections; the pool stays usable."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    # --- one request on one connection ------------------------------------------------

    def _send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        watch: SocketWatch | None,
    ) -> Response:
        scheme, host, port, target = _split(url)
        proxy = _proxy_for(scheme, host)
        key: Origin = (scheme, host, port)
        fields = dict(headers)
        if proxy is not None and scheme == "http":  # an absolute target, through the proxy
            target = f"http://{_authority(host, port, 'http')}{target}"
            key = ("http", proxy.host, proxy.port)
            if proxy.authorization:
                fields["Proxy-Authorization"] = proxy.authorization
        given = {name.lower() for name in fields}
        if "user-agent" not in given:
            fields["User-Agent"] = self.user_agent
        if "accept-encoding" not in given:
            fields["Accept-Encoding"] = "identity"
        if body or method in ("POST", "PUT", "PATCH"):
            fields["Content-Length"] = str(len(body))
        try:
            head = request_head(method, target, _authority(host, port, scheme), fields)
        except InvalidRequest as exc:
            raise BadURL(f"cannot build the request to {url}: {exc}") from exc
        message = head + body if len(body) < _READ_SIZE else (head, body)  # no big copy
        fresh = False
        while True:
            connection, reused = self._connection(key, host, port, proxy, fresh=fresh, watch=watch)
            try:
                return self._exchange(connection, method, message, watch)
            except _Stale as stale:
                connection.close()
                if not reused:
                    cause = stale.__cause__
                    what = "the server closed the connection without an answer"
                    raise ConnectionLost(f"{what} ({cause})" if cause else what) from cause
                fresh = True  # the others idle as long: do not try them one by one
                if watch is not None:
                    watch.check()  # a cancel looks stale too: no new connection for it
            except BaseException:
                connection.close()
                raise

    def _exchange(
        self,
        connection: _Connection,
        method: str,
        message: bytes | tuple[bytes, bytes],
        watch: SocketWatch | None,
    ) -> Response:
        sock = connection.sock
        try:
            sock.settimeout(self.write_timeout)
            for part in (message,) if isinstance(message, bytes) else message:
                _send_all(sock, part)
        except TimeoutError as exc:
            raise ReadTimedOut("timed out sending the request (the server reads no more)") from exc
        except OSError as exc:
            # A server may answer before it has read everything (413, 401) and close:
            # its answer is worth more than our write error. None: a stale connection.
            return self._early_answer(connection, method, watch, exc)
        sock.settimeout(self.read_timeout)
        head, body, rest = _read_head(sock, method)
        return Response(self, connection, head=head, body=body, first=rest, watch=watch)

    def _early_answer(
        self, connection: _Connection, method: str, watch: SocketWatch | None, error: OSError
    ) -> Response:
        connection.sock.settimeout(min(self.read_timeout, 1.0))
        try:
            head, body, rest = _read_head(connection.sock, method)
        except (TransportError, _Stale):
            raise _Stale from error  # nothing readable came back: as if stale
        return Response(
            self, connection, head=head, body=body, first=rest, watch=watch, reusable=False
        )

    def _connection(
        self,
        key: Origin,
        host: str,
        port: int,
        proxy: _Proxy | None,
        *,
        fresh: bool,
        watch: SocketWatch | None,
    ) -> tuple[_Connection, bool]:
        """An idle connection to `key` that still looks alive, unless `fresh`; else a new
        one. With whether it was reused. `watch` learns of its socket before any use."""
        connection = None if fresh else self._take_idle(key)
        if connection is not None:
            if connection.looks_alive():
                if watch is not None:
                    try:
                        watch.attach(connection.sock)
                    except BaseException:
                        connection.close()
                        raise
                return connection, True
            connection.close()
        return _Connection(self._open(key[0], host, port, proxy, watch), key), False

    def _take_idle(self, key: Origin) -> _Connection | None:
        with self._lock:
            for index in range(len(self._idle) - 1, -1, -1):
                if self._idle[index].key == key:
                    return self._idle.pop(index)
        return None

    def _open(
        self, scheme: str, host: str, port: int, proxy: _Proxy | None, watch: SocketWatch | None
    ) -> socket.socket:
        where = (proxy.host, proxy.port) if proxy is not None else (host, port)
        sock = _connect(*where, self.connect_timeout, watch)
        try:
            if scheme == "https":
                if proxy is not None:
                    _tunnel(sock, host, port, proxy, self.connect_timeout)
                sock = _wrap_tls(sock, host, self.connect_timeout, watch)
        except BaseException:
            sock.close()
            raise
        return sock


class _Stale(Exception):
    """A connection that failed before its answer began: try a fresh one."""


def _read_head(sock: socket.socket, method: str) -> tuple[Head, Body, bytes]:
    """The head of an answer (interim 1xx heads skipped), its body's decoder and the body
    bytes read with it."""
    buffer = b""
    answered = False
    while True:
        end = find_head_end(buffer)
        if end < 0:
            if len(buffer) > HEAD_LIMIT:
                raise ConnectionLost("the answer's head is larger than 64 KiB")
            data = _recv(sock, first=not answered)
            if not data:
                raise ConnectionLost("the server closed the connection mid-answer")
            buffer += data
            answered = True
            continue
        try:
            head = parse_head(buffer[:end])
            if 100 <= head.status < 200:
                buffer = buffer[end:]
                continue
            return head, body_for(head, method), buffer[end:]
        except ProtocolError as exc:
            raise ConnectionLost(str(exc)) from exc


def _recv(sock: socket.socket, *, first: bool = False) -> bytes:
    """One read; b"" at the end of the stream. `first`: the read that should bring the
    first byte of an answer, where a reset or a close means the server dropped a kept-alive
    connection as the request came (`_Stale`)."""
    try:
        data = sock.recv(_READ_SIZE)
    except TimeoutError as exc:
        raise ReadTimedOut("timed out waiting for the server") from exc
    except OSError as exc:
        if first:
            raise _Stale from exc
        raise ConnectionLost(f"{type(exc).__name__}: {exc}") from exc
    if first and not data:
        raise _Stale
    return data


def _send_all(sock: socket.socket, data: bytes) -> None:
    """sendall() whose timeout is per send, not for the whole body: a slow link that keeps
    taking bytes is not a silent server."""
    view = memoryview(data)
    while view:  # slices: SSLSocket.send writes all it is given under one deadline
        view = view[sock.send(view[:_SEND_SLICE]) :]


def _connect(host: str, port: int, timeout: float, watch: SocketWatch | None) -> socket.socket:
    """A TCP connection, trying each address in turn, as socket.create_connection does.
    The watch learns of each socket once its connect has begun, when a shutdown aborts
    it. Name resolution cannot be woken: it is bounded by the resolver's own timeout."""
    if watch is not None:
        watch.check()
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ConnectFailed(f"{host}:{port}: {exc.strerror or exc}") from exc
    error: OSError | None = None
    for family, kind, proto, _, address in addresses:
        try:
            sock = socket.socket(family, kind, proto)
        except OSError as exc:  # no IPv6 here, or no descriptor left: the next address
            error = exc
            continue
        try:
            _connect_one(sock, address, timeout, watch)
        except OSError as exc:  # timeouts included: the next address may answer
            sock.close()
            error = exc
            continue
        except BaseException:
            sock.close()
            raise
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    if isinstance(error, TimeoutError):
        raise ConnectTimedOut(f"timed out connecting to {host}:{port}") from error
    if isinstance(error, ConnectionRefusedError):
        loopback = all(_is_loopback(str(info[4][0])) for info in addresses)
        refused = f"connection refused by {_authority(host, port, '')}"
        raise ConnectRefused(refused, loopback=loopback) from error
    detail = (error.strerror or str(error)) if error is not None else "no address"
    raise ConnectFailed(f"{host}:{port}: {detail}") from error


def _is_loopback(address: str) -> bool:
    import ipaddress  # only once a connection was refused

    try:
        return ipaddress.ip_address(address.partition("%")[0]).is_loopback
    except ValueError:
        return False


def _connect_one(
    sock: socket.socket, address: Any, timeout: float, watch: SocketWatch | None
) -> None:
    """Begin the connect, tell the watch, then wait for it: a shutdown before the connect
    began would not stop it."""
    sock.setblocking(False)
    code = sock.connect_ex(address)
    if code not in (0, errno.EINPROGRESS):
        raise OSError(code, os.strerror(code))
    if watch is not None:
        watch.attach(sock)
    if code:
        poller = select.poll()
        poller.register(sock, select.POLLOUT)
        if not poller.poll(timeout * 1000):
            raise TimeoutError(f"connect timed out after {timeout} s")
        code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            raise OSError(code, os.strerror(code))
    sock.settimeout(timeout)


# --- TLS -----------------------------------------------------------------------------

_tls_lock = threading.Lock()
_tls_context: ssl.SSLContext | None = None


def tls_context() -> ssl.SSLContext:
    """Built once, on the first https request (~48 ms): SSL_CERT_FILE / SSL_CERT_DIR when
    set, as OpenSSL and httpx honour them, else certifi's bundle."""
    global _tls_context
    with _tls_lock:
        if _tls_context is None:
            import ssl

            cafile = os.environ.get("SSL_CERT_FILE") or None
            capath = os.environ.get("SSL_CERT_DIR") or None
            if cafile is None and capath is None:
                import certifi

                cafile = certifi.where()
            context = ssl.create_default_context(cafile=cafile, capath=capath)
            context.set_alpn_protocols(["http/1.1"])
            _tls_context = context
        return _tls_context


def _wrap_tls(
    sock: socket.socket, host: str, timeout: float, watch: SocketWatch | None
) -> socket.socket:
    import ssl

    try:
        context = tls_context()
    except (OSError, ssl.SSLError) as exc:
        raise TLSFailed(f"cannot load the CA certificates: {exc}") from exc
    sock.settimeout(timeout)
    try:
        # wrap_socket takes the descriptor over: the watch must know the new socket
        # before the handshake, which may wait as long as a connect
        tls = context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
        try:
            if watch is not None:
                watch.attach(tls)
            tls.do_handshake()
        except BaseException:
            tls.close()  # it holds the descriptor now; the caller's close would miss it
            raise
        return tls
    except ssl.SSLCertVerificationError as exc:
        raise TLSFailed(f"{host}: certificate not trusted ({exc.verify_message})") from exc
    except TimeoutError as exc:
        raise ConnectTimedOut(f"timed out in the TLS handshake with {host}") from exc
    except (OSError, ssl.SSLError) as exc:
        raise ConnectFailed(f"TLS handshake with {host}: {exc}") from exc


# --- proxies -------------------------------------------------------------------------


class _Proxy:
    __slots__ = ("authorization", "host", "port")

    def __init__(self, host: str, port: int, authorization: str | None) -> None:
        self.host = host
        self.port = port
        self.authorization = authorization


def _proxy_for(scheme: str, host: str) -> _Proxy | None:
    """The environment's proxy for this URL, read as curl and the SDKs read it:
    `https_proxy` / `http_proxy`, then `all_proxy`, lower case before upper; `no_proxy`
    lists hosts (and their subdomains) to reach directly, `*` all of them."""
    url = _env(f"{scheme}_proxy") or _env("all_proxy")
    if not url or _bypassed(host):
        return None
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise BadURL(f"proxy {url}: only http:// proxies are supported")
    authorization = None
    if parts.username is not None:
        import base64

        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return _Proxy(parts.hostname, parts.port or 80, authorization)


def _bypassed(host: str) -> bool:
    host = host.lower()
    for listed in (_env("no_proxy") or "").split(","):
        entry = listed.strip().lower()
        if entry == "*":
            return True
        name = entry.rsplit(":", 1)[0] if entry.count(":") == 1 else entry
        name = name.lstrip(".").strip("[]")
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


def _env(name: str) -> str | None:
    return os.environ.get(name.lower()) or os.environ.get(name.upper())


def _tunnel(sock: socket.socket, host: str, port: int, proxy: _Proxy, timeout: float) -> None:
    """CONNECT through the proxy: from then on the socket carries TLS to the origin."""
    authority = _authority(host, port, "")
    fields = {"Proxy-Authorization": proxy.authorization} if proxy.authorization else {}
    sock.settimeout(timeout)
    try:
        sock.sendall(request_head("CONNECT", authority, authority, fields))
        buffer = b""
        while (end := find_head_end(buffer)) < 0:
            data = sock.recv(4096)
            if not data or len(buffer) > HEAD_LIMIT:
                raise ConnectFailed(f"proxy {proxy.host}:{proxy.port} closed the tunnel")
            buffer += data
        head = parse_head(buffer[:end])
    except TimeoutError as exc:
        raise ConnectTimedOut(f"timed out opening a tunnel through {proxy.host}") from exc
    except (OSError, ProtocolError) as exc:
        raise ConnectFailed(f"proxy {proxy.host}:{proxy.port}: {exc}") from exc
    if not 200 <= head.status < 300:
        raise ConnectFailed(
            f"proxy {proxy.host}:{proxy.port} refused the tunnel: {head.status} {head.reason}"
        )


# --- URLs ----------------------------------------------------------------------------


def _split(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, request target)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BadURL(f"bad URL {url!r}: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadURL(f"bad URL {url!r}: expected http:// or https:// and a host")
    default = 443 if parts.scheme == "https" else 80
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port or default, target


def _redirect(method: str, url: str, status: int, location: str | None) -> str | None:
    """Where to follow an answer to, if anywhere (see `Pool.request`): the same origin,
    or the same host moving from http on 80 to https on 443. Another port is another
    program, which must not get the key."""
    if not location or not (
        status in (307, 308) or (method == "GET" and status in (301, 302, 303))
    ):
        return None
    try:
        target = urljoin(url, location)
        here, there = _split(url)[:3], _split(target)[:3]
    except (ValueError, BadURL):  # an unusable Location comes back as it is
        return None
    upgrade = here == ("http", there[1], 80) and there[0::2] == ("https", 443)
    return target if there == here or upgrade else None


def _authority(host: str, port: int, scheme: str) -> str:
    name = f"[{host}]" if ":" in host else host
    default = {"http": 80, "https": 443}.get(scheme)
    return name if port == default else f"{name}:{port}"


class _Decoder:
    """gzip or deflate, should a server compress although we asked for identity. Output
    comes in pieces of at most 256 KiB (64 KiB read can inflate to 64 MB), and stops with
    BodyTooLarge past `MAX_DECODED` bytes in all."""

    def __init__(self, wbits: int) -> None:
        self._inner = zlib.decompressobj(wbits)
        self._left = MAX_DECODED

    def decompress(self, data: bytes) -> Iterator[bytes]:
        inner = self._inner
        while True:
            try:
                piece = inner.decompress(data, _DECODED_PIECE)
            except zlib.error as exc:
                what = f"a compressed body that does not decompress: {exc}"
                raise ConnectionLost(what) from exc
            if piece:
                yield self._count(piece)
            data = inner.unconsumed_tail
            if not data and len(piece) < _DECODED_PIECE:  # a full piece may have more behind
                return

    def flush(self) -> bytes:
        return self._count(self._inner.flush())

    def _count(self, piece: bytes) -> bytes:
        self._left -= len(piece)
        if self._left < 0:
            limit = MAX_DECODED >> 20
            what = f"the compressed body inflates past {limit} MiB (a decompression bomb?)"
            raise BodyTooLarge(what)
        return piece


def _decoder(coding: str) -> _Decoder | None:
    coding = coding.strip().lower()
    if coding in ("", "identity"):
        return None
    if coding in ("gzip", "x-gzip"):
        return _Decoder(16 + 15)
    if coding == "deflate":
        return _Decoder(15)
    raise ConnectionLost(f"the server used content coding {coding!r}, which we did not ask for")
