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
"""The longest message line a server may send (a base64 image is a few MB)."""
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
    def gone(self, why: str) -> None:
        """The server can no longer answer: its stdout ended, it exited, or it broke the
        protocol (`why` says which)."""
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
        why = "its stdout closed"
        try:
            async with self.read_send:
                while line := await self.stdout.readline():
                    self.events.tap("in", line)
                    try:
                        message = mcp_types.jsonrpc_message_adapter.validate_json(
                            line, by_name=False
                        )
                        item: SessionMessage | Exception = SessionMessage(message)
                    except ValueError as exc:  # not JSON-RPC: the session hears of it
                        item = exc
                    await self.read_send.send(item)
        except ValueError:  # StreamReader: a line past MAX_LINE
            why = f"it sent a line longer than {MAX_LINE >> 20} MiB"
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the session has gone
        self.events.gone(why)

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
