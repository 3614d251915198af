"""The fetch behind web_fetch (tools/web.py declares the tool and says what it does):
the pool with the guard as its resolver, redirects hop by hop, the caps, the page as
text. Imported at the first call."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from codecoder import __version__
from codecoder.kernel.cancel import Cancelled
from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import ToolContext
from codecoder.providers.pool import Pool, Response, TransportError
from codecoder.tools.pages import TooSlow, charset, convert, untrusted
from codecoder.tools.ssrf import Refused, Target
from codecoder.tools.web import (
    CONNECT_TIMEOUT,
    HEADERS,
    HTML_TYPES,
    MAX_DOWNLOAD,
    MAX_REDIRECTS,
    REDIRECTS,
    TEXT_TYPES,
    WebFetch,
    WebFetchArgs,
)


def fetch(tool: WebFetch, args: WebFetchArgs, ctx: ToolContext) -> ToolResult:
    """Run one web_fetch call (see tools/web.py)."""
    one = _Fetch(tool, args, ctx)
    try:
        text, failed = one.run()
    except Refused as exc:
        return tool_result(ctx.call_id, str(exc), "error")
    except (TransportError, TooSlow) as exc:
        ctx.cancel.check()
        if one.watch.timed_out:
            what = f"could not fetch {args.url}: no page within {tool.time_limit:g} s"
        else:
            what = f"could not fetch {args.url}: {exc}"
        return tool_result(ctx.call_id, what, "error")
    return tool_result(ctx.call_id, text, "error" if failed else "success")


class _Fetch:
    """One call: the pool, the sockets to wake, the deadline."""

    def __init__(self, tool: WebFetch, args: WebFetchArgs, ctx: ToolContext) -> None:
        self.tool, self.args, self.ctx = tool, args, ctx
        self.guard = tool.guard
        self.watch = _Sockets()
        self.deadline = time.monotonic() + tool.time_limit

    def run(self) -> tuple[str, bool]:
        """(the text for the model, whether it is an error)."""
        pool = Pool(
            connect=CONNECT_TIMEOUT,
            read=self.tool.time_limit,
            write=CONNECT_TIMEOUT,
            user_agent=f"codecoder/{__version__} (web_fetch)",
            resolve=self.guard.resolve,
            proxies=False,
        )
        timer = threading.Timer(self.tool.time_limit, self.watch.fire, ("timed out",))
        timer.daemon = True
        unregister = self.ctx.cancel.on_cancel(lambda: self.watch.fire("cancelled"))
        timer.start()
        try:
            return self._run(pool)
        except TransportError:
            if self.ctx.cancel.is_cancelled():
                raise Cancelled(self.ctx.cancel.reason) from None
            raise
        finally:
            timer.cancel()
            unregister()
            pool.close()

    def _run(self, pool: Pool) -> tuple[str, bool]:
        url = first = self.args.url
        for hops in range(MAX_REDIRECTS + 1):
            target = self.guard.check_url(url)
            response = pool.request(
                "GET",
                request_url(target, url),
                headers=HEADERS,
                watch=self.watch,
                follow_redirects=False,
            )
            location = response.headers.get("location")
            if response.status not in REDIRECTS or not location:
                return self._page(response, url, first)
            response.close()
            following = urljoin(url, location)
            there = self.guard.check_url(following)
            if there.host != target.host:
                self.guard.resolve(there.host, there.port)  # refused: say so, naming it
                return _elsewhere(url, following, response.status), False
            if hops == MAX_REDIRECTS:
                break
            url = following
        return f"refused {first}: more than {MAX_REDIRECTS} redirects (the last to {url})", True

    def _page(self, response: Response, url: str, first: str) -> tuple[str, bool]:
        body, cut = _read(response)
        self.watch.check()  # a socket shut by the timer or a cancel reads as an early end
        content_type = response.headers.get("content-type", "")
        mime = content_type.split(";")[0].strip().lower()
        kind = _kind(mime, body)
        size = f"{len(body):,} bytes" + (
            f" (download cut at {MAX_DOWNLOAD >> 20} MiB)" if cut else ""
        )
        head = f"URL: {url}" + (f" (redirected from {first})" if url != first else "")
        head += f"\nHTTP {response.status} · {mime or 'no content type'} · {size}"
        failed = response.status >= 400
        if kind is None:
            return f"{head}\nnot text ({mime or 'binary'}): web_fetch reads HTML and text", True
        text = body.decode(charset(content_type, body, html=kind == "html"), "replace")
        if kind == "html":
            left = max(self.deadline - time.monotonic(), 0.1)
            text = convert(text, self.ctx.cancel, left, base=url)
        encoded = text.encode()
        shown = encoded[: self.args.max_bytes].decode("utf-8", "ignore")
        out = f"{head}\n{untrusted(url, shown)}"
        if len(encoded) > self.args.max_bytes:
            out += (
                f"\n[cut: {len(encoded):,} bytes of text, the first {self.args.max_bytes:,} "
                "shown; a larger max_bytes shows more]"
            )
        return out, failed


def request_url(target: Target, url: str) -> str:
    """The URL as sent: the checked host (IDNA, lower case), the path quoted, no fragment
    and no user part."""
    parts = urlsplit(url.strip())
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    netloc = host if target.port == default else f"{host}:{target.port}"
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
    query = quote(parts.query, safe="/%:@!$&'()*+,;=-._~?")
    return urlunsplit((target.scheme, netloc, path, query, ""))


def _elsewhere(url: str, following: str, status: int) -> str:
    return (
        f"{url} redirects ({status}) to {following}, another host: not followed. Call "
        "web_fetch with that URL to read it (it is checked and approved like any other)."
    )


def _read(response: Response) -> tuple[bytes, bool]:
    """The body up to MAX_DOWNLOAD bytes; True when there was more (not read)."""
    parts: list[bytes] = []
    size = 0
    try:
        for piece in response.iter_bytes():
            parts.append(piece)
            size += len(piece)
            if size > MAX_DOWNLOAD:
                break
    finally:
        response.close()
    body = b"".join(parts)
    return body[:MAX_DOWNLOAD], size > MAX_DOWNLOAD


def _kind(mime: str, body: bytes) -> str | None:
    """ "html", "text", or None for what web_fetch does not read."""
    if mime in HTML_TYPES:
        return "html"
    if mime.startswith("text/") or mime in TEXT_TYPES or mime.endswith(("+json", "+xml")):
        return None if b"\0" in body[:8192] else "text"
    if mime:
        return None
    start = body[:1024].lstrip().lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return "html"
    try:
        body[:8192].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < 8188:  # not just a character cut at the end of the sample
            return None
    return None if b"\0" in body[:8192] else "text"


class _Sockets:
    """The sockets of one fetch (the pool's SocketWatch), shut down on cancel or when
    the time is up, which wakes a blocked connect, handshake or read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._fired: str | None = None

    @property
    def timed_out(self) -> bool:
        return self._fired == "timed out"

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            if self._fired is None:
                self._sockets.append(sock)
                return
        raise TransportError(self._fired)

    def detach(self, sock: socket.socket) -> bool:
        with self._lock:
            if self._fired is not None:
                return False
            if sock in self._sockets:
                self._sockets.remove(sock)
            return True

    def check(self) -> None:
        with self._lock:
            if self._fired is not None:
                raise TransportError(self._fired)

    def fire(self, reason: str) -> None:
        with self._lock:
            if self._fired is None:
                self._fired = reason
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
