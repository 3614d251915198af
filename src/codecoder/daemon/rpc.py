"""JSON-RPC 2.0 over a byte stream, one JSON object per line: the wire of ACP.

A `Connection` is one peer: a reader thread that frames and decodes lines and hands each
message to its handler, and a writer thread that drains a bounded outbound buffer. The
threads are the point: whoever sends (a session's broadcaster above all) only appends
bytes and never waits for a slow or dead peer. A peer whose unsent bytes (the queue and
the batch being written) pass the bound has fallen too far behind: its queue is replaced
by a last line saying so, written once the batch under way is (DROP_GRACE at most), and
the connection is closed; it can reattach. The same class serves a Unix socket and a
pair of pipes (`codecoder acp`).

A replace-style frame (a command's live output: each `tool_call_update` carries the
whole tail, and replaces the one before) is queued under a key, and the queue holds at
most one frame per key: a newer one takes the older one's place while it waits. A peer
that reads slower than a command prints is then sent the output as it is when it gets
to it, not every tail it missed, so it never falls behind for it and the bytes it is
sent stay below the output's (docs/acp.md, "Slow clients"). A frame the writer has taken
is on its way and stays as it is.

Frames are capped (MAX_FRAME): a longer line gets a JSON-RPC error and is skipped, and
the connection stays usable, as it does after malformed JSON or an unknown method.

The standard library's json encodes and decodes here, not msgspec: `codecoder acp` must
answer `initialize` before anything of a session is loaded, and msgspec alone costs
50 ms of start-up (docs/benchmarks.md, "Daemon"). The traffic, a session's updates, is
encoded once per update by the session with msgspec (session.py), into the same bytes.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import socket

PROTOCOL_VERSION = 1
"""The ACP version spoken (answered by `initialize`, which imports nothing of a session)."""
MAX_FRAME = 8 * 1024 * 1024
"""The longest line a peer may send (8 MiB)."""
MAX_OUTBOUND = 64 * 1024 * 1024
"""Unsent bytes a peer may fall behind by before it is dropped (64 MiB)."""
WRITE_BATCH = 1024 * 1024
"""Frames are written in batches of about this many bytes (at least one frame): a
dropped peer's last line waits for one batch, not for the whole backlog."""
DROP_GRACE = 5.0
"""Seconds a dropped peer has to take the batch under way and the last line; a peer that
reads nothing in that time is cut off (its writer would block for good)."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
"""ACP: what the request names does not exist (an unknown session)."""
SERVER_ERROR = INTERNAL_ERROR
"""A request that could not be done (a model that cannot start, a turn that failed).
Not -32000: ACP gives that code to "authentication required", which editors answer by
asking the user to log in."""

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class RpcError(Exception):
    """Raised by a method handler: answered as a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def encode(message: dict[str, Any]) -> bytes:
    """One frame: the message as JSON and its newline."""
    return _encode(message).encode() + b"\n"


def notification(method: str, params: Any) -> bytes:
    return encode({"jsonrpc": "2.0", "method": method, "params": params})


class LineReader(Protocol):
    """What the reader thread reads from (a socket's file, stdin's buffer)."""

    def readline(self, size: int = -1, /) -> bytes: ...


class Handler(Protocol):
    """What a connection calls on its reader thread (never blocking for long)."""

    def on_request(self, conn: Connection, request_id: Any, method: str, params: Any) -> None: ...

    def on_notification(self, conn: Connection, method: str, params: Any) -> None: ...

    def on_close(self, conn: Connection) -> None: ...


class _Queued:
    """A frame waiting to be written; one queued under a key (`replaces`) may be swapped
    for a newer frame of the same key until the writer takes it."""

    __slots__ = ("frame", "key")

    def __init__(self, frame: bytes, key: Hashable | None) -> None:
        self.frame = frame
        self.key = key


ResponseCallback = Callable[[Any, "RpcError | None"], None]
"""Called with (result, None) or (None, error) when the peer answers a request of ours."""


class Connection:
    def __init__(
        self,
        reader: LineReader,
        write: Callable[[bytes], None],
        handler: Handler,
        *,
        name: str = "peer",
        close_transport: Callable[[], None] = lambda: None,
        max_outbound: int = MAX_OUTBOUND,
    ) -> None:
        self.name = name
        self._reader = reader
        self._write = write
        self._handler = handler
        self._close_transport = close_transport
        self._max_outbound = max_outbound
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._outbound: deque[_Queued] = deque()
        self._replaceable: dict[Hashable, _Queued] = {}
        """The queued frame of each key, while the writer has not taken it."""
        self._queued = 0
        self._closing = False
        self._shut = False
        self._closed = threading.Event()
        self._cutoff: threading.Timer | None = None
        self._last_word: RpcError | None = None
        """An error the peer sent for no request of ours (`id: null`), when nothing came
        after it: why it closed the connection, if it then does."""
        self._ids = itertools.count(1)
        self._waiting: dict[int, ResponseCallback] = {}
        self._threads = [
            threading.Thread(target=self._read_loop, name=f"rpc-read-{name}", daemon=True),
            threading.Thread(target=self._write_loop, name=f"rpc-write-{name}", daemon=True),
        ]
        self.dropped = False
        """Dropped for falling too far behind (it may reattach)."""

    @classmethod
    def over_socket(cls, sock: socket.socket, handler: Handler, **kwargs: Any) -> Connection:
        import socket

        reader: Any = sock.makefile("rb", buffering=65536)

        def close() -> None:
            for step in (lambda: sock.shutdown(socket.SHUT_RDWR), reader.close, sock.close):
                with contextlib.suppress(OSError):
                    step()

        return cls(reader, sock.sendall, handler, close_transport=close, **kwargs)

    def start(self) -> None:
        """The writer first: a reader that meets the end of its input at once closes the
        connection, which waits for the writer."""
        for thread in reversed(self._threads):
            thread.start()

    # --- sending ---------------------------------------------------------------------

    def send_bytes(self, frame: bytes, *, replaces: Hashable | None = None) -> bool:
        """Queue a frame; False when the connection is closing. Never blocks. With
        `replaces`, a frame of that key still waiting in the queue is replaced in place
        by this one (a newer state of the same thing: it goes out where the older would
        have), else this one is queued under the key."""
        with self._lock:
            if self._closing:
                return False
            waiting = self._replaceable.get(replaces) if replaces is not None else None
            growth = len(frame) - (len(waiting.frame) if waiting is not None else 0)
            if self._queued + growth > self._max_outbound:
                self._drop_locked()
                return False
            if waiting is not None:
                waiting.frame = frame
            else:
                queued = _Queued(frame, replaces)
                self._outbound.append(queued)
                if replaces is not None:
                    self._replaceable[replaces] = queued
            self._queued += growth
            self._ready.notify()
        return True

    def notify(self, method: str, params: Any) -> bool:
        return self.send_bytes(notification(method, params))

    def respond(self, request_id: Any, result: Any) -> bool:
        return self.send_bytes(encode({"jsonrpc": "2.0", "id": request_id, "result": result}))

    def error(self, request_id: Any, code: int, message: str, data: Any = None) -> bool:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        return self.send_bytes(encode({"jsonrpc": "2.0", "id": request_id, "error": error}))

    def request(self, method: str, params: Any, on_response: ResponseCallback) -> int | None:
        """Send a request; `on_response` runs on the reader thread when it is answered,
        or with an error when the connection closes first. None when closing."""
        request_id = next(self._ids)
        with self._lock:
            if self._closing:
                return None
            self._waiting[request_id] = on_response
        frame = encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        if not self.send_bytes(frame):
            return None
        return request_id

    def _drop_locked(self) -> None:
        """Too far behind: replace the backlog with one notice, then close, or cut the
        peer off if it takes nothing within DROP_GRACE."""
        self.dropped = True
        self._queued -= sum(len(queued.frame) for queued in self._outbound)
        self._outbound.clear()
        self._replaceable.clear()
        notice = notification(
            "_codecoder/dropped",
            {"reason": f"fell more than {self._max_outbound} bytes behind; reattach to go on"},
        )
        self._outbound.append(_Queued(notice, None))
        self._queued += len(notice)
        self._closing = True
        self._ready.notify()
        self._cutoff = threading.Timer(DROP_GRACE, self._close_transport)
        self._cutoff.name = f"rpc-cutoff-{self.name}"
        self._cutoff.daemon = True
        self._cutoff.start()

    # --- the threads -------------------------------------------------------------------

    def _write_loop(self) -> None:
        while True:
            with self._lock:
                while not self._outbound and not self._closing:
                    self._ready.wait()
                if not self._outbound:
                    break
                frames: list[bytes] = []
                size = 0
                while self._outbound and (not frames or size < WRITE_BATCH):
                    queued = self._outbound.popleft()
                    if queued.key is not None:  # taken: a newer frame queues anew
                        del self._replaceable[queued.key]
                    frames.append(queued.frame)
                    size += len(queued.frame)
            try:
                self._write(b"".join(frames))
            except (OSError, ValueError):
                break
            finally:
                with self._lock:
                    self._queued -= size  # counted until written: the bound holds it too
        self.close()

    def _read_loop(self) -> None:
        try:
            while not self._closed.is_set():
                line = self._reader.readline(MAX_FRAME + 1)
                if not line:
                    break
                if len(line) > MAX_FRAME and not line.endswith(b"\n"):
                    self._skip_rest_of_line()
                    self.error(None, INVALID_REQUEST, f"a frame is longer than {MAX_FRAME} bytes")
                    continue
                if line.strip():
                    self._dispatch(line)
        except (OSError, ValueError):
            pass
        finally:
            self.close()

    def _skip_rest_of_line(self) -> None:
        while True:
            chunk = self._reader.readline(MAX_FRAME)
            if not chunk or chunk.endswith(b"\n"):
                return

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, nested too deep
            self.error(None, PARSE_ERROR, f"not JSON: {exc}")
            return
        self._last_word = None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
            return
        method = message.get("method")
        if method is None:
            self._on_response(message)
        elif not isinstance(method, str):
            self.error(message.get("id"), INVALID_REQUEST, "the method is not a string")
        elif "id" in message:
            self._handler.on_request(self, message["id"], method, message.get("params"))
        else:
            self._handler.on_notification(self, method, message.get("params"))

    def _on_response(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        error = message.get("error")
        failure = None
        if isinstance(error, dict):
            failure = RpcError(int(error.get("code", SERVER_ERROR)), str(error.get("message")))
        with self._lock:
            callback = self._waiting.pop(request_id, None) if isinstance(request_id, int) else None
        if request_id is None:
            self._last_word = failure
        if callback is None:
            return  # an answer to nothing we asked (or asked of someone else): ignored
        if failure is None:
            callback(message.get("result"), None)
        else:
            callback(None, failure)

    # --- closing -------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def last_word(self) -> RpcError | None:
        """The error the peer sent for no request before it closed (a daemon out of files
        turning a client away), if it did."""
        return self._last_word

    def close(self) -> None:
        """Stop both threads (queued frames are written first) and tell the handler."""
        with self._lock:
            if self._shut:
                return
            self._shut = True
            self._closing = True
            self._ready.notify()
            waiting = list(self._waiting.values())
            self._waiting.clear()
            cutoff = self._cutoff
        writer = self._threads[1]
        if writer.ident is not None and writer is not threading.current_thread():
            writer.join(timeout=2.0)
        self._closed.set()
        self._close_transport()
        if cutoff is not None:
            cutoff.cancel()
            if cutoff is not threading.current_thread():
                cutoff.join()
        gone = self._last_word or RpcError(SERVER_ERROR, "the connection closed")
        for callback in waiting:
            callback(None, gone)
        self._handler.on_close(self)

    def join(self, timeout: float | None = None) -> None:
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)
