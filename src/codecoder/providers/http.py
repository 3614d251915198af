"""The one HTTP path: a streaming POST of JSON whose Server-Sent Events are folded by a
wire parser, with retries and a cancel that wakes a blocked read.

Threads. `stream` runs on the caller's thread (the kernel reads a provider on a reader
thread of its own and stops waiting at once on cancel). A cancel must still end that
thread promptly, even when the server has gone silent: `close()` on a socket from
another thread does not wake a thread blocked in `recv()`, `shutdown(SHUT_RDWR)` does.
So the cancel callback shuts down the request's socket (the pool names each one it is
about to use), and the reading thread, woken by the failed read, closes the response
itself.

Throughput. Servers send each SSE event as its own HTTP chunk; the pool gives the chunks
of one socket read as one piece, the SSE decoder splits it at once, and the events of one
read are coalesced (400 one-token text deltas become one TextDelta), so the kernel sees
one event per read, not per token.

Retries (DESIGN.md §7): 429, 5xx, overloaded answers and connection failures, while
nothing of the reply has been handed on; capped exponential backoff with jitter,
Retry-After honoured up to the cap; each wait ≤ 30 s, all waits of one request ≤ 120 s;
a connection refused on this machine's own address at most twice (a local server that is
not running will not start while we wait). Each retry is announced before its wait as
`StatusUpdate("retrying", "in 2.0 s (attempt 2 of 6): ollama: connection refused by
localhost:11434")`, which the kernel passes on as it is (headless: a line on stderr, a
`status_update` with `--json`). The wait is `cancel.wait`, so a cancel ends it at once.
A stream cut after part of the reply was delivered is not retried.

Cost at import: http.client (with ssl and email); an SSL context (~48 ms) only for https
endpoints, built on the first request (`pool.TrustStore`).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping

import msgspec

from codecoder import __version__
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import StatusUpdate
from codecoder.kernel.ports import (
    ProviderError,
    StreamEvent,
)
from codecoder.providers import errors
from codecoder.providers.pool import ConnectRefused, Pool, Response, TransportError, TrustStore
from codecoder.providers.sse import EventTooLarge, SSEDecoder
from codecoder.providers.wire import StreamParser

_MAX_ERROR_BODY = 64 * 1024
_MAX_GET_BODY = 16 * 1024 * 1024


class RetryPolicy(msgspec.Struct, frozen=True):
    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 30.0
    """Cap of one wait, Retry-After included."""
    max_total: float = 120.0
    """Cap of all waits of one request."""
    loopback_refused: int = 2
    """Retries after a connection refused by a loopback address."""

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
    """One attempt failed; carries the server's Retry-After when it sent one, and the most
    attempts such a failure allows when that is fewer than the policy's."""

    def __init__(
        self,
        error: ProviderError,
        retry_after: float | None = None,
        *,
        attempts: int | None = None,
    ) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after
        self.attempts = attempts


class HttpClient:
    """A keep-alive connection pool for one provider endpoint; safe to share between
    threads (sub-agents stream through the same client at once)."""

    def __init__(
        self,
        base_url: str,
        *,
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        trust: TrustStore | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.timeouts = timeouts or Timeouts()
        self._pool = Pool(
            connect=self.timeouts.connect,
            read=self.timeouts.read,
            write=self.timeouts.write,
            user_agent=f"codecoder/{__version__}",
            trust=trust,
        )
        self.trust = self._pool.trust
        """Where server certificates are checked against (`[http] ca`)."""

    def close(self) -> None:
        self._pool.close()

    def stream(
        self,
        path: str,
        body: bytes,
        *,
        headers: Mapping[str, str],
        cancel: CancelToken,
        new_parser: Callable[[], StreamParser],
        label: str,
    ) -> Generator[StreamEvent, None, None]:
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
                most = min(failure.attempts or self.retry.max_attempts, self.retry.max_attempts)
                if delivered or not error.retryable or tries >= most:
                    cause = failure.__cause__  # the transport's or parser's own exception
                    raise errors.with_label(error, label, cut=delivered, tries=tries) from cause
                delay = self.retry.delay(attempt, failure.retry_after)
                if waited + delay > self.retry.max_total:
                    raise errors.with_label(error, label, tries=tries) from failure.__cause__
                waited += delay
                detail = (
                    f"in {delay:.1f} s (attempt {tries + 1} of {most}): {label}: {error.message}"
                )
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
        watch = _Watch()
        unregister = cancel.on_cancel(watch.fire)
        try:
            response = self._pool.request("POST", url, headers=headers, body=body, watch=watch)
            try:
                _check_response(response)
                yield from _read_events(response, parser)
            finally:
                response.close()
        except TransportError as exc:
            if not cancel.is_cancelled():
                attempts = None
                if isinstance(exc, ConnectRefused) and exc.loopback:
                    attempts = self.retry.loopback_refused + 1
                raise _Failure(errors.from_exception(exc, url), attempts=attempts) from exc
        except ProviderError as exc:
            raise _Failure(exc) from exc
        finally:
            unregister()

    def get(self, path: str, *, headers: Mapping[str, str]) -> tuple[int, bytes]:
        """A plain GET (the model list, for `codecoder doctor`) of at most 16 MiB;
        raises ProviderError."""
        url = self.base_url + path
        try:
            response = self._pool.request("GET", url, headers=headers)
            try:
                body = response.read(_MAX_GET_BODY + 1)
            finally:
                response.close()
        except TransportError as exc:
            raise errors.from_exception(exc, url) from exc
        if len(body) > _MAX_GET_BODY:
            raise errors.bad_response(f"the answer from {url} is larger than 16 MiB")
        return response.status, body


def _check_response(response: Response) -> None:
    status = response.status
    if status >= 400:
        payload = response.read(_MAX_ERROR_BODY)
        error = errors.from_status(status, payload)
        raise _Failure(error, retry_after(response.headers))
    if 300 <= status < 400:
        where = response.headers.get("location", "elsewhere")
        what = f"the server answered {status}, moved to {where}: point base_url there"
        raise _Failure(ProviderError("config", what))
    content_type = response.headers.get("content-type", "")
    if "text/event-stream" not in content_type:
        first = response.read(_MAX_ERROR_BODY)[:200].decode("utf-8", "replace")
        what = f"expected an event stream, got {content_type or 'no content type'}: {first}"
        raise _Failure(errors.bad_response(what))


def _read_events(response: Response, parser: StreamParser) -> Iterator[list[StreamEvent]]:
    """One list of events per network read that completed any, then the parser's last
    events. (Text is coalesced once, by the agent loop, whatever queue it came through.)"""
    decoder = SSEDecoder()
    for chunk in response.iter_bytes():
        events: list[StreamEvent] = []
        try:
            decoded = decoder.feed(chunk)
        except EventTooLarge as exc:
            raise errors.bad_response(str(exc)) from exc
        for name, data in decoded:
            try:
                events.extend(parser.parse_event(name, data))
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                # valid JSON of a shape the wire never sends: say so, keep the detail
                what = f"unexpected event {name or ''} ({exc!r}): {data[:120]!r}"
                raise errors.bad_response(what) from exc
        if events:
            yield events
    tail = parser.finish()
    if tail:
        yield tail


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
    """The sockets of one request, shut down when the request's CancelToken flips."""

    __slots__ = ("_fired", "_lock", "_sockets")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._fired = False

    def attach(self, sock: socket.socket) -> None:
        """Called by the pool before it connects, shakes hands, sends or reads on `sock`;
        raises once cancelled."""
        with self._lock:
            if not self._fired:
                self._sockets.append(sock)
                return
        raise TransportError("cancelled")

    def check(self) -> None:
        """Raises once cancelled: before work no socket can wake (a DNS lookup)."""
        with self._lock:
            if self._fired:
                raise TransportError("cancelled")

    def detach(self, sock: socket.socket) -> bool:
        """The request is done with `sock`: False if this watch has shut it down, so the
        pool must not keep it (another request, with another token, would get it)."""
        with self._lock:
            if self._fired:
                return False
            if sock in self._sockets:
                self._sockets.remove(sock)
            return True

    def fire(self) -> None:
        with self._lock:
            self._fired = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    # the base class's method: SSLSocket.shutdown would also drop its SSL object under
    # the reading thread's feet
    with contextlib.suppress(OSError):  # already closed or never connected: nothing to wake
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
