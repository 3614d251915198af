"""McpManager: the thread-safe facade over the MCP event-loop thread (docs/mcp.md).

The kernel sees a `kernel.ports.ToolSource`: `tools()` (what to offer the next request)
and `notices()` (status lines, each given once). Its McpTools call back into `call`, on
the agent's thread.

Each configured server is a `Slot`, shared by both threads under its condition variable:
the loop thread reports what its run does (spawned, ready, failed, ended), the kernel
thread reads it and waits on it. A run has a generation number; a report of an older run
is ignored. States:

    starting ─► ready ─► exited   (it died: the next call restarts it, at most
       │          │                MAX_RESTARTS times a session)
       ▼          ▼
    failed     stopped            (it never came up / we stopped it: no restart)

Servers start in the background when the manager starts: the tools a server offered last
time (cache.py) are offered at once, and a call of one waits for the server, up to its
`startup_timeout`, cancellably. Cancel returns at once: the call's cancel scope is
cancelled on the loop, and the SDK tells the server (`notifications/cancelled`). `close`
SIGKILLs servers still starting (it does not wait for them), stops the others as MCP
says, and joins the loop thread.

A stdio server whose spec is `confined` (a project's, by default) runs in the session's
`sandbox`, decided at each run as a hook's is (`Sandbox.confine_started`:
docs/sandbox.md). Without a sandbox (tests, replay) every server runs on
the host.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.kernel.events import StatusUpdate
from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import (
    ProviderClient,
    ProviderRequest,
    StreamEvent,
    ToolContext,
)
from codecoder.mcp import cache
from codecoder.mcp.config import Selection, ServerSpec
from codecoder.mcp.entry import ToolEntry
from codecoder.mcp.loop import LoopClosed, LoopThread
from codecoder.mcp.tools import McpTool, exposed_names
from codecoder.sandbox import SandboxUnavailable

if TYPE_CHECKING:
    import asyncio
    import concurrent.futures

    from codecoder.mcp.process import ChildProcess
    from codecoder.mcp.session import CallResult, Connection
    from codecoder.sandbox.runtime import Sandbox, Wrapper

MAX_RESTARTS = 3
TAIL_BYTES = 4096
TAIL_LINES = 3
CLOSE_WAIT = 6.0
"""How long `close` waits for the loop thread (a server's stop takes at most ~4 s)."""
LOST_WAIT = 2.0
"""How long a call whose server went away waits to learn how it ended."""

Status = Literal["starting", "ready", "failed", "exited", "stopped"]
Tap = Callable[[str, str, bytes], None]
"""(server, "in" | "out", raw line): every message line of a stdio server."""


class ServerInfo(msgspec.Struct, frozen=True):
    """One server as `codecoder mcp list` shows it."""

    name: str
    origin: str
    transport: str
    target: str
    status: str
    detail: str = ""
    tools: tuple[str, ...] = ()
    """The exposed names (`mcp__SERVER__TOOL`)."""
    restarts: int = 0
    pid: int | None = None
    where: str = ""
    """Where its last run was started: "on the host", "in the sandbox (MODE)"; empty for
    one not started and an HTTP server."""


class CallHandle:
    """One call as both threads see it. The loop attaches the call's cancel scope and
    `cancel` (run on the loop) cancels it; progress goes to the tool's output only until
    the kernel `close`s the handle, so nothing of the call follows its ToolFinished."""

    def __init__(self, ctx: ToolContext) -> None:
        self._ctx = ctx
        self._lock = threading.Lock()
        self._open = True
        self._cancelled = False  # the loop thread's fields
        self._scope: Any = None

    def attach(self, scope: Any) -> bool:
        """On the loop: False when the call was cancelled before it started."""
        if self._cancelled:
            return False
        self._scope = scope
        return True

    def cancel(self) -> None:
        """On the loop."""
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()

    def progress(self, text: str) -> None:
        with self._lock:
            if self._open:
                self._ctx.output(text)

    def close(self) -> None:
        with self._lock:
            self._open = False


class Slot:
    """One configured server, shared by the loop thread (which reports through the
    methods marked "loop") and the kernel's threads (which read and wait under `cond`)."""

    def __init__(self, manager: McpManager, spec: ServerSpec) -> None:
        self.spec = spec
        self.cond = threading.Condition()
        self.status: Status = "starting"
        self.detail = ""
        self.generation = 0
        self.connection: Connection | None = None
        self.tools: tuple[McpTool, ...] = ()
        self.names: frozenset[str] = frozenset()
        """The server's own tool names, once it has listed them (cached ones until then)."""
        self.restarts = 0
        self.uncounted = False
        """The last run ended without a crash (the transport could not take what it
        sent): its restart is not one of the MAX_RESTARTS."""
        self.pid: int | None = None
        self.where = ""
        self._manager = manager
        self._tail = bytearray()
        self._over: asyncio.Event | None = None
        self._stop_requested = False

    # --- kernel side (called with `cond` held) -------------------------------------------

    def launch(self) -> None:
        """Start a new run (its reports carry the new generation); none once closing."""
        if self._manager.closing:
            self.status, self.detail = "stopped", "the session ended before it started"
            return
        self.generation += 1
        self.status, self.detail, self.pid, self.connection = "starting", "", None, None
        self._tail.clear()
        self._over, self._stop_requested = None, False
        self._manager.loop.call(self._manager.run_on_loop, self, self.generation)

    def request_stop(self) -> None:
        """End the current run (through the loop: the run's event lives there)."""
        self._stop_requested = True
        self._manager.loop.call(self._set_over, self.generation)

    def tail_text(self) -> str:
        """The last TAIL_LINES lines of the server's stderr, as one line."""
        text = self._tail.decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return f"; stderr: {' | '.join(lines[-TAIL_LINES:])}" if lines else ""

    def info(self) -> ServerInfo:
        spec = self.spec
        return ServerInfo(
            name=spec.name,
            origin=spec.origin,
            transport=spec.transport,
            target=spec.describe(),
            status=self.status,
            detail=self.detail,
            tools=tuple(tool.name for tool in self.tools),
            restarts=self.restarts,
            pid=self.pid,
            where=self.where,
        )

    # --- loop side -----------------------------------------------------------------------

    def attach(self, generation: int, over: asyncio.Event) -> bool:
        """(loop) The run's event; False when the run is no longer wanted."""
        with self.cond:
            if generation != self.generation:
                return False
            self._over = over
            if self._stop_requested:
                over.set()
            return True

    def _set_over(self, generation: int) -> None:
        """(loop)"""
        with self.cond:
            over = self._over if generation == self.generation else None
        if over is not None:
            over.set()

    def placed(self, generation: int, where: str) -> None:
        """(loop) Where the run is started (before the spawn: a spawn that fails says
        where it was tried)."""
        with self.cond:
            if generation == self.generation:
                self.where = where

    def spawned(self, generation: int, pid: int) -> None:
        """(loop)"""
        with self.cond:
            if generation == self.generation:
                self.pid = pid

    def stderr(self, generation: int, data: bytes) -> None:
        """(loop)"""
        with self.cond:
            if generation == self.generation:
                self._tail += data
                del self._tail[:-TAIL_BYTES]

    def ready(self, generation: int, connection: Connection, tools: tuple[ToolEntry, ...]) -> None:
        """(loop) Remembered for the next session first, then offered."""
        cache.remember(self.spec.cache_key(), tools)
        with self.cond:
            if generation != self.generation or self.status != "starting":
                return
            self.status, self.connection = "ready", connection
            self._offer(tools)
            self.cond.notify_all()
        self._manager.tools_changed()

    def relisted(self, generation: int, tools: tuple[ToolEntry, ...]) -> None:
        """(loop) The server said its tools changed (`notifications/tools/list_changed`)."""
        with self.cond:
            if generation != self.generation or self.status != "ready":
                return
            self._offer(tools)
        self._manager.tools_changed()
        cache.remember(self.spec.cache_key(), tools)

    def failed(self, generation: int, reason: str) -> None:
        """(loop) It never came up."""
        with self.cond:
            if generation != self.generation:
                return
            self.status, self.connection, self.pid = "failed", None, None
            self.detail = f"failed to start: {reason}{self.tail_text()}"
            self.tools, self.names = (), frozenset()
            quiet = self._stop_requested
            self.cond.notify_all()
        if not quiet:
            self._manager.notice(f"MCP server {self.spec.name} {self.detail}")
        self._manager.tools_changed()

    def ended(self, generation: int, how: str, *, crash: bool = True) -> None:
        """(loop) A run that was ready has ended: stopped by us, or the server went away
        (its tools stay offered: the next call restarts it, as one of its restarts if it
        crashed)."""
        with self.cond:
            if generation != self.generation:
                return
            stopped = self._stop_requested and not self._manager.lost(self)
            self.status = "stopped" if stopped else "exited"
            self.uncounted = not crash
            self.detail = f"{how}{self.tail_text()}"
            self.connection, self.pid = None, None
            self.cond.notify_all()
        if not stopped and not self._manager.closing:
            self._manager.notice(f"MCP server {self.spec.name} stopped ({self.detail})")

    def leaving(self) -> bool:
        """(loop)"""
        return self._manager.closing

    def tap(self, direction: str, line: bytes) -> None:
        """(loop)"""
        if self._manager.tap is not None:
            self._manager.tap(self.spec.name, direction, line)

    def _offer(self, entries: tuple[ToolEntry, ...]) -> None:
        """The McpTools for a listing (`cond` held)."""
        wanted = [entry for entry in entries if self.spec.wants(entry.name)]
        names = exposed_names(self.spec.name, [entry.name for entry in wanted])
        self.tools = tuple(
            McpTool(self._manager, self.spec.name, entry, names[entry.name]) for entry in wanted
        )
        self.names = frozenset(entry.name for entry in entries)


class McpManager:
    """The MCP servers of one session (a kernel.ports.ToolSource)."""

    def __init__(
        self, selection: Selection, *, tap: Tap | None = None, sandbox: Sandbox | None = None
    ) -> None:
        self.selection = selection
        self.tap = tap
        self.sandbox = sandbox
        self.loop = LoopThread(self._main, name="mcp-loop")
        self.closing = False
        self._lock = threading.Lock()
        self._slots = {spec.name: Slot(self, spec) for spec in selection.servers}
        self._offered: tuple[McpTool, ...] = ()
        self._notices: list[StatusUpdate] = []
        self._lost: set[tuple[str, int]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed_event: asyncio.Event | None = None
        self._started = False
        self._deferred = False
        self._switch = _SwitchInterval()

    # --- ToolSource ----------------------------------------------------------------------

    def tools(self) -> Sequence[McpTool]:
        return self._offered

    def notices(self) -> Sequence[StatusUpdate]:
        with self._lock:
            taken, self._notices = self._notices, []
        return taken

    # --- life ----------------------------------------------------------------------------

    def start(self, *, now: bool = True) -> None:
        """Offer the cached tools, and start every server in the background: now, or
        (`now` False) once `begin` is called: at the first event of the session's first
        reply when the provider goes through `gate` (the request is out by then: the
        servers' start-up, a second of CPU and more, never delays it), or at the first
        call of one of their tools, whichever comes first."""
        for spec, why in self.selection.left_out:
            if why.startswith("project server"):
                self.notice(f"MCP server {spec.name} not started: {why}")
        found, problem = cache.lookup(slot.spec.cache_key() for slot in self._slots.values())
        if problem is not None:
            self.notice(problem)
        for slot in self._slots.values():
            cached = found.get(slot.spec.cache_key())
            with slot.cond:
                if cached is not None:
                    slot._offer(cached)
                    slot.names = frozenset()  # known only once the server has listed them
        self.tools_changed()
        if not self._slots:
            return
        self._deferred = True
        if now:
            self.begin()

    def gate(self, provider: ProviderClient) -> ProviderClient:
        """`provider`, starting the deferred servers at the first event it streams."""
        return _BeginOnFirstEvent(provider, self)

    def begin(self) -> None:
        """Start the servers now if `start` deferred them (once; never after `close`)."""
        if not self._deferred:
            return
        with self._lock:
            if not self._deferred or self.closing:
                return
            self._deferred, self._started = False, True
        self._switch.lower()
        self.loop.start()
        for slot in self._slots.values():
            with slot.cond:
                slot.launch()

    def close(self) -> None:
        """Kill the servers still starting at once (SIGKILL to their process groups, from
        this thread: the loop may be busy importing the SDK), stop the others as MCP says
        and wait for that (at most CLOSE_WAIT). When no server was ready there is nothing
        to wait for: the loop thread then ends on its own (`join` waits for it)."""
        with self._lock:
            if self.closing:
                return
            self.closing = True
        graceful = False
        for slot in self._slots.values():
            with slot.cond:
                if slot.status == "starting" and slot.pid is not None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(slot.pid, signal.SIGKILL)
                graceful = graceful or slot.status == "ready"
                if self._started:
                    slot.request_stop()
                slot.cond.notify_all()  # calls waiting for it see `closing`
        if self._started:
            self.loop.call(self._wake_main)
            if graceful:
                self.loop.join(CLOSE_WAIT)
        self._switch.restore()

    def join(self, timeout: float = CLOSE_WAIT) -> bool:
        """Wait for the loop thread to end (after `close`); False if it has not."""
        return self.loop.join(timeout)

    def statuses(self) -> list[ServerInfo]:
        """Every configured server, started or left out, in config order."""
        out: list[ServerInfo] = []
        for slot in self._slots.values():
            with slot.cond:
                out.append(slot.info())
        for spec, why in self.selection.left_out:
            status = "disabled" if why.startswith("disabled") else "not started"
            out.append(
                ServerInfo(spec.name, spec.origin, spec.transport, spec.describe(), status, why)
            )
        return out

    def wait_settled(self, timeout: float) -> None:
        """Wait until no server is starting (or `timeout`): for `codecoder mcp list`."""
        self.begin()
        deadline = time.monotonic() + timeout
        for slot in self._slots.values():
            with slot.cond:
                while slot.status == "starting" and (left := deadline - time.monotonic()) > 0:
                    slot.cond.wait(left)

    # --- the call path (the agent's thread) ----------------------------------------------

    def call(self, tool: McpTool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run `tool` on its server: wait for it if it is starting, restart it if it died
        (MAX_RESTARTS), return at once on cancel (raising Cancelled)."""
        slot = self._slots[tool.server]
        self.begin()
        ready = self._ready(slot, ctx)
        if isinstance(ready, str):
            return tool_result(ctx.call_id, ready, "error")
        connection, generation, names = ready
        if tool.mcp_name not in names:
            known = ", ".join(sorted(names)) or "none"
            what = f"MCP server {slot.spec.name} has no tool {tool.mcp_name!r} (now: {known})"
            return tool_result(ctx.call_id, what, "error")
        handle = CallHandle(ctx)
        try:
            coro = connection.call(tool.mcp_name, args, slot.spec.tool_timeout, handle)
            future = self.loop.submit(coro)
            outcome = self._wait(future, handle, ctx.cancel)
        except LoopClosed:
            return tool_result(ctx.call_id, "the MCP client has shut down", "error")
        finally:
            handle.close()
        if outcome is None:  # cancelled on the loop (only we cancel)
            raise Cancelled("cancelled")
        if outcome.lost:
            return tool_result(ctx.call_id, self._went_away(slot, generation), "error")
        return tool_result(ctx.call_id, outcome.text, "error" if outcome.error else "success")

    def _ready(self, slot: Slot, ctx: ToolContext) -> tuple[Connection, int, frozenset[str]] | str:
        """The live connection, or why there is none (a line for the model)."""
        name, spec = slot.spec.name, slot.spec
        deadline: float | None = None
        with slot.cond:
            while True:
                if self.closing:
                    return "the MCP client is shutting down"
                if slot.status == "ready" and slot.connection is not None:
                    return slot.connection, slot.generation, slot.names
                if slot.status == "exited":
                    if not slot.uncounted and slot.restarts >= MAX_RESTARTS:
                        return (
                            f"MCP server {name} stopped ({slot.detail}) and was restarted "
                            f"{MAX_RESTARTS} times already this session"
                        )
                    slot.restarts += 0 if slot.uncounted else 1
                    slot.launch()
                    continue
                if slot.status != "starting":
                    return f"MCP server {name} is not available: it {slot.detail}"
                now = time.monotonic()
                if deadline is None:
                    deadline = now + spec.startup_timeout
                    ctx.emit(StatusUpdate("running_tool", f"waiting for MCP server {name}", "mcp"))
                if now >= deadline:
                    return f"MCP server {name} did not start within {spec.startup_timeout:g} s"
                _wait_cancellable(slot.cond, deadline - now, ctx.cancel)

    def _wait(
        self,
        future: concurrent.futures.Future[CallResult | None],
        handle: CallHandle,
        cancel: CancelToken,
    ) -> CallResult | None:
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        unregister = cancel.on_cancel(done.set)
        try:
            done.wait()
        finally:
            unregister()
        if not future.done():  # cancelled: the server is told, we do not wait for it
            self.loop.call(handle.cancel)
            raise Cancelled(cancel.reason)
        import concurrent.futures  # loaded with asyncio by now; not on the start-up path

        try:
            return future.result()
        except concurrent.futures.CancelledError as exc:  # the loop shut down under it
            raise LoopClosed("the MCP client has shut down") from exc

    def _went_away(self, slot: Slot, generation: int) -> str:
        """The line for a call whose server went away, once the run has ended (an HTTP
        run that did not notice is ended here)."""
        name = slot.spec.name
        with slot.cond:
            if slot.generation == generation and slot.status == "ready":
                with self._lock:
                    self._lost.add((name, generation))
                slot.request_stop()
            deadline = time.monotonic() + LOST_WAIT
            while slot.generation == generation and slot.status == "ready":
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                slot.cond.wait(left)
            detail = slot.detail or "the connection was lost"
            left_over = MAX_RESTARTS - slot.restarts
            uncounted = slot.uncounted and slot.generation == generation
        if uncounted:
            after = "it is restarted at the next call (it did not crash: not counted)"
        elif left_over > 0:
            after = (
                f"it is restarted at the next call (restart {MAX_RESTARTS - left_over + 1} of "
                f"{MAX_RESTARTS})"
            )
        else:
            after = "it was restarted too often to be restarted again this session"
        return f"MCP server {name} stopped during the call ({detail}); {after}"

    # --- shared --------------------------------------------------------------------------

    def lost(self, slot: Slot) -> bool:
        """Whether we ended `slot`'s current run because its connection was lost (so it
        counts as exited, not stopped)."""
        with self._lock:
            return (slot.spec.name, slot.generation) in self._lost

    def notice(self, text: str) -> None:
        with self._lock:
            self._notices.append(StatusUpdate("idle", text, "mcp"))  # the loop says its state

    def tools_changed(self) -> None:
        offered: list[McpTool] = []
        for slot in self._slots.values():
            with slot.cond:
                offered.extend(slot.tools)
        with self._lock:
            self._offered = tuple(offered)

    # --- the loop thread ----------------------------------------------------------------

    async def _main(self) -> None:
        import asyncio

        self._closed_event = asyncio.Event()  # before the first await: see _wake_main
        if not self.closing:
            await self._closed_event.wait()
        if self._tasks:  # the runs were told to stop; their stops are bounded
            await asyncio.wait(list(self._tasks), timeout=CLOSE_WAIT - 1)

    def _wake_main(self) -> None:
        if self._closed_event is not None:
            self._closed_event.set()

    def run_on_loop(self, slot: Slot, generation: int) -> None:
        """(loop) Start a run of `slot` as a task of its own."""
        import asyncio

        task = asyncio.get_running_loop().create_task(self._run(slot, generation))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, slot: Slot, generation: int) -> None:
        import asyncio

        over = asyncio.Event()
        if not slot.attach(generation, over):
            return
        child: ChildProcess | None = None
        if slot.spec.transport == "stdio":
            from codecoder.mcp.process import ChildProcess

            try:  # spawned first: the server starts while the SDK is imported
                wrap = self._wrapper(slot, generation)
                child = ChildProcess(slot.spec, asyncio.get_running_loop(), wrap)
            except (OSError, ValueError, SandboxUnavailable) as exc:
                self._switch.restore()
                slot.failed(generation, _spawn_error(slot.spec, exc))
                return
            slot.spawned(generation, child.pid)
        try:
            from codecoder.mcp import session
        except ImportError as exc:  # an install without the SDK
            if child is not None:
                child.abandon()
            slot.failed(generation, f"the MCP SDK cannot be loaded ({exc}); pip install mcp")
            return
        finally:
            self._switch.restore()  # the heavy part, the SDK's import, is over
        await session.run(slot, generation, over, child)

    def _wrapper(self, slot: Slot, generation: int) -> Wrapper | None:
        """(loop) How this run of `slot`'s stdio server is confined (None: on the host),
        told to the slot. Raises SandboxUnavailable when a sandbox asked for has stopped
        working: such a server does not start rather than run unconfined."""
        sandbox, spec = self.sandbox, slot.spec
        if sandbox is not None and spec.confined:
            workspace = Path(spec.workspace or self.selection.workspace)
            cwd = Path(spec.working_dir() or workspace)
            confinement = sandbox.confine_started(workspace, command=spec.describe(), cwd=cwd)
            if confinement is not None:
                slot.placed(generation, f"in the sandbox ({confinement.mode})")
                return sandbox.wrapper(confinement, cwd)
        slot.placed(generation, "on the host")
        return None


def _spawn_error(spec: ServerSpec, exc: BaseException) -> str:
    if isinstance(exc, SandboxUnavailable):
        return f"the sandbox cannot run: {exc}"
    if isinstance(exc, FileNotFoundError):
        where = f" in {spec.working_dir()}" if spec.cwd else ""
        missing = exc.filename if exc.filename != spec.working_dir() else "its cwd"
        return f"cannot run `{spec.command}`{where}: not found ({missing})"
    if isinstance(exc, OSError):
        return f"cannot run `{spec.command}`: {exc.strerror or exc}"
    return str(exc)


def _wait_cancellable(cond: threading.Condition, timeout: float, cancel: CancelToken) -> None:
    """`cond.wait(timeout)` (held by the caller) that a cancel wakes; raises Cancelled."""

    def wake() -> None:
        with cond:
            cond.notify_all()

    unregister = cancel.on_cancel(wake)
    try:
        if not cancel.is_cancelled():
            cond.wait(timeout)
    finally:
        unregister()
    cancel.check()


class _SwitchInterval:
    """While the loop thread starts and imports the SDK (about a second of CPU under the
    GIL), the interpreter's switch interval is 0.5 ms instead of 5: a thread of the agent
    that wants the GIL back (sending the first request: each blocking call gives it up
    and takes it again) waits at most that long each time. Restored once the SDK is in."""

    LOW = 0.0005

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._saved: float | None = None

    def lower(self) -> None:
        with self._lock:
            if self._saved is None:
                self._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(self._saved, self.LOW))

    def restore(self) -> None:
        with self._lock:
            if self._saved is not None:
                sys.setswitchinterval(self._saved)
                self._saved = None


class _BeginOnFirstEvent:
    """A session's provider whose first streamed event starts the MCP servers (when an
    event comes back, the request has gone out). Everything else is the provider's."""

    def __init__(self, inner: ProviderClient, manager: McpManager) -> None:
        self._inner = inner
        self._manager = manager

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        for event in self._inner.stream(request, cancel):
            self._manager.begin()  # a flag test once begun
            yield event

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
