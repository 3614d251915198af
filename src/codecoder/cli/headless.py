"""`codecoder exec`: one task, no person at the keyboard (DESIGN.md §7).

The main thread only reads events and writes output; the SIGINT handler only flips the
turn's token (a KeyboardInterrupt could cut a JSON line in half). A second SIGINT kills
every running command group and leaves at once with 130. SIGTERM and SIGHUP (the
terminal closed, the SSH connection dropped) cancel the turn like a first SIGINT, so
the running command's tree is killed, and exit 143 and 129; after a SIGHUP, output that
went to the terminal goes nowhere.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from queue import SimpleQueue
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, TypeVar

import msgspec

from codecoder.cli import jsonl
from codecoder.exitcodes import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_SIGHUP,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USAGE,
)
from codecoder.kernel.events import (
    AgentEvent,
    AskUser,
    ConfirmReply,
    ConfirmRequest,
    Done,
    Error,
    NewToken,
    StatusUpdate,
    Steered,
    Subagent,
    ToolFinished,
    ToolStarted,
    Usage,
)
from codecoder.kernel.handle import AgentClosed, AgentHandle
from codecoder.permissions.explain import unattended_lines
from codecoder.sessions.errors import SessionError
from codecoder.terminal_text import visible

if TYPE_CHECKING:
    from codecoder.app.wiring import AgentSetup
    from codecoder.cli.commands import ExecOptions
    from codecoder.cli.replies import StdinReplies

FLUSH_BYTES = 1 << 16
NOBODY_TO_APPROVE = (
    "nobody can approve calls in this run (headless). Don't retry it or get around it "
    "another way; finish what you can without it and say in your answer what it would "
    "have needed"
)
"""Why a call that asks for approval is refused where nobody answers, said to the model."""
NOBODY_TO_ANSWER = "(nobody can answer in this run: decide on your own and say what you assumed)"


class UsageError(Exception):
    """Bad flags, bad script, unknown model, missing key: exit code 2."""


def run_exec(options: ExecOptions) -> int:
    from codecoder.app.wiring import WiringError, build_agent

    options = msgspec.structs.replace(  # nobody answers but through stdin
        options, agent=msgspec.structs.replace(options.agent, attended=options.stdin_replies)
    )
    if options.plan is not None:
        from codecoder.cli.plan_exec import run_plan

        return run_plan(options)
    trace = options.agent.trace
    try:
        if options.task == "-" and options.stdin_replies:
            raise UsageError("--stdin-replies reads answers from standard input: give the task")
        task = _read_task(options.task)
        workspace = _workspace(options.agent.cwd)
        setup = build_agent(options.agent, workspace)
    except (UsageError, WiringError) as exc:
        print(f"codecoder: {visible(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return _Runner(setup, json_output=options.json, stdin_replies=options.stdin_replies).run(
            task
        )
    except SessionError as exc:  # the store failed during the run: it cannot be kept
        print(f"codecoder: {visible(str(exc))}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # the last line of defence: one clear line, detail in the trace
        if setup.tracer is not None:
            import traceback

            setup.tracer.note("exec", setup.loop.turn, "traceback", traceback.format_exc())
        print(f"codecoder: internal error: {exc!r}", file=sys.stderr)
        if trace:
            print(f"codecoder: details in {trace}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        setup.close()
        for line in setup.checkpoints.unsaid() if setup.checkpoints is not None else ():
            print(f"codecoder: {line}", file=sys.stderr)  # found after the last turn


def _read_task(task: str) -> str:
    if task == "-":
        task = sys.stdin.read()
    if not task.strip():
        raise UsageError("the task is empty")
    return task


def _workspace(cwd: str | None) -> Path:
    path = Path(cwd or os.getcwd()).expanduser()
    if not path.is_dir():
        raise UsageError(f"no such folder: {path}")
    return path.resolve()


class _Runner:
    def __init__(self, setup: AgentSetup, *, json_output: bool, stdin_replies: bool) -> None:
        self.setup = setup
        self.json = json_output
        self.out: IO[bytes] = sys.stdout.buffer
        self.buffer: list[bytes] = []
        self.size = 0
        self.turn = setup.first_turn + 1
        self.signal_exit: int | None = None
        self.handle: AgentHandle | None = None
        self.failure: Error | None = None
        self.closed_pipe = False
        self.terminals = [fd for fd in (1, 2) if os.isatty(fd)]  # asked before any hangup
        self.answer: list[str] = []
        self.replies: StdinReplies | None = None
        if stdin_replies:
            from codecoder.cli.replies import StdinReplies

            self.replies = StdinReplies(sys.stdin, on_steer=self._steer)
        self._steer_lock = threading.Lock()
        self._early_steers: list[str] = []
        self._turns_left = 1

    def run(self, task: str) -> int:
        handle = self.setup.loop.start()
        self.handle = handle
        if self.json:
            self._write(jsonl.encode(jsonl.SessionLine(jsonl.SCHEMA, self.setup.session_id)))
        signals = _SignalWatcher(self._on_signal, self.setup.kill_processes)
        try:
            if self.setup.log is not None:
                self.setup.log.begin_turn()
            handle.send(task)
            with self._steer_lock:
                early, self._early_steers = self._early_steers, []
            for text in early:  # steers read before the turn began join it
                handle.steer(text)
            done = self._consume(handle)
        finally:
            signals.close()
            handle.shutdown()
            self._flush()
        return self._exit_code(done)

    def _consume(self, handle: AgentHandle) -> Done:
        while True:
            try:
                event = handle.next_event(timeout=0)
            except TimeoutError:
                self._flush()  # nothing waiting: the consumer sees the stream live
                event = wait_event(handle.next_event)
            if event is None:
                raise RuntimeError("the agent stopped before the turn ended")
            self._show(event)
            if isinstance(event, Steered) and event.next_turn:
                self._turns_left += 1  # a steer too late for its turn is the next turn
                if self.setup.log is not None:
                    self.setup.log.begin_turn()
            if isinstance(event, Done):
                self._turns_left -= 1
                if self._turns_left == 0 or event.cancelled:
                    return event
                self.turn += 1

    def _show(self, event: AgentEvent) -> None:
        inner = event
        while isinstance(inner, Subagent):  # a sub-agent's question needs an answer too
            inner = inner.event
        if isinstance(inner, ConfirmRequest | AskUser):
            self._question(inner)
        if isinstance(inner, StatusUpdate) and inner.notice is not None:
            _progress(f"codecoder: {inner.detail}")  # on stderr also with --json
        if isinstance(event, Error):
            self.failure = event
        elif isinstance(event, Usage) and self.setup.log is not None:
            self.setup.log.add_usage(event)
        if self.json:
            self._write(jsonl.encode(jsonl.line_for(event, self.turn)))
            return
        if isinstance(event, NewToken):
            self.answer.append(event.text)
        elif isinstance(event, ToolStarted):
            self.answer.clear()  # only the text after the last tool call is the answer
            _progress(f"▸ {event.name} {_brief(event.args)}")
        elif isinstance(event, ToolFinished):
            self._finished(event)
        elif isinstance(event, StatusUpdate) and event.status == "retrying":
            _progress(f"retrying {event.detail}")  # "retrying in 2.0 s (attempt 2 of 6): …"
        elif isinstance(event, Subagent):
            return

    def _finished(self, event: ToolFinished) -> None:
        """The call's mark; a call that could not run says why, and a refused one how to
        allow it (the reason in the event is written for the model)."""
        error = event.error
        if error is None:
            result = event.result
            failed = result is not None and event.status == "error"  # a file tool refused
            why = f": {_cut(result.text.partition(chr(10))[0], 200)}" if failed and result else ""
            _progress(f"  {_status_mark(event)} {event.name}{why}")
            return
        policy = self.setup.policy
        refusal = None
        if error.kind == "denied" and policy is not None and self.replies is None:
            refusal = policy.refusal(event.id, event.name)
        if refusal is None:
            _progress(f"  ✗ {event.name}: {error.message}")
            return
        what = "" if refusal.command is None else f": {_cut(refusal.command, 200)}"
        _progress(f"  ✗ {event.name} refused{what}")
        for line in unattended_lines(refusal):
            _progress(f"    {line}")

    def _steer(self, text: str) -> None:
        """A `{"type": "steer"}` line (on the stdin-replies thread)."""
        with self._steer_lock:
            if self.handle is None:
                self._early_steers.append(text)
                return
        try:
            self.handle.steer(text)
        except AgentClosed:
            return

    def _question(self, event: ConfirmRequest | AskUser) -> None:
        """Without a person, questions are answered at once: deny, or no answer."""
        if self.replies is not None:
            self.replies.expect(event)
            return
        if isinstance(event, ConfirmRequest):
            event.reply.send(ConfirmReply("deny", NOBODY_TO_APPROVE, by_person=False))
        else:
            event.reply.send(NOBODY_TO_ANSWER)

    def _write(self, line: bytes) -> None:
        self.buffer.append(line)
        self.size += len(line)
        if self.size >= FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        """Write what is buffered. When the reader has gone (a closed pipe) nobody is
        listening: output stops and the turn is cancelled, so no command runs on."""
        data = b"".join(self.buffer)
        self.buffer.clear()
        self.size = 0
        if self.closed_pipe:
            return
        try:
            if data:
                self.out.write(data)
            self.out.flush()
        except OSError:  # a closed pipe; EIO from a terminal that hung up
            self.closed_pipe = True
            _silence_stdout()
            self._cancel()

    def _exit_code(self, done: Done) -> int:
        if self.signal_exit is not None:
            return self.signal_exit
        if self.closed_pipe:
            return EXIT_FAILED
        if done.reason == "completed":
            if not self.json:
                text = visible("".join(self.answer).strip())
                if text:
                    self._write_raw(text.encode() + b"\n")
            return EXIT_FAILED if self.closed_pipe else EXIT_OK
        if done.reason == "cancelled":
            return EXIT_SIGINT
        if self.failure is not None:
            _progress(f"codecoder: {self.failure.message}")
            if self.failure.kind == "config":
                return EXIT_USAGE
        return EXIT_FAILED

    def _write_raw(self, data: bytes) -> None:
        self.buffer.append(data)
        self._flush()

    def _on_signal(self, signum: int) -> None:
        """On the watcher thread: the first SIGINT, a SIGTERM or a SIGHUP cancels the turn."""
        if signum == signal.SIGHUP:
            _silence(self.terminals)  # the terminal is gone: writing to it would fail
        if self.signal_exit is None:
            self.signal_exit = _SIGNAL_EXITS[signum]
        self._cancel()

    def _cancel(self) -> None:
        """Cancel the run (the turn; a plan face cancels its plan)."""
        if self.handle is not None:
            with contextlib.suppress(AgentClosed):  # the run has just ended
                self.handle.cancel()


T = TypeVar("T")

SIGNAL_POLL = 0.05
"""Seconds the main thread waits for an event at a time. A signal the kernel hands to
another of our threads only flags the main thread, which runs the Python handler when it
next runs bytecode; blocked in a queue's get, it never did, and a SIGINT during a long
hook or command was lost (one exec in six, tests/hooks/test_hooks.py's cancel test)."""


def wait_event(next_event: Callable[[float], T]) -> T:
    """`next_event(timeout)` until it gives something, waking the main thread for its
    signal handlers meanwhile."""
    while True:
        try:
            return next_event(SIGNAL_POLL)
        except TimeoutError:
            continue


_SIGNAL_EXITS: dict[int, int] = {
    signal.SIGINT: EXIT_SIGINT,
    signal.SIGTERM: EXIT_SIGTERM,
    signal.SIGHUP: EXIT_SIGHUP,
}


class _SignalWatcher:
    """Signal handlers run on the main thread between bytecodes, possibly while it holds
    a lock the cancel path needs, and a KeyboardInterrupt could cut a JSON line in half.
    So the handler only queues the signal (SimpleQueue.put is safe there) and a watcher
    thread acts on it. A second SIGINT kills every command group and exits at once."""

    def __init__(self, on_signal: Callable[[int], None], kill: Callable[[], None]) -> None:
        self._on_signal = on_signal
        self._kill = kill
        self._queue: SimpleQueue[int | None] = SimpleQueue()
        self._interrupts = 0
        self._thread = threading.Thread(target=self._run, name="signals", daemon=True)
        self._thread.start()
        self._previous = {
            signum: signal.signal(signum, self._handler)
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        }

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT:
            self._interrupts += 1
            if self._interrupts > 1:
                self._kill()
                os._exit(EXIT_SIGINT)
        self._queue.put(signum)

    def _run(self) -> None:
        while (signum := self._queue.get()) is not None:
            self._on_signal(signum)

    def close(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._queue.put(None)
        self._thread.join()


def _silence(fds: list[int]) -> None:
    """Point each of `fds` at /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in fds:
        os.dup2(devnull, fd)
    os.close(devnull)


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's last flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _status_mark(event: ToolFinished) -> str:
    return {"success": "✓", "error": "✗", "cancelled": "⊘"}[event.status]


def _brief(args: dict[str, Any]) -> str:
    text = " ".join(str(v) for v in args.values())
    return text if len(text) <= 80 else text[:77] + "…"


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters: a progress line stays a line."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _progress(line: str) -> None:
    """One line on stderr. What it quotes comes from outside (a tool's arguments, a
    provider's or a server's message): a newline in it is shown, so it cannot forge a
    line of ours, and so is every other control character."""
    with contextlib.suppress(OSError):  # a terminal that hung up: the run goes on
        print(visible(line, one_line=True), file=sys.stderr, flush=True)
