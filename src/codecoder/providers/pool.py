"""Connections for the provider path: a thin pool over the standard library's
`http.client`, which does the HTTP/1.1 framing. Ours: a socket the cancel can wake,
environment proxies, keep-alive, same-origin redirects, a write timeout per send, capped
gzip/deflate, and the CA certificates of `[http] ca`. One `Pool` per endpoint, shared by
the threads that stream through it.

Cancellation: `_Connection.connect` opens its socket through `_connect`, so the request's
`SocketWatch` learns of it once its connect has begun, and of the TLS socket before the
handshake; shutting that socket down from another thread wakes a connect, a handshake, or
a read blocked in `HTTPResponse.read1`.

Keep-alive: an idle connection the server has visibly closed, or idle for over 5 s, is
dropped before use. Otherwise a reused connection's request goes again on a fresh one (at
once, with no word to the user) only if it failed *before the whole request was sent*: a
write failed and the server had no answer to read. Once the last byte has gone out, a close
or a reset, even before any byte of an answer, is `ConnectionLost`, never sent again here:
the server may have read the request and begun to act on it (a model request sent twice
may be billed twice). Trying again after such a failure is the retry policy's decision
(`providers.http`: announced, after a backoff), not this module's.
"""

from __future__ import annotations

import errno
import http.client
import io
import os
import select
import socket
import ssl  # http.client imports it anyway; a context is built only for https
import threading
import time
import zlib  # loaded at start-up anyway (shutil imports it)
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, Protocol
from urllib.parse import unquote, urljoin, urlsplit

CA = Literal["system", "certifi"]
"""`[http] ca` (see `TrustStore`)."""

_READ_SIZE = 64 * 1024
_SEND_SLICE = 64 * 1024
_MAX_REDIRECTS = 5
_IDLE_EXPIRY = 5.0
_MAX_IDLE = 8
_DECODED_PIECE = 256 * 1024
MAX_DECODED = 128 * 1024 * 1024
"""The most a compressed body may decode to: a long reply's event stream is a few tens
of MB, a decompression bomb (1 KB that inflates to 1 MB) is refused past this."""
_CONTROL = frozenset(map(chr, [*range(0x20), 0x7F])) - {"\t"}
"""Never in a header value (http.client lets a NUL, or a CRLF before a space, through)."""


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
AddrInfo = tuple[socket.AddressFamily, socket.SocketKind, int, str, tuple[Any, ...]]
Resolver = Callable[[str, int], list[AddrInfo]]
"""getaddrinfo's part: the addresses to try for (host, port), in order. A pool given one
connects only to what it returns (web_fetch's checked addresses); it may raise a
TransportError to refuse the host."""


class SocketWatch(Protocol):
    """Whoever must be able to wake a request's blocked socket (its cancel)."""

    def attach(self, sock: socket.socket) -> None:
        """`sock` is about to connect, shake hands, send or read; raises to stop it."""
        ...

    def detach(self, sock: socket.socket) -> bool:
        """Done with `sock`; False if the watch shut it down (it must not be pooled)."""
        ...

    def check(self) -> None:
        """Raises if the request is to stop (before a name lookup, which nothing wakes)."""
        ...


class TrustStore:
    """The certificates a server's must chain to, as one TLS context built on first use
    (~48 ms, so never for http only) and shared by every pool given this store. `ca`
    (`[http] ca`): "system", the OS store through `ssl.create_default_context()`;
    "certifi", certifi's bundle only; None, SSL_CERT_FILE / SSL_CERT_DIR when set (as
    OpenSSL and the SDKs honour them), else certifi's bundle."""

    def __init__(self, ca: CA | None = None) -> None:
        self.ca: CA | None = ca
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None

    def context(self) -> ssl.SSLContext:
        with self._lock:
            if self._context is None:
                try:
                    self._context = self._build()
                except (OSError, ssl.SSLError) as exc:
                    raise TLSFailed(f"cannot load the CA certificates: {exc}") from exc
            return self._context

    def _build(self) -> ssl.SSLContext:
        if self.ca == "system":
            context = ssl.create_default_context()
        else:
            from_env = self.ca is None
            cafile = os.environ.get("SSL_CERT_FILE") or None if from_env else None
            capath = os.environ.get("SSL_CERT_DIR") or None if from_env else None
            if cafile is None and capath is None:
                import certifi

                cafile = certifi.where()
            context = ssl.create_default_context(cafile=cafile, capath=capath)
        context.set_alpn_protocols(["http/1.1"])
        return context


class _Wire(io.RawIOBase):
    """A socket as http.client's buffered reader reads it, counting the bytes it gives."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._socket_io = sock.makefile("rb", buffering=0)
        self.given = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        count = self._socket_io.readinto(buffer)
        self.given += count or 0
        return count

    def tell(self) -> int:  # the buffered reader's tell() is this less what it holds
        return self.given

    def close(self) -> None:
        self._socket_io.close()
        super().close()


class _Answer(http.client.HTTPResponse):
    """http.client's response, read through a 64 KiB buffer that `ready` looks into."""

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.fp.close()
        self._wire = _Wire(sock)
        self.fp = io.BufferedReader(self._wire, _READ_SIZE)

    def ready(self) -> bool:
        """Whether `read1` has what it needs without waiting for the network: a byte of
        body, or at a chunk's end, the next size line and a byte after it."""
        held = self._wire.given - self.fp.tell() if self.fp else 0
        if not held or held > 64 or not self.chunked or self.chunk_left:
            return held > 0  # 64 bytes and more: a size line ends in them
        ahead = self.fp.peek()  # held > 0: from the buffer, no read
        end = ahead.find(b"\n", 0 if self.chunk_left is None else 2)
        return 0 <= end < len(ahead) - 1


class _Connection(http.client.HTTPConnection):
    """One connection to `key`, direct or through an http proxy (a CONNECT tunnel, by
    `set_tunnel`, for https)."""

    def __init__(
        self, pool: Pool, key: Origin, proxy: _Proxy | None, watch: SocketWatch | None
    ) -> None:
        scheme, host, port = key
        where = (proxy.host, proxy.port) if proxy else (host, port)
        super().__init__(*where, timeout=pool.connect_timeout)
        self.key = key
        self.watch = watch
        self.resolve = pool.resolve
        self.idle_since = 0.0
        self.auto_open = 0  # connect only when we say so, never as a side effect of send
        self.default_port = 443 if scheme == "https" else 80  # left out of Host
        self.response_class = _Answer
        self._create_connection = self._open  # what HTTPConnection.connect calls
        self._tls = pool.trust.context if scheme == "https" else None
        self._server_name = host
        if proxy is not None:
            self.set_tunnel(host, port, proxy.headers)

    def _open(self, address: tuple[str, int], timeout: float, *_: Any) -> socket.socket:
        return _connect(*address, timeout, self.watch, self.resolve)

    def connect(self) -> None:
        try:
            super().connect()  # _open, then a CONNECT when tunnelling
        except TimeoutError as exc:
            raise ConnectTimedOut(f"timed out opening a tunnel through {self.host}") from exc
        except (OSError, http.client.HTTPException) as exc:  # the tunnel's: _open raises ours
            raise ConnectFailed(f"proxy {self.host}:{self.port}: {exc}") from exc
        if self._tls is not None:
            self.sock = _wrap_tls(self.sock, self._server_name, self._tls, self.watch)

    def getresponse(self) -> _Answer:
        answer = super().getresponse()
        assert isinstance(answer, _Answer)
        return answer

    def send(self, data: Any) -> None:
        """sendall() has one deadline for all the data (SSLSocket.send too, for all it is
        given): ours is per slice, so a slow link that keeps taking bytes is no silent
        server."""
        view = memoryview(data)
        while view:
            view = view[self.sock.send(view[:_SEND_SLICE]) :]

    def looks_alive(self) -> bool:
        """Idle and readable: closed by the server, or bytes no request asked for."""
        if time.monotonic() - self.idle_since > _IDLE_EXPIRY:
            return False
        poller = select.poll()  # not select(): it refuses descriptors past 1023
        poller.register(self.sock, select.POLLIN)
        return not poller.poll(0)


class Response:
    """An answer's status and head, then its body as the caller reads it; the connection
    goes back to the pool once the body has ended cleanly. Not thread-safe: a blocked read
    is woken through the request's watch, which holds its socket."""

    def __init__(
        self,
        pool: Pool,
        connection: _Connection,
        sock: socket.socket,
        answer: _Answer,
        watch: SocketWatch | None,
        *,
        reusable: bool = True,
    ) -> None:
        self.status = answer.status
        self.reason = answer.reason
        self.headers: dict[str, str] = {}
        """Lower-cased names; a repeated field's values joined with ", " (RFC 9110)."""
        for name, raw in answer.getheaders():
            key, value = name.lower(), raw.strip(" \t")
            self.headers[key] = f"{self.headers[key]}, {value}" if key in self.headers else value
        self._pool, self._connection, self._sock = pool, connection, sock
        self._answer, self._watch = answer, watch
        both = {"transfer-encoding", "content-length"} <= self.headers.keys()  # smuggling
        self._reusable = reusable and not both
        try:
            if "content-length" in self.headers and answer.length is None and not answer.chunked:
                length = self.headers["content-length"][:40]  # http.client reads to the close
                raise ConnectionLost(f"the server sent a bad Content-Length {length!r}")
            self._decoder = _decoder(self.headers.get("content-encoding", ""))
        except ConnectionLost:
            answer.close()
            raise
        sock.settimeout(pool.read_timeout)

    def iter_bytes(self) -> Iterator[bytes]:
        """The body, one piece per network read that brought any of it: the chunks of
        one read come out joined (a streaming server sends one chunk per token)."""
        answer, decoder = self._answer, self._decoder
        while self._connection is not None:
            pieces: list[bytes] = []
            try:
                while piece := answer.read1(_READ_SIZE):
                    pieces.append(piece)
                    if not answer.ready():
                        break
            except TimeoutError as exc:
                raise ReadTimedOut("timed out waiting for the server") from exc
            except (OSError, http.client.HTTPException) as exc:
                raise ConnectionLost(f"the answer was cut off: {_detail(exc)}") from exc
            if pieces:
                data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
                if decoder is None:
                    yield data
                else:
                    yield from decoder.decompress(data)
                continue
            if answer.length:  # read1 ends a cut Content-Length body quietly
                raise ConnectionLost("the server closed the connection before the body ended")
            if decoder is not None and (tail := decoder.flush()):
                yield tail
            self._finish()

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
            self._answer.close()
            connection.close()

    def _finish(self) -> None:
        connection, self._connection = self._connection, None
        assert connection is not None
        self._answer.close()  # the body has ended (3.11's read1 does not say so)
        released = self._watch is None or self._watch.detach(self._sock)
        # http.client drops `sock` when the answer said the connection closes after it
        if released and self._reusable and connection.sock is not None:
            self._pool.release(connection)
        else:
            connection.close()


class Pool:
    """Keep-alive connections to the origins one endpoint needs (a redirect may add one);
    thread-safe. `trust`: what server certificates must chain to. `resolve`: where a host
    is (default: getaddrinfo). `proxies`: False ignores the environment's proxies (a
    proxy would look the host up itself, after `resolve` checked it)."""

    def __init__(
        self,
        *,
        connect: float,
        read: float,
        write: float,
        user_agent: str,
        trust: TrustStore | None = None,
        resolve: Resolver | None = None,
        proxies: bool = True,
    ) -> None:
        self.connect_timeout = connect
        self.resolve = resolve
        self.proxies = proxies
        self.read_timeout = read
        self.write_timeout = write
        self.user_agent = user_agent
        self.trust = trust or TrustStore()
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
        follow_redirects: bool = True,
    ) -> Response:
        """Send and read the answer's head. Redirects are followed on the same host only
        (307 and 308 always, 301, 302 and 303 for a GET; http may become https, never the
        reverse): a request carries keys and the conversation, which another host gets
        only if the user's configuration names it. Other redirects come back as they are,
        and every redirect does with `follow_redirects` False. `watch` is told of every
        socket the request is about to use."""
        for _ in range(_MAX_REDIRECTS + 1):
            response = self._send(method, url, headers, body, watch)
            if not follow_redirects:
                return response
            target = _redirect(method, url, response.status, response.headers.get("location"))
            if target is None:
                return response
            try:
                response.read(_READ_SIZE)  # a short note at most; frees the connection
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

    def _send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        watch: SocketWatch | None,
    ) -> Response:
        scheme, host, port, target = _split(url)
        proxy = _proxy_for(scheme, host, port) if self.proxies else None
        key: Origin = (scheme, host, port)
        given = {name.lower() for name in headers}
        fields = {"User-Agent": self.user_agent, "Accept-Encoding": "identity"}
        fields = {n: v for n, v in fields.items() if n.lower() not in given} | dict(headers)
        if proxy is not None and scheme == "http":  # an absolute target, to the proxy
            target = f"http://{_authority(host, port, 'http')}{target}"
            fields.update(proxy.headers)
            key, proxy = ("http", proxy.host, proxy.port), None  # a plain connection to it
        if body or method in ("POST", "PUT", "PATCH"):
            fields["Content-Length"] = str(len(body))
        if bad := [name for name, value in fields.items() if _CONTROL & set(value)]:
            raise BadURL(f"cannot build the request to {url}: {bad[0]} holds a control character")
        fresh = False
        while True:
            connection = None if fresh else self._take_idle(key, watch)
            reused = connection is not None
            connection = connection or _Connection(self, key, proxy, watch)
            try:
                try:  # http.client checks the rest: line breaks, latin-1, names
                    connection.putrequest(method, target, skip_accept_encoding=True)
                    for name, value in fields.items():
                        connection.putheader(name, value)
                except (ValueError, http.client.HTTPException) as exc:
                    raise BadURL(f"cannot build the request to {url}: {exc}") from exc
                if not reused:
                    connection.connect()
                result = self._exchange(connection, body, watch, reused=reused)
            except BaseException:
                connection.close()
                raise
            if isinstance(result, Response):
                return result
            connection.close()  # not sent whole, no answer: sending it again is safe
            if not reused:
                what = f"the server closed the connection before the request was sent ({result})"
                raise ConnectionLost(what) from result
            fresh = True  # the others idle as long: do not try them one by one
            if watch is not None:
                watch.check()  # a cancel looks stale too: no new connection for it

    def _exchange(
        self, connection: _Connection, body: bytes, watch: SocketWatch | None, *, reused: bool
    ) -> Response | OSError:
        """Send the request, read the answer's head. The OSError of a write that failed
        when the server had no answer to read (a 413 or 401 sent early is read); after the
        last byte went out, every failure raises."""
        sock = connection.sock
        sock.settimeout(self.write_timeout)
        try:
            connection.endheaders(body)  # the head, then the body
        except TimeoutError as exc:
            raise ReadTimedOut("timed out sending the request (the server reads no more)") from exc
        except OSError as exc:
            sock.settimeout(min(self.read_timeout, 1.0))
            try:
                answer = connection.getresponse()
            except (OSError, http.client.HTTPException):
                return exc
            return Response(self, connection, sock, answer, watch, reusable=False)
        sock.settimeout(self.read_timeout)
        try:
            answer = connection.getresponse()
        except TimeoutError as exc:
            raise ReadTimedOut("timed out waiting for the server") from exc
        except (OSError, http.client.HTTPException) as exc:
            what = "no valid answer"
            if isinstance(exc, ConnectionResetError):  # http.client's RemoteDisconnected too
                what = "the server closed the connection without an answer"
                if reused:
                    what += " (not sent again: the server may have acted on the request)"
            raise ConnectionLost(f"{what}: {_detail(exc)}") from exc
        return Response(self, connection, sock, answer, watch)

    def _take_idle(self, key: Origin, watch: SocketWatch | None) -> _Connection | None:
        """The idle connection to `key` used last, if it still looks alive; its socket is
        told to `watch`."""
        with self._lock:
            found = [index for index, c in enumerate(self._idle) if c.key == key]
            connection = self._idle.pop(found[-1]) if found else None
        if connection is None or not connection.looks_alive():
            if connection is not None:
                connection.close()
            return None
        connection.watch = watch
        try:
            if watch is not None:
                watch.attach(connection.sock)
        except BaseException:
            connection.close()
            raise
        return connection


def _detail(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _connect(
    host: str,
    port: int,
    timeout: float,
    watch: SocketWatch | None,
    resolve: Resolver | None = None,
) -> socket.socket:
    """A TCP connection, trying each address in turn, as socket.create_connection does.
    Each connect begins before the watch is told (a shutdown before it began would not stop
    it). Name resolution cannot be woken: it is bounded by the resolver's own timeout."""
    if watch is not None:
        watch.check()
    try:
        if resolve is not None:
            addresses = resolve(host, port)
        else:
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
            sock.setblocking(False)
            code = sock.connect_ex(address)
            if watch is not None:
                watch.attach(sock)
            if code == errno.EINPROGRESS:
                poller = select.poll()
                poller.register(sock, select.POLLOUT)
                if not poller.poll(timeout * 1000):
                    raise TimeoutError(f"connect timed out after {timeout} s")
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, os.strerror(code))
        except OSError as exc:  # timeouts included: the next address may answer
            sock.close()
            error = exc
            continue
        except BaseException:
            sock.close()
            raise
        sock.settimeout(timeout)
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


def _wrap_tls(
    sock: socket.socket,
    host: str,
    context: Callable[[], ssl.SSLContext],
    watch: SocketWatch | None,
) -> ssl.SSLSocket:
    tls: ssl.SSLSocket | None = None
    try:  # the TLS socket takes the descriptor over: the watch must know it first
        tls = context().wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
        if watch is not None:
            watch.attach(tls)
        tls.do_handshake()
        return tls
    except BaseException as exc:
        (tls or sock).close()  # the caller's close would miss a TLS socket
        if isinstance(exc, ssl.SSLCertVerificationError):
            what = f"{host}: certificate not trusted ({exc.verify_message})"
            raise TLSFailed(what) from exc
        if isinstance(exc, TimeoutError):
            raise ConnectTimedOut(f"timed out in the TLS handshake with {host}") from exc
        if isinstance(exc, OSError):  # ssl.SSLError included
            raise ConnectFailed(f"TLS handshake with {host}: {exc}") from exc
        raise


# --- proxies -------------------------------------------------------------------------


class _Proxy:
    __slots__ = ("headers", "host", "port")

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host = host
        self.port = port
        self.headers = headers
        """Proxy-Authorization, when the proxy URL carries credentials."""


def _proxy_for(scheme: str, host: str, port: int) -> _Proxy | None:
    """The environment's proxy for this URL, read as curl and the SDKs read it:
    `https_proxy` / `http_proxy`, then `all_proxy`, lower case before upper, unless
    `no_proxy` names the host (see `_bypassed`)."""
    url = _env(f"{scheme}_proxy") or _env("all_proxy")
    if not url or _bypassed(host, port):
        return None
    parts = urlsplit(url if "://" in url else "http://" + url)
    if parts.scheme != "http" or not parts.hostname:
        raise BadURL(f"proxy {url}: only http:// proxies are supported")
    headers: dict[str, str] = {}
    if parts.username is not None:
        import base64

        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    return _Proxy(parts.hostname, parts.port or 80, headers)


def _bypassed(host: str, port: int) -> bool:
    """`no_proxy`, comma-separated: `*` (everything), host names (their subdomains too; a
    leading `.` or `*.` changes nothing), IP addresses and CIDR ranges (`10.0.0.0/8`,
    `fd00::/8`), each with an optional port that must then match (`host:8080`,
    `[::1]:8080`)."""
    host = host.lower().strip("[]")
    for listed in (_env("no_proxy") or "").split(","):
        entry = name = listed.strip().lower()
        if entry == "*":
            return True
        wanted = None
        if entry.startswith("["):  # [v6] or [v6]:port
            name, _, rest = entry[1:].partition("]")
            wanted = rest[1:] if rest.startswith(":") else None
        elif entry.count(":") == 1:  # name:port (a bare v6 address has more colons)
            name, _, wanted = entry.partition(":")
        name = name.removeprefix("*").lstrip(".")
        if not name or wanted not in (None, str(port)):
            continue
        if "/" in name:
            import ipaddress  # only for a range

            try:
                if ipaddress.ip_address(host) in ipaddress.ip_network(name, strict=False):
                    return True
            except ValueError:  # a host name, or not a range: no match
                continue
        elif host == name or host.endswith("." + name):
            return True
    return False


def _env(name: str) -> str | None:
    return os.environ.get(name.lower()) or os.environ.get(name.upper())


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


# --- content coding ------------------------------------------------------------------


class _Decoder:
    """gzip or deflate, should a server compress although we asked for identity: at most
    256 KiB out per step (64 KiB read can inflate to 64 MB), BodyTooLarge past
    `MAX_DECODED` bytes in all."""

    def __init__(self, wbits: int) -> None:
        self._inner = zlib.decompressobj(wbits)
        self._left = MAX_DECODED

    def decompress(self, data: bytes) -> Iterator[bytes]:
        while True:
            try:
                piece = self._inner.decompress(data, _DECODED_PIECE)
            except zlib.error as exc:
                raise ConnectionLost(f"a compressed body that does not decompress: {exc}") from exc
            if piece:
                yield self._count(piece)
            data = self._inner.unconsumed_tail
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
    if coding in ("gzip", "x-gzip", "deflate"):
        return _Decoder(15 if coding == "deflate" else 16 + 15)
    raise ConnectionLost(f"the server used content coding {coding!r}, which we did not ask for")
