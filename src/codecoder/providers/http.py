"""The one HTTP path: a streaming POST of JSON whose Server-Sent Events are folded by a
wire parser, with retries and a cancel that wakes a blocked read.

Threads. `stream` runs on the caller's thread (the kernel reads a provider on a reader
thread of its own and stops waiting at once on cancel). A cancel must still end that
thread promptly, even when the server has gone silent: `close()` on a socket from
another thread does not wake a thread blocked in `recv()`, `shutdown(SHUT_RDWR)` does.
So the cancel callback shuts the socket down, and the reading thread, woken by the
failed read, closes the response itself (an httpx response is not safe to close from
another thread). The socket is found two ways:

- before the response headers arrive (connect, send, waiting for the first byte): our
  transport's network backend wraps each connection's stream; every write names the
  stream to the watch of the request being sent on that thread;
- once streaming: the response's `network_stream` extension (this also covers requests
  that went through an environment proxy, which uses httpx's own transport).

Throughput. Servers send each SSE event as its own HTTP chunk; our transport merges the
chunks of each socket read before h11 sees them (`providers._chunked`), the SSE decoder
splits a whole read at once, and the events of one read are coalesced (400 one-token
text deltas become one TextDelta), so the kernel sees one event per read, not per token.

Retries (DESIGN.md §7): 429, 5xx, overloaded answers and connection failures, while
nothing of the reply has been handed on; capped exponential backoff with jitter,
Retry-After honoured up to the cap; each wait ≤ 30 s, all waits of one request ≤ 120 s;
each retry announced as `StatusUpdate("retrying")`; the wait is `cancel.wait`, so a cancel
ends it at once. A stream cut after part of the reply was delivered is not retried.

Cost at import: none of httpx (~80 ms) until the first request; an SSL context (~48 ms)
only for https endpoints.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import StatusUpdate
from codecoder.kernel.ports import (
    ProviderError,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from codecoder.providers import errors
from codecoder.providers.sse import SSEDecoder
from codecoder.providers.wire import StreamParser

if TYPE_CHECKING:
    import httpx

_MAX_ERROR_BODY = 64 * 1024


class RetryPolicy(msgspec.Struct, frozen=True):
    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 30.0
    """Cap of one wait, Retry-After included."""
    max_total: float = 120.0
    """Cap of all waits of one request."""

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """The wait before retry number `attempt + 1` (attempt counts from 0)."""
        import random

        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        ceiling = min(self.base_delay * 2**attempt, self.max_delay)
        return ceiling * (0.5 + random.random() / 2)  # "equal jitter": never below half


class Timeouts(msgspec.Struct, frozen=True):
    connect: float = 10.0
    read: float = 300.0
    """Longest silence between two reads (reasoning models can think for minutes)."""
    write: float = 30.0


class _Failure(Exception):
    """One attempt failed; carries the server's Retry-After when it sent one."""

    def __init__(self, error: ProviderError, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after


class HttpClient:
    """A keep-alive connection pool for one provider endpoint; safe to share between
    threads (sub-agents stream through the same client at once)."""

    def __init__(
        self,
        base_url: str,
        *,
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.timeouts = timeouts or Timeouts()
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None

    def _httpx(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = _new_client(self.base_url, self.timeouts)
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def stream(
        self,
        path: str,
        body: bytes,
        *,
        headers: Mapping[str, str],
        cancel: CancelToken,
        new_parser: Callable[[], StreamParser],
        label: str,
    ) -> Iterator[StreamEvent]:
        """POST `body` and yield the reply's events, retrying as the module says. Returns
        (without a Stop) once `cancel` flips; raises ProviderError, labelled."""
        url = self.base_url + path
        waited = 0.0
        for attempt in range(self.retry.max_attempts):
            if cancel.is_cancelled():
                return
            delivered = False
            try:
                for batch in self._attempt(url, body, headers, cancel, new_parser()):
                    delivered = True
                    yield from batch
                return
            except _Failure as failure:
                if cancel.is_cancelled():
                    return
                error = failure.error
                tries = attempt + 1
                if delivered or not error.retryable or tries >= self.retry.max_attempts:
                    cause = failure.__cause__  # the transport's or parser's own exception
                    raise errors.with_label(error, label, cut=delivered, tries=tries) from cause
                delay = self.retry.delay(attempt, failure.retry_after)
                if waited + delay > self.retry.max_total:
                    raise errors.with_label(error, label, tries=tries) from failure.__cause__
                waited += delay
                detail = f"{label}: {error.message}; retry {attempt + 1} in {delay:.1f} s"
                yield StatusUpdate(status="retrying", detail=detail)
                if cancel.wait(delay):
                    return

    def _attempt(
        self,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        cancel: CancelToken,
        parser: StreamParser,
    ) -> Iterator[list[StreamEvent]]:
        import httpx

        client = self._httpx()
        watch = _Watch()
        unregister = cancel.on_cancel(watch.fire)
        try:
            try:
                request = client.build_request("POST", url, content=body, headers=headers)
            except (UnicodeEncodeError, httpx.InvalidURL) as exc:
                raise ProviderError("config", f"cannot build the request to {url}: {exc}") from exc
            with watch.bound():
                response = client.send(request, stream=True)
            try:
                watch.attach(response.extensions.get("network_stream"))
                _check_response(response)
                yield from _read_events(response, parser)
            finally:
                response.close()
        except httpx.HTTPError as exc:
            if not cancel.is_cancelled():
                raise _Failure(errors.from_exception(exc, url)) from exc
        except ProviderError as exc:
            raise _Failure(exc) from exc
        finally:
            unregister()

    def get(self, path: str, *, headers: Mapping[str, str], timeout: float) -> tuple[int, bytes]:
        """A plain GET (the model list, for `codecoder doctor`); raises ProviderError."""
        import httpx

        url = self.base_url + path
        try:
            response = self._httpx().get(url, headers=headers, timeout=timeout)
        except httpx.HTTPError as exc:
            raise errors.from_exception(exc, url) from exc
        return response.status_code, response.content


def _check_response(response: httpx.Response) -> None:
    if response.status_code >= 400:
        payload = _read_capped(response)
        error = errors.from_status(response.status_code, payload)
        raise _Failure(error, retry_after(response.headers))
    content_type = response.headers.get("content-type", "")
    if "text/event-stream" not in content_type:
        first = _read_capped(response)[:200].decode("utf-8", "replace")
        what = f"expected an event stream, got {content_type or 'no content type'}: {first}"
        raise _Failure(errors.bad_response(what))


def _read_capped(response: httpx.Response) -> bytes:
    parts: list[bytes] = []
    size = 0
    for part in response.iter_bytes():
        parts.append(part)
        size += len(part)
        if size >= _MAX_ERROR_BODY:
            break
    return b"".join(parts)


def _read_events(response: httpx.Response, parser: StreamParser) -> Iterator[list[StreamEvent]]:
    """One list of events per network read that completed any (coalesced: a read that
    brought 400 one-token events yields one TextDelta), then the parser's last events."""
    decoder = SSEDecoder()
    for chunk in response.iter_bytes():
        events: list[StreamEvent] = []
        for name, data in decoder.feed(chunk):
            try:
                events.extend(parser.parse_event(name, data))
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                # valid JSON of a shape the wire never sends: say so, keep the detail
                what = f"unexpected event {name or ''} ({exc!r}): {data[:120]!r}"
                raise errors.bad_response(what) from exc
        if events:
            yield coalesce(events) if len(events) > 1 else events
    tail = parser.finish()
    if tail:
        yield tail


def coalesce(events: list[StreamEvent]) -> list[StreamEvent]:
    """Merge runs of adjacent text, reasoning and same-call argument deltas."""
    out: list[StreamEvent] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, TextDelta) and isinstance(last, TextDelta):
            out[-1] = TextDelta(last.text + event.text)
        elif isinstance(event, ReasoningDelta) and isinstance(last, ReasoningDelta):
            out[-1] = ReasoningDelta(last.text + event.text)
        elif (
            isinstance(event, ToolCallDelta)
            and isinstance(last, ToolCallDelta)
            and last.index == event.index
            and event.id is None
            and event.name is None
        ):
            out[-1] = ToolCallDelta(
                index=last.index,
                id=last.id,
                name=last.name,
                args_delta=last.args_delta + event.args_delta,
            )
        else:
            out.append(event)
    return out


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms` (OpenAI), `retry-after` as
    seconds or as an HTTP date; None when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


# --- cancellation --------------------------------------------------------------------


class _Watch:
    """The socket of one request, shut down when the request's CancelToken flips."""

    __slots__ = ("_fired", "_lock", "_streams")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: list[Any] = []
        self._fired = False

    def bound(self) -> _Bound:
        return _Bound(self)

    def attach(self, stream: Any) -> None:
        if stream is None:
            return
        with self._lock:
            if not self._fired:
                if stream not in self._streams:
                    self._streams.append(stream)
                return
        _shutdown(stream)

    def fire(self) -> None:
        with self._lock:
            self._fired = True
            streams, self._streams = self._streams, []
        for stream in streams:
            _shutdown(stream)


class _Bound:
    """Names `watch` as the one whose request this thread is sending right now."""

    __slots__ = ("_watch",)
    local = threading.local()

    def __init__(self, watch: _Watch) -> None:
        self._watch = watch

    def __enter__(self) -> None:
        _Bound.local.watch = self._watch

    def __exit__(self, *exc: object) -> None:
        _Bound.local.watch = None


def _shutdown(stream: Any) -> None:
    import socket

    sock = stream.get_extra_info("socket")
    if sock is None:
        return
    with contextlib.suppress(OSError):  # already closed or never connected: nothing to wake
        sock.shutdown(socket.SHUT_RDWR)


def _new_client(base_url: str, timeouts: Timeouts) -> httpx.Client:
    """Our transport, unless an environment proxy applies to `base_url`: httpx ignores
    HTTPS_PROXY & co. once given a transport, so proxied endpoints get httpx's own
    (cancel then wakes the stream through `network_stream` only)."""
    import httpx

    from codecoder.providers._transport import WatchedTransport

    timeout = httpx.Timeout(
        connect=timeouts.connect, read=timeouts.read, write=timeouts.write, pool=timeouts.write
    )
    if _proxied(base_url):
        return httpx.Client(timeout=timeout, follow_redirects=True)
    ssl_context = httpx.create_ssl_context() if base_url.startswith("https:") else None
    return httpx.Client(
        transport=WatchedTransport(ssl_context, _Bound.local),
        timeout=timeout,
        follow_redirects=True,
    )


def _proxied(url: str) -> bool:
    import urllib.parse
    import urllib.request

    proxies = urllib.request.getproxies_environment()
    parts = urllib.parse.urlsplit(url)
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(parts.hostname or "")
