"""The interactive client: one prompt_toolkit Application on the main thread drives a
session (backend.py) and shows its events (view.py).

Threads: the main thread runs the Application's event loop (keys, drawing, all client
state); a pump thread per session reads `next_event()` and hands each event over with
`call_soon_threadsafe`; opening or switching a session runs on a worker thread. The
kernel stays thread-only: the asyncio loop here is prompt_toolkit's, at the edge.

Launch is measured (≤ 300 ms to the first prompt): the prompt is drawn first, then the
session opens on the worker, then Markdown and syntax highlighting warm up; what is
typed before the session is ready waits in the queue.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder import __version__
from codecoder.cli.tui import attachments, builtin, control, slash, transcript
from codecoder.cli.tui.asking import Asking
from codecoder.cli.tui.backend import Backend, StartFailed, Unavailable
from codecoder.cli.tui.diffs import Diff, Snapshots
from codecoder.cli.tui.questions import Question, what_it_approves
from codecoder.cli.tui.status import Stats, footer, tokens
from codecoder.cli.tui.text import MARK, cut, safe_line, width_of, without_colours
from codecoder.cli.tui.view import SPINNER, View
from codecoder.daemon.remote_events import (
    ModeChanged,
    Prompted,
    RemoteEvent,
    RequestResolved,
    TurnRunning,
)
from codecoder.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_SIGHUP, EXIT_SIGTERM, EXIT_USAGE
from codecoder.kernel.events import (
    AskUser,
    Compacted,
    ConfirmRequest,
    Done,
    NewToken,
    StatusUpdate,
    Subagent,
    ToolFinished,
    ToolStarted,
    Usage,
)
from codecoder.terminal_text import visible

if TYPE_CHECKING:
    from prompt_toolkit.buffer import Buffer

    from codecoder.app.options import AgentOptions
    from codecoder.cli.tui.picker import SessionPicker
    from codecoder.cli.tui.plan import PlanDriver
    from codecoder.cli.tui.screen import Screen
    from codecoder.sessions.records import SessionInfo

EXIT_WINDOW = 2.0
"""Seconds within which a second Ctrl+C at an empty prompt leaves."""
PRINT_EVERY = 0.1
"""While an answer streams, settled text is printed above at most this often."""


class Incoming(msgspec.Struct, frozen=True):
    """An event from the pump, with what the pump thread worked out for it (a diff, the
    lines of a confirmation), since that reads files."""

    event: RemoteEvent | None
    diff: Diff | None = None
    approves: list[str] | None = None


class Pending(msgspec.Struct, frozen=True):
    """Something to do once the agent is idle: a message, or a slash command."""

    text: str
    shown: str
    command: slash.SlashCommand | None = None


class FirstPick(msgspec.Struct, frozen=True):
    """`codecoder resume --pick`: the sessions to choose from before any is opened, and
    how to open the chosen one (on the daemon or in this process, as `open_backend`)."""

    sessions: list[SessionInfo]
    open: Callable[[str], Backend]


class Client:
    def __init__(
        self,
        options: AgentOptions,
        workspace: Path,
        open_backend: Callable[[], Backend],
        *,
        color: bool,
        daemon: bool,
        first_pick: FirstPick | None = None,
    ) -> None:
        self.options = options
        self._first_pick = first_pick
        self.workspace = workspace
        self._open_backend = open_backend
        self.color = color
        self.on_daemon = daemon
        self._backend: Backend | None = None
        base = slash.Registry()
        builtin.register(base)
        control.register(base)
        self._custom = slash.CustomCommands(base, lambda: _command_folders(self.workspace))
        self._custom.current()
        self._warned: list[str] = []
        """The custom-command warnings shown: a reload says only what is new."""
        self.view = View(workspace, color=color, width=80)
        self.stats = Stats()
        self.asking = Asking(self)
        self.steering = control.Steering(self)
        self.pending: deque[Pending] = deque()
        self.busy = ""  # "", "starting", "turn", "compact", "switch"
        self.busy_since = 0.0
        self.exit_armed = 0.0
        self.notice = ""
        self.notice_until = 0.0
        self.last_key = 0.0
        self.key_presses = 0
        """Keys pressed so far, counted before each one's binding runs (whatever the key:
        Backspace and the arrows have bindings of their own that the menu never sees)."""
        self.exit_code = EXIT_OK
        self.hung_up = False
        self._inbox: SimpleQueue[tuple[Backend, Incoming]] = SimpleQueue()
        self._wake_lock = threading.Lock()
        self._wake_pending = False
        self._threads: list[threading.Thread] = []
        self._closing: list[Backend] = []
        self._error_after: str | None = None
        self._ticking = False
        self._unprinted: list[str] = []
        self._printed_at = 0.0
        self._print_due = False
        self.plan: PlanDriver | None = None
        """The plan running (/plan), if one is: the client is busy "plan" meanwhile."""
        self.picker: SessionPicker | None = None
        """The session picker, while it is open: it has the keys (screen.py)."""
        self.after_turn: Callable[[Done | None], None] | None = None
        """Called when a turn is over, instead of running what waits: `codecoder demo`
        leaves then, since its recorded model has nothing more to say."""
        from codecoder.cli.tui.screen import Screen

        self.screen: Screen = Screen(self, color=color)

    # --- running -----------------------------------------------------------------------

    def run(self) -> int:
        app = self.screen.app
        self.view.width = self.screen.columns
        try:
            code = app.run(pre_run=self._pre_run, handle_sigint=True)
        except EOFError:  # the terminal went away
            code = EXIT_SIGHUP
        except KeyboardInterrupt:
            code = EXIT_OK
        finally:
            self._shutdown()
        return self.exit_code if code is None else int(code)

    def _pre_run(self) -> None:
        loop = self.screen.app.loop
        assert loop is not None
        for signum, code in ((signal.SIGHUP, EXIT_SIGHUP), (signal.SIGTERM, EXIT_SIGTERM)):
            loop.add_signal_handler(signum, self._signalled, code)
        if self._first_pick is not None:
            loop.call_soon(self.choose_session, self._first_pick.sessions, self._first_picked)
            return
        self.busy, self.busy_since = "starting", time.monotonic()
        loop.call_soon(self._start_worker, self._open_first)

    def _first_picked(self, chosen: str | None) -> None:
        """`codecoder resume --pick`: open the chosen session as `codecoder resume ID`
        would; a cancelled picker leaves at once (exit 0: the user changed their mind,
        nothing failed), saying that nothing was resumed."""
        pick = self._first_pick
        assert pick is not None
        if chosen is None:
            self.view.line("no session chosen: nothing resumed", "dim")
            self._flush()
            self.exit_code = EXIT_OK
            self.screen.app.exit(result=EXIT_OK)
            return
        self._open_backend = lambda: pick.open(chosen)
        self.busy, self.busy_since = "starting", time.monotonic()
        self._start_worker(self._open_first)

    def _start_worker(self, work: Callable[[], None]) -> None:
        thread = threading.Thread(target=work, name="tui-worker", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _post(self, callback: Callable[..., object], *args: Any) -> None:
        loop = self.screen.app.loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: we are leaving
                loop.call_soon_threadsafe(callback, *args)

    def _open_first(self) -> None:
        try:
            backend = self._open_backend()
        except StartFailed as exc:
            self._post(self._failed_to_start, str(exc))
            return
        except Exception as exc:  # a bug must not leave a prompt that can never answer
            self._post(self._failed_to_start, f"internal error: {exc!r}")
            return
        self._post(self._ready, backend, True, True)
        from codecoder.cli.tui import markdown

        with contextlib.suppress(Exception):
            markdown.warm_up()  # the first answer need not pay for the imports

    def _failed_to_start(self, message: str) -> None:
        self._error_after = message
        self.busy = ""
        self.screen.app.exit(result=EXIT_USAGE)

    def _ready(self, backend: Backend, first: bool, history: bool) -> None:
        """A session is open: show where we are, then take what was typed meanwhile."""
        self._backend = backend
        self.busy = ""
        self.workspace = backend.workspace
        self._window(backend)
        if first:
            self._banner(backend)
            self._warn_custom()
        else:
            self.view.line(
                f"session {backend.session_id[:8]} · model {backend.model} · "
                f"approval {backend.mode}",
                "dim",
            )
        if history and getattr(backend, "resumed_session", False):
            transcript.show(self.view, backend.history(), backend.session_id)
            self._stored_usage(backend)
        thread = threading.Thread(target=self._pump, args=(backend,), name="tui-pump", daemon=True)
        self._threads.append(thread)
        thread.start()
        self._flush()
        self._next()

    def _banner(self, backend: Backend) -> None:
        where = " (daemon)" if backend.remote else ""
        home = str(Path.home())
        shown = str(backend.workspace)
        if shown.startswith(home + os.sep):
            shown = "~" + shown[len(home) :]
        self.view.line(f"CodeCoder {__version__} · session {backend.session_id[:8]}{where}", "bold")
        said = [f"model {safe_line(backend.model)}", f"approval {backend.mode}", safe_line(shown)]
        hints = ["/help lists commands and keys", "Ctrl+C stops a turn", "Ctrl+D leaves"]
        for line in [*_joined(said, self.view.width), *_joined(hints, self.view.width)]:
            self.view.line(line, "dim")

    def _window(self, backend: Backend) -> None:
        try:
            from codecoder import paths
            from codecoder.config import read_toml
            from codecoder.context.compaction import context_window

            config = read_toml(paths.config_dir() / "config.toml")
            self.stats.window = context_window(backend.model, config)
        except Exception:  # a broken config was reported at start-up
            self.stats.window = 0

    def _stored_usage(self, backend: Backend) -> None:
        from codecoder.sessions import SessionError, SessionStore

        try:
            with SessionStore() as store:
                info = store.get(backend.session_id)
        except SessionError:
            return
        self.stats.input_tokens = info.input_tokens
        self.stats.output_tokens = info.output_tokens
        self.stats.cached_tokens = info.cached_tokens
        self.stats.cost = info.cost

    def _signalled(self, code: int) -> None:
        """SIGHUP (the terminal closed) or SIGTERM: we leave; after a hang-up nothing more
        is written. A daemon session goes on, as when the user leaves; a session in this
        process has its turn cancelled (its command's tree killed)."""
        if code == EXIT_SIGHUP:
            self.hung_up = True
            _silence()
        if not self._on_daemon_session():
            self._cancel()
        self.exit_code = code
        with contextlib.suppress(Exception):
            self.screen.app.exit(result=code)

    def _shutdown(self) -> None:
        """After the Application: say how to come back, stop the turn and close the
        session in this process, or detach from a daemon session (its turn runs on, and
        its questions wait for a client: answering them here would deny them), join our
        threads."""
        backend, self._backend = self._backend, None
        remote = backend is not None and backend.remote
        if backend is not None and not self.hung_up and self._error_after is None:
            self.screen.print_above(self._come_back(backend))
        if not remote:
            self.asking.dismiss_all("the client left")
        if self.plan is not None:
            self.plan.cancel()
        for old in [*self._closing, *([backend] if backend is not None else [])]:
            with contextlib.suppress(Exception):
                if self.busy in ("turn", "compact") and old is backend and not remote:
                    old.handle.cancel()
                old.close()
        for thread in self._threads:
            thread.join(timeout=5.0)
        if self.plan is not None:
            self.plan.join(timeout=5.0)
        message = self._error_after
        if message and not self.hung_up:
            os.write(2, f"codecoder: {message}\n".encode())
            self.exit_code = EXIT_USAGE

    def _come_back(self, backend: Backend) -> str:
        """What leaving prints: where the session is and the command that comes back."""
        short = backend.session_id[:8]
        resume = f"codecoder resume {short}"
        if not backend.remote:
            return f"session {short} saved · come back: {resume}\n"
        running = " (its turn runs on)" if self.busy in ("turn", "compact") else ""
        return (
            f"session {short} goes on in the daemon{running}\n"
            f"come back: codecoder --attach · {resume}\n"
        )

    def _on_daemon_session(self) -> bool:
        backend = self._backend
        return backend is not None and backend.remote

    # --- events --------------------------------------------------------------------------

    def _pump(self, backend: Backend) -> None:
        """The session's events, in order, to the event loop; file reads (diffs) here.
        Tokens already waiting behind one another go over as one (a fast stream would
        otherwise cost the loop a callback per token)."""
        snapshots = Snapshots(backend.workspace)
        waiting: list[RemoteEvent | None] = []
        while True:
            try:
                event = waiting.pop() if waiting else backend.handle.next_event()
            except Exception:  # the connection or the agent is gone
                event = None
            if isinstance(event, NewToken):
                event = _join_tokens(backend.handle, event, waiting)
            incoming = Incoming(event)
            if isinstance(event, ToolStarted):
                snapshots.started(event.id, event.name, event.args)
            elif isinstance(event, ToolFinished):
                incoming = Incoming(event, snapshots.finished(event.id, event.status == "success"))
            else:
                inner = _unwrap(event)
                if isinstance(inner, ConfirmRequest):
                    lines, diff = what_it_approves(inner, backend.workspace)
                    incoming = Incoming(event, diff, lines)
            self._inbox.put((backend, incoming))
            with self._wake_lock:
                wake, self._wake_pending = not self._wake_pending, True
            if wake:
                self._post(self._drain)
            if event is None:
                return

    def _drain(self) -> None:
        with self._wake_lock:
            self._wake_pending = False
        deadline = time.monotonic() + 0.02
        while time.monotonic() < deadline:
            try:
                backend, incoming = self._inbox.get_nowait()
            except Empty:
                break
            if backend is self._backend:
                self._on_event(backend, incoming)
        else:
            with self._wake_lock:
                self._wake_pending = True
            loop = self.screen.app.loop
            if loop is not None:
                loop.call_soon(self._drain)  # keys get their turn between batches
        self._flush(streaming=self.busy == "turn" and not self.questions)

    def _on_event(self, backend: Backend, incoming: Incoming) -> None:
        event = incoming.event
        if isinstance(event, ModeChanged | RequestResolved):
            self._remote_status(backend, event)
            return
        if isinstance(event, Prompted | TurnRunning):
            self._another_turn(event)
            return
        if self.plan is not None:
            self.plan.agent_event(event)
        if event is None:
            self._backend_ended(backend)
            return
        inner = _unwrap(event)
        if isinstance(event, Usage):
            self.stats.add(event)
            backend.add_usage(event)
        if isinstance(inner, ConfirmRequest | AskUser):
            self.view.show(event)
            self.asking.ask(inner, incoming.diff, incoming.approves)
            return
        self.view.show(event, incoming.diff)
        self.steering.observe(event, backend)
        if self.steering.goes_on(event):
            self.busy_since = time.monotonic()  # a turn a steer started follows
        elif isinstance(event, Done) or (
            self.busy == "compact"
            and (
                isinstance(event, Compacted)
                or (isinstance(event, StatusUpdate) and event.notice == "compact")
            )
        ):
            self._turn_over(event if isinstance(event, Done) else None)

    def _remote_status(self, backend: Backend, event: ModeChanged | RequestResolved) -> None:
        """A daemon session: another client switched the mode, or answered a question
        we were asked too (daemon/client.py)."""
        from codecoder.approval import MODES

        if isinstance(event, ModeChanged):
            for mode in MODES:
                if mode == event.mode:
                    backend.mode = mode
            return
        self.asking.resolved(event.tool_call_id)

    def _another_turn(self, event: Prompted | TurnRunning) -> None:
        """A daemon session: another client sent a message, or a turn we did not prompt
        runs. Its prompt is shown marked with who sent it, and we are busy until its Done
        (Ctrl+C stops it, what is typed queues), as if we had prompted it."""
        if isinstance(event, Prompted):
            self.view.said(event.text, event.client, event.steer)
        if not self.busy and (isinstance(event, TurnRunning) or not event.steer):
            self.busy, self.busy_since = "turn", time.monotonic()
            self.view.status = "Working"

    def _backend_ended(self, backend: Backend) -> None:
        if backend in self._closing:
            return
        self.view.finish()
        gone = "the daemon closed the connection" if backend.remote else "the agent stopped"
        self.view.line(f"the session ended: {gone}", "red")
        self._backend = None
        self.exit_code = EXIT_FAILED
        self.busy = ""
        self._flush()
        self.screen.app.exit(result=EXIT_FAILED)

    def _turn_over(self, done: Done | None) -> None:
        self.busy = "plan" if self.plan is not None else ""  # a plan's turn: it goes on
        self.asking.dismiss_all("the turn ended")
        self.screen.app.layout.focus(self.screen.input)
        if self.after_turn is not None and not self.busy:
            self.after_turn(done)
            return
        self._next()

    def _flush(self, *, streaming: bool = False) -> None:
        """Print what settled. While an answer streams, at most every PRINT_EVERY
        seconds (each print redraws the bottom part): meanwhile what settled is shown at
        the top of the live part, so nothing is missing from the screen."""
        self.view.width = self.screen.columns
        text = self.view.take()
        if text:
            self._unprinted.append(text)
        now = time.monotonic()
        if streaming and self._unprinted and now - self._printed_at < PRINT_EVERY:
            if not self._print_due:
                self._print_due = True
                loop = self.screen.app.loop
                if loop is not None:
                    loop.call_later(PRINT_EVERY - (now - self._printed_at), self._print_now)
        elif self._unprinted:
            self._print_now()
        self.screen.app.invalidate()

    def _print_now(self) -> None:
        self._print_due = False
        text = "".join(self._unprinted)
        self._unprinted.clear()
        self._printed_at = time.monotonic()
        self.screen.print_above(text)

    # --- questions (asking.py) ----------------------------------------------------------------

    @property
    def question(self) -> Question | None:
        return self.asking.head

    @property
    def questions(self) -> deque[Question]:
        return self.asking.queue

    # --- the input -------------------------------------------------------------------------

    def typed(self) -> None:
        self.last_key = time.monotonic()

    def count_key(self) -> None:
        self.key_presses += 1

    def submit_input(self, text: str) -> None:
        if not text.strip():
            return
        buffer = self.screen.input
        buffer.append_to_history()
        buffer.reset()
        parsed = slash.parse(text)
        if parsed is None:
            self._message(text, text)
            return
        name, arguments = parsed
        command = self.registry().get(name)
        self._warn_custom()
        if command is None:
            self.view.line(
                f"unknown command /{safe_line(name)} — /help lists the commands", "yellow"
            )
            self._flush()
            return
        if self.busy and command.busy == "after":
            self.pending.append(Pending(arguments, text.strip(), command))
            self.screen.app.invalidate()
            return
        self._run_command(command, arguments)

    def _run_command(self, command: slash.SlashCommand, arguments: str) -> None:
        try:
            command.run(self, arguments)
        except Unavailable as exc:
            self.view.line(str(exc), "yellow")
        self._flush()

    def _message(self, text: str, shown: str) -> None:
        if self.busy or self._backend is None:
            self.pending.append(Pending(text, shown))
            self.screen.app.invalidate()
            return
        self._send(text, shown)

    def _send(self, text: str, shown: str) -> None:
        backend = self._backend
        assert backend is not None
        full, attached, skipped = attachments.expand(text, self.workspace)
        self.view.gap()
        lines = shown.rstrip().split("\n")
        for index, line in enumerate(lines):
            self.view.line((f"{MARK} " if index == 0 else "  ") + safe_line(line), "bold")
        for item in attached:
            self.view.line(f"  attached {safe_line(item.path)} ({item.lines} lines)", "dim")
        for why in skipped:
            self.view.line(f"  not attached: {safe_line(why)}", "yellow")
        self.view.line("")
        self.busy, self.busy_since = "turn", time.monotonic()
        self.view.status = "Working"
        try:
            backend.begin_turn()
            backend.handle.send(full)
        except Exception as exc:
            self.busy = ""
            self.view.line(f"could not send: {safe_line(str(exc))}", "red")
        self._flush()

    def _next(self) -> None:
        """Run what waits, while the agent is idle."""
        while self.pending and not self.busy and self._backend is not None and not self.picker:
            item = self.pending.popleft()
            if item.command is not None:
                self._run_command(item.command, item.text)
            else:
                self._send(item.text, item.shown)
        self.screen.app.invalidate()

    def pick(self, text: str) -> None:
        """Host: `text` in the input with its completion pop-up open, as a picker: the
        choices are what completion offers, arrows and Enter take one. Text the user is
        typing (a command run after a turn) is never replaced."""
        buffer = self.screen.input
        if buffer.text:
            return
        buffer.text = text
        buffer.cursor_position = len(text)
        buffer.start_completion(select_first=False)

    def choose_session(
        self, sessions: list[SessionInfo], done: Callable[[str | None], None]
    ) -> None:
        """Host: open the session picker (picker.py) on `sessions`; `done` gets the
        chosen id, or None when it is cancelled. What waits to run (a message queued
        during the turn) waits until it closes: it belongs to whichever session follows."""
        from codecoder.cli.tui.picker import SessionPicker

        self.picker = SessionPicker(sessions, done)
        self.screen.input.cancel_completion()
        self.screen.app.invalidate()

    def picked(self, take: bool) -> None:
        """The picker closes: Enter took its selection (`take`), or it was cancelled."""
        picker, self.picker = self.picker, None
        if picker is None:
            return
        picker.done(picker.chosen.id if take else None)
        self._flush()
        self._next()

    def submit(self, text: str, shown: str) -> None:
        """Host: send `text` as the next message (a custom command's prompt)."""
        self._message(text, shown)

    # --- Ctrl+C and leaving -----------------------------------------------------------------

    def interrupt(self, buffer: Buffer) -> None:
        now = time.monotonic()
        if self.busy in ("turn", "compact", "plan") or self.questions:
            self._cancel()
            if self.pending and not buffer.text:  # what was queued comes back to edit
                buffer.text = "\n".join(p.shown for p in self.pending)
                buffer.cursor_position = len(buffer.text)
            self.pending.clear()
            self.screen.app.invalidate()
            return
        if self.screen.app.layout.has_focus(self.screen.answer):
            self.screen.app.layout.focus(self.screen.input)
        if buffer.text:
            buffer.reset()
            return
        if now - self.exit_armed <= EXIT_WINDOW:
            self.quit()
            return
        self.exit_armed = now
        self._notice("press Ctrl+C again to leave (or Ctrl+D)", EXIT_WINDOW)

    def _cancel(self) -> None:
        backend = self._backend
        self.asking.dismiss_all("the user stopped the turn")
        self.screen.app.layout.focus(self.screen.input)
        if self.plan is not None:
            self.plan.cancel()  # its turn or its gate
            self.view.status = "Stopping the plan"
        if backend is not None and self.busy in ("turn", "compact"):
            with contextlib.suppress(Exception):
                backend.handle.cancel()
            self.view.status = "Stopping"

    def _notice(self, text: str, seconds: float) -> None:
        self.notice = text
        self.notice_until = time.monotonic() + seconds
        loop = self.screen.app.loop
        if loop is not None:
            loop.call_later(seconds + 0.05, self.screen.app.invalidate)
        self.screen.app.invalidate()

    def quit(self) -> None:
        """Host: leave. From a daemon session at once: it goes on (its turn runs on; a
        question it asks waits `--answer-timeout` for a client). A session in this
        process ends with the client: its running turn is stopped, and we say so first."""
        if not self._on_daemon_session():
            if self.busy in ("turn", "compact", "plan"):
                self.view.line(
                    "leaving stops the running turn: without the daemon the session ends "
                    "with this client",
                    "yellow",
                )
                self._flush()
            self._cancel()
        self.exit_code = EXIT_OK
        with contextlib.suppress(Exception):
            self.screen.app.exit(result=EXIT_OK)

    def expand_output(self) -> None:
        output = self.view.last_output
        if output is None:
            self._notice("no command output yet", 2.0)
            return
        self.view.line(f"── output of {output.title} ({output.lines} lines) ──", "dim")
        self.view.settled.append(safe_text(without_colours(output.text)))
        self.view.line("── end of output ──", "dim")
        self._flush()

    def expand_reasoning(self) -> None:
        self.view.show_reasoning = not self.view.show_reasoning
        if self.view.show_reasoning and self.view.last_reasoning:
            self.view.reasoning_block(self.view.last_reasoning)
        state = "shown in full" if self.view.show_reasoning else "collapsed"
        self._notice(f"reasoning: {state} (Ctrl+T)", 2.0)
        self._flush()

    # --- what the layout asks ---------------------------------------------------------------

    def has_live(self) -> bool:
        return self.view.busy() or bool(self._unprinted)

    def live_text(self, rows: int, columns: int) -> str:
        self.view.width = columns
        live = self.view.live(max(rows, 3), time.monotonic())
        if not self._unprinted:
            return live
        waiting = "".join(self._unprinted).rstrip("\n").rsplit("\n", rows)[-rows:]
        lines = [*waiting, *(live.split("\n") if live else [])]
        return "\n".join(lines[-rows:])

    def has_status(self) -> bool:
        return bool(self.busy) or time.monotonic() < self.notice_until

    def status_fragments(self) -> list[tuple[str, str]]:
        now = time.monotonic()
        if now < self.notice_until and self.notice:
            return [("class:notice", self.notice)]
        if not self.busy:
            return []
        frame = SPINNER[int(now * 10) % len(SPINNER)]
        seconds = now - self.busy_since
        if self.questions:
            self._tick()
            return [
                (
                    "class:status",
                    f"{frame} Waiting for your answer · {seconds:.0f}s · ctrl+c stops the turn",
                )
            ]
        what = {
            "starting": "Starting",
            "turn": self.view.status or "Working",
            "compact": "Compacting",
            "switch": self.view.status or "Switching",
            "plan": self.view.status or "Running the plan",
        }[self.busy]
        hint = " · ctrl+c stops" if self.busy in ("turn", "compact", "plan") else ""
        self._tick()
        return [("class:status", f"{frame} {what} · {seconds:.0f}s{hint}")]

    def _tick(self) -> None:
        """While busy the spinner turns (a redraw every 100 ms)."""
        loop = self.screen.app.loop
        if loop is not None and not self._ticking:
            self._ticking = True

            def tick() -> None:
                self._ticking = False
                self.screen.app.invalidate()

            loop.call_later(0.1, tick)

    def queued_fragments(self, columns: int) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for item in self.pending:
            first = item.shown.strip().split("\n")[0]
            out.append(("class:queued", cut(f"⏎ queued: {safe_line(first)}", columns - 1) + "\n"))
        if out:
            text = out[-1][1].rstrip("\n")
            out[-1] = (out[-1][0], text)
        return out

    def footer_text(self, columns: int) -> str:
        backend = self._backend
        if backend is None:
            return "choose the session to resume" if self.picker is not None else "starting…"
        stats = self.stats
        used = stats.input_tokens + stats.output_tokens
        parts = [
            backend.model,
            f"approval {backend.mode}",
            stats.context_text(),
            f"{tokens(used)} tokens" if used else "",
            stats.cost_text() if used else "",
            f"session {backend.session_id[:8]}" + (" (daemon)" if backend.remote else ""),
        ]
        return footer(parts, columns)

    # --- Host (slash commands) ----------------------------------------------------------------

    @property
    def backend(self) -> Backend | None:
        return self._backend

    def registry(self) -> slash.Registry:
        """The commands as they are now: a custom command file added or changed while
        the client runs counts from the next completion or command."""
        return self._custom.current()

    def _warn_custom(self) -> None:
        for warning in self._custom.warnings:
            if warning not in self._warned:
                self.view.line(f"custom command skipped: {safe_line(warning)}", "yellow")
        self._warned = list(self._custom.warnings)

    def arguments(self, name: str) -> list[str]:
        command = self.registry().get(name)
        if command is None or command.arguments is None:
            return []
        try:
            return command.arguments(self)
        except Exception:  # completion must never break typing
            return []

    def say(self, text: str, *styles: str) -> None:
        self.view.note(safe_line(text), *styles)

    def expand(self, text: str) -> str:
        """`text` with its @path attachments, as a message is sent (steering)."""
        return attachments.expand(text, self.workspace)[0]

    def flush(self) -> None:
        self._flush()

    def say_markdown(self, source: str) -> None:
        self.view.markdown_text(source)

    def say_block(self, lines: list[str]) -> None:
        """Lines as a block of their own, above the live part (the answer streaming
        there goes on where it was)."""
        self.view.block([safe_line(line) for line in lines])

    def clear(self) -> None:
        self.screen.clear()

    def usage_text(self) -> str:
        return "\n".join(self.stats.report())

    def run_plan(self, arguments: str) -> None:
        """Host: run a plan file in this session (cli/tui/plan.py)."""
        from codecoder.cli.tui.plan import start_plan

        start_plan(self, arguments)

    def compact(self) -> None:
        backend = self._backend
        if backend is None:
            return
        try:
            backend.compact()
        except Unavailable as exc:
            self.view.line(str(exc), "yellow")
            return
        self.busy, self.busy_since = "compact", time.monotonic()

    def replace_backend(self, make: Callable[[Backend], Backend], doing: str) -> None:
        old = self._backend
        if old is None:
            return
        self.busy, self.busy_since = "switch", time.monotonic()
        self.view.status = doing[:1].upper() + doing[1:]

        def work() -> None:
            try:
                new = make(old)
            except (StartFailed, Unavailable) as exc:
                self._post(self._switch_failed, str(exc))
                return
            except Exception as exc:
                self._post(self._switch_failed, f"internal error: {exc!r}")
                return
            self._post(self._switched, old, new)

        self._start_worker(work)

    def _switch_failed(self, message: str) -> None:
        self.busy = ""
        self.view.status = ""
        self.view.line(message, "yellow")
        self._flush()
        self._next()

    def _switched(self, old: Backend, new: Backend) -> None:
        self._closing.append(old)
        self._start_worker(old.close)
        other = new.session_id != old.session_id
        if other:
            window, self.stats = self.stats.window, Stats()
            self.stats.window = window
        self._ready(new, False, other)


def _joined(parts: list[str], width: int) -> list[str]:
    """`parts` joined with ` · `, a new line where the next part would not fit: left to
    the terminal, a narrow one breaks the line mid-word."""
    lines = [parts[0]]
    for part in parts[1:]:
        if width_of(lines[-1]) + 3 + width_of(part) < width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return lines


def safe_text(text: str) -> str:
    out = visible(text)
    return out if out.endswith("\n") else out + "\n"


JOINED_TOKENS = 8 * 1024
"""Characters of tokens joined into one event at most."""


def _join_tokens(handle: Any, first: NewToken, waiting: list[RemoteEvent | None]) -> NewToken:
    """`first` and the tokens queued right behind it, as one; the first other event (or
    the end of the stream) is put in `waiting`."""
    parts = [first.text]
    size = len(first.text)
    while size < JOINED_TOKENS:
        try:
            event = handle.next_event(timeout=0)
        except TimeoutError:
            break
        except Exception:  # the stream broke: the pump sees it next
            waiting.append(None)
            break
        if not isinstance(event, NewToken):
            waiting.append(event)
            break
        parts.append(event.text)
        size += len(event.text)
    return first if len(parts) == 1 else NewToken("".join(parts))


def _unwrap(event: RemoteEvent | None) -> RemoteEvent | None:
    while isinstance(event, Subagent):
        event = event.event
    return event


def _command_folders(workspace: Path) -> list[tuple[Path, str]]:
    from codecoder import paths

    return [
        (paths.project_dir(workspace) / "commands", "project"),
        (paths.config_dir() / "commands", "user"),
    ]


def _silence() -> None:
    """The terminal is gone: what would be written to it goes nowhere."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd):
                os.dup2(devnull, fd)
    os.close(devnull)
