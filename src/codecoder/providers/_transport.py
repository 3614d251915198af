"""httpx's default transport with a network backend of our own, which tells cancellation
which socket a request is using (see `providers.http`) and merges the chunks of a chunked
body that arrive in one read (see `providers._chunked`). Imported on the first request
only: it pulls in httpx and httpcore.

httpx offers no parameter for httpcore's `network_backend`, so the transport replaces the
pool its parent built (`_pool`, the attribute `HTTPTransport.handle_request` sends
through) with one built on our backend; everything else — request conversion, the
mapping of httpcore exceptions to httpx ones — stays httpx's own.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from codecoder.providers._chunked import ChunkMerger


class WatchedTransport(httpx.HTTPTransport):
    def __init__(self, ssl_context: ssl.SSLContext | None, local: threading.local) -> None:
        # verify=False: the parent's own SSL context is discarded with its pool; building a
        # verifying one would cost ~48 ms. Ours is verifying, and built only for https.
        super().__init__(verify=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            network_backend=_Backend(local),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
        )


class _Backend(httpcore.NetworkBackend):
    def __init__(self, local: threading.local) -> None:
        self._inner = httpcore.SyncBackend()
        self._local = local

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        inner = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _WatchedStream(inner, self._local).announce()

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        inner = self._inner.connect_unix_socket(path, timeout, socket_options)
        return _WatchedStream(inner, self._local).announce()

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _WatchedStream(httpcore.NetworkStream):
    """On connect and on every write, names itself to the watch bound to the current
    thread (the request being sent there), if any; merges the chunks of each read
    (`ChunkMerger`); delegates the rest."""

    __slots__ = ("_inner", "_local", "_merger")

    def __init__(self, inner: httpcore.NetworkStream, local: threading.local) -> None:
        self._inner = inner
        self._local = local
        self._merger = ChunkMerger()

    def announce(self) -> _WatchedStream:
        watch = getattr(self._local, "watch", None)
        if watch is not None:
            watch.attach(self)
        return self

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        while True:
            data = self._inner.read(max_bytes, timeout)
            if not data:
                return self._merger.flush()
            merged = self._merger.feed(data)
            if merged:
                return merged

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.announce()
        self._merger.reset()
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(ssl_context, server_hostname, timeout)
        return _WatchedStream(inner, self._local).announce()

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)
