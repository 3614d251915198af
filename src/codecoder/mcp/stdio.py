"""The stdio transport: a server as a child process, one JSON-RPC message per line on its
stdin and stdout (imported on the loop thread only).

Ours rather than the SDK's `stdio_client` because the manager needs what that one keeps
to itself: the process id (to kill a server still starting at once when we leave, and for
`codecoder mcp list`), the stderr tail (a failure is reported with it), the moment the
process exits (a server that died is restarted at the next call), and the exit status.
The message types and the session on top are the SDK's.

The child (process.ChildProcess, spawned before the SDK is imported) runs in a process
group of its own. Stopping follows the MCP lifecycle: close its stdin, wait GRACE, SIGTERM
the group, wait GRACE, SIGKILL the group; a server still starting when we leave is
SIGKILLed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
from collections.abc import AsyncIterator, Callable
from typing import Protocol

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from codecoder.mcp.process import ChildProcess

GRACE = 1.0
KILL_WAIT = 2.0
MAX_LINE = 32 * 1024 * 1024
"""The longest message line a server may send (a base64 image is a few MB). A longer
one is read past and dropped (see `Overlong`)."""
SKIPPED = "codecoder: a line over MAX_LINE was dropped"
"""The `data` of the error that answers a call whose answer was too long, so that the
session can tell it from an error the server sent."""
MAX_BACKLOG = 64 * 1024 * 1024
"""Bytes written to a server that is not reading its stdin before it counts as broken."""
QUEUED = 64
"""Messages each way that wait in the memory streams rather than in a hand-over (the
SDK's own stdio client hands over one at a time, an extra loop iteration per message each
way: bench/bench_mcp.py measured 4.9 ms of overhead per call with it, 3.4 ms without)."""

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


class Events(Protocol):
    """What the transport tells its owner (the runner, on the loop thread)."""

    def stderr(self, data: bytes) -> None: ...
    def gone(self, why: str, *, crash: bool = True) -> None:
        """The server can no longer answer: its stdout ended, it exited, or it broke the
        protocol (`why` says which). `crash` False: it did not crash, the transport
        could not take what it sent (a restart for it is not one of its restarts)."""
        ...

    def kill_now(self) -> bool:
        """True when stopping must not wait (we are leaving and it never got ready)."""
        ...

    def tap(self, direction: str, line: bytes) -> None:
        """Every raw line, "out" to the server and "in" from it (tests, debugging)."""
        ...


class _StderrTail(asyncio.Protocol):
    def __init__(self, events: Events) -> None:
        self._events = events
        self.closed = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self._events.stderr(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


_ID = rb'(-?\d+|"[^"\\]*")'
_HEAD_ID = re.compile(
    rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*'
    + _ID
    + rb'\s*,\s*"(?:result|error)"\s*:'
)
_HEAD_RESULT = re.compile(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(?:result|error)"\s*:')
_TAIL_ID = re.compile(
    rb'[{,]\s*"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*\Z'
)


class Overlong:
    """A line longer than MAX_LINE, read past: its size, and its first and last bytes,
    from which `answered` finds the request it answers without parsing the whole line.

    The two SDKs most servers use put a response's top-level `id` where these find it:
    Python's `{"jsonrpc":"2.0","id":7,"result":…}` at the start, TypeScript's
    `{"result":…,"jsonrpc":"2.0","id":7}` at the end. A top-level key is found for sure
    there: inside a string every quote is escaped, and the object's last `}` closes the
    top level. A line they do not fit (a notification, a request of the server's) is
    answered by nobody, so the connection ends instead."""

    KEEP = 512

    def __init__(self) -> None:
        self.size = 0
        self.head = b""
        self.tail = b""

    def add(self, data: bytes) -> None:
        self.size += len(data)
        if len(self.head) < self.KEEP:
            self.head += data[: self.KEEP - len(self.head)]
        self.tail = (self.tail + data[-self.KEEP :])[-self.KEEP :]

    def mib(self) -> str:
        return f"{self.size / (1 << 20):.0f} MiB"

    def answered(self) -> int | str | None:
        """The id of the request this line is the response to, if it says so."""
        found = _HEAD_ID.match(self.head)
        if found is None and _HEAD_RESULT.match(self.head):
            found = _TAIL_ID.search(self.tail)
        if found is None:
            return None
        value = json.loads(found.group(1))
        return value if isinstance(value, int | str) else None

    def answer(self, request: int | str) -> mcp_types.JSONRPCError:
        """The error that answers `request` in place of the line, for the session."""
        text = (
            f"the server's answer was a line of {self.mib()}, longer than the "
            f"{MAX_LINE >> 20} MiB CodeCoder reads; it was dropped (the server is still "
            "running). Ask for less at a time."
        )
        error = mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message=text, data=SKIPPED)
        return mcp_types.JSONRPCError(jsonrpc="2.0", id=request, error=error)


class _Pipes:
    """The child's three pipes on the loop, and the two message streams of the session."""

    def __init__(self, child: ChildProcess, events: Events) -> None:
        self.child, self.events = child, events
        self.stdout = asyncio.StreamReader(limit=MAX_LINE)
        self.read_send, self.read_recv = anyio.create_memory_object_stream[
            SessionMessage | Exception
        ](QUEUED)
        self.write_send, self.write_recv = anyio.create_memory_object_stream[SessionMessage](QUEUED)
        self.transports: list[asyncio.BaseTransport] = []

    async def connect(self, loop: asyncio.AbstractEventLoop) -> None:
        proc = self.child.proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        out, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(self.stdout), proc.stdout
        )
        self.transports.append(out)
        err, self.stderr = await loop.connect_read_pipe(
            lambda: _StderrTail(self.events), proc.stderr
        )
        self.transports.append(err)
        self.stdin, _ = await loop.connect_write_pipe(asyncio.Protocol, proc.stdin)
        self.transports.append(self.stdin)

    async def read_stdout(self) -> None:
        why, crash = "its stdout closed", True
        try:
            async with self.read_send:
                while line := await self._line():
                    item: SessionMessage | Exception
                    if isinstance(line, Overlong):
                        request = line.answered()
                        if request is None:
                            why, crash = (
                                f"it sent a line of {line.mib()}, longer than the "
                                f"{MAX_LINE >> 20} MiB CodeCoder reads (not an answer)",
                                False,
                            )
                            break
                        item = SessionMessage(line.answer(request))
                    else:
                        self.events.tap("in", line)
                        try:
                            message = mcp_types.jsonrpc_message_adapter.validate_json(
                                line, by_name=False
                            )
                            item = SessionMessage(message)
                        except ValueError as exc:  # not JSON-RPC: the session hears of it
                            item = exc
                    await self.read_send.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the session has gone
        self.events.gone(why, crash=crash)

    async def _line(self) -> bytes | Overlong:
        """The next line (b"" at the end), or one past MAX_LINE read to its end."""
        try:
            return await self.stdout.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # the end: what came after the last line
            return exc.partial
        except asyncio.LimitOverrunError as exc:
            consumed = exc.consumed  # the bytes before the newline, or all buffered
        long = Overlong()
        while True:
            long.add(await self.stdout.readexactly(consumed))
            try:
                long.add(await self.stdout.readuntil(b"\n"))
            except asyncio.IncompleteReadError as exc:
                long.add(exc.partial)
            except asyncio.LimitOverrunError as exc:
                consumed = exc.consumed
                continue
            return long

    async def write_stdin(self) -> None:
        async with self.write_recv:
            async for message in self.write_recv:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                line = data.encode() + b"\n"
                self.events.tap("out", line)
                if self.stdin.is_closing():
                    break  # the session's next send fails: the connection is closed
                if self.stdin.get_write_buffer_size() > MAX_BACKLOG:
                    self.events.gone(f"it stopped reading its stdin ({MAX_BACKLOG >> 20} MiB)")
                    break
                self.stdin.write(line)

    async def watch_exit(self) -> None:
        await self.child.exited.wait()
        self.events.gone(f"it exited ({self.child.how()})")

    def close(self) -> None:
        for transport in self.transports:
            transport.close()
        self.read_recv.close()
        self.write_send.close()


@contextlib.asynccontextmanager
async def open_stdio(child: ChildProcess, events: Events) -> AsyncIterator[Streams]:
    """Yield the message streams of a spawned server, which the SDK's ClientSession
    takes; on exit, stop the child (shielded, bounded) and close every pipe."""
    loop = asyncio.get_running_loop()
    pipes = _Pipes(child, events)
    try:
        await pipes.connect(loop)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pipes.read_stdout)
            tasks.start_soon(pipes.write_stdin)
            tasks.start_soon(pipes.watch_exit)
            try:
                yield pipes.read_recv, pipes.write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(child, pipes.stdin, kill_now=events.kill_now())
                    with anyio.move_on_after(GRACE):  # the last of its stderr
                        await pipes.stderr.closed.wait()
                tasks.cancel_scope.cancel()
    finally:
        if not child.exited.is_set():  # connecting the pipes failed: do not leave it
            child.signal_group(signal.SIGKILL)
        pipes.close()


async def _stop(child: ChildProcess, stdin: asyncio.WriteTransport, *, kill_now: bool) -> None:
    """End the server as the MCP lifecycle says (see the module's docstring), then SIGKILL
    whatever is left of its process group."""
    steps: list[tuple[Callable[[], None], float]] = [
        (lambda: child.signal_group(signal.SIGTERM), GRACE),
        (lambda: child.signal_group(signal.SIGKILL), KILL_WAIT),
    ]
    if kill_now:
        steps = steps[1:]
    else:
        steps.insert(0, (stdin.close, GRACE))
    for act, wait in steps:
        if child.exited.is_set():
            break
        act()
        with anyio.move_on_after(wait):
            await child.exited.wait()
    child.signal_group(signal.SIGKILL)  # a child it left behind in its group
    stdin.close()
