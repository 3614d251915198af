"""`codecoder` and `codecoder resume`: a plain line-mode interactive session.

A first client on the same handle the headless runner uses: the user's lines go in as
ProcessMessage, events are rendered as they arrive, questions (ConfirmRequest, AskUser)
are put to the user and answered through their oneshot. Ctrl+C cancels the running turn;
at the prompt it clears the line, and a second one (or Ctrl+D, or /exit) leaves.
Commands: /compact, /exit. The richer terminal client will replace the input side.

SIGHUP (the terminal closed, the SSH connection dropped) ends the session: the running
turn is cancelled, so its command's tree is killed, and the exit code is 129. Left to
its default, the signal would end the process at once and leave the command running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from codecoder.cli.render import Renderer
from codecoder.exitcodes import EXIT_OK, EXIT_SIGHUP, EXIT_USAGE
from codecoder.kernel.events import (
    AgentEvent,
    AskUser,
    Compacted,
    ConfirmReply,
    ConfirmRequest,
    Decision,
    Done,
    StatusUpdate,
    Subagent,
    Usage,
)
from codecoder.kernel.handle import AgentClosed

if TYPE_CHECKING:
    from codecoder.app.options import AgentOptions
    from codecoder.app.wiring import AgentSetup

_ANSWERS: dict[str, Decision] = {
    "y": "allow_once",
    "a": "allow_session",
    "p": "allow_project",
    "n": "deny",
}
_CONFIRM_PROMPT = "  allow? [y]es once, [a]lways this session, always this [p]roject{note}, [n]o: "
_UNTRUSTED_NOTE = " (later sessions need `codecoder trust`)"
_GITIGNORE_PROMPT = (
    "  project rules go to .codecoder/config.local.toml, which git should not see.\n"
    "  add it to .gitignore (a tracked file)? [y]es, [n]o: use .codecoder/.gitignore: "
)


def run_repl(options: AgentOptions, *, attach: str | None = None, no_daemon: bool = False) -> int:
    """The interactive client: in this process, or on a session of the running daemon
    (always with `--attach`; by default when one runs, unless `--no-daemon`)."""
    workspace = Path(options.cwd or ".").expanduser().resolve()
    if not workspace.is_dir():
        print(f"codecoder: no such folder: {workspace}", file=sys.stderr)
        return EXIT_USAGE
    if attach is not None or (not no_daemon and _daemon_runs()):
        return _run_remote(options, workspace, attach)
    from codecoder.app.wiring import WiringError, build_agent

    try:
        setup = build_agent(options, workspace)
    except WiringError as exc:
        print(f"codecoder: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with contextlib.ExitStack() as stack:
        stack.callback(setup.close)
        return _drive(setup.loop.start(), setup.session_id, workspace, setup)


def _daemon_runs() -> bool:
    from codecoder.daemon.client import running_daemon

    return running_daemon() is not None


def _run_remote(options: AgentOptions, workspace: Path, attach: str | None) -> int:
    """A session of the daemon: a new one here, or `attach` (an id; "" for this
    folder's latest live session, and for --continue / --resume the stored one)."""
    from codecoder.daemon.client import DaemonClient, DaemonUnavailable, RemoteAgent, RpcError

    try:
        client = DaemonClient()
    except DaemonUnavailable as exc:
        print(f"codecoder: {exc} (start one with `codecoder daemon --detach`)", file=sys.stderr)
        return EXIT_USAGE
    try:
        session = (
            attach or options.resume or (_latest_stored(workspace) if options.continue_ else None)
        )
        if attach == "" and session is None:
            session = _latest_live(client, workspace)
        agent = RemoteAgent.open(client, workspace, session, options=options)
    except (RpcError, TimeoutError, DaemonUnavailable, ValueError) as exc:
        client.close()
        print(f"codecoder: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return _drive(agent, agent.session_id, workspace, None)


def _latest_stored(workspace: Path) -> str:
    from codecoder.sessions import SessionStore

    with SessionStore() as store:
        latest = store.latest_for(workspace)
    if latest is None:
        raise ValueError(f"no session to continue in {workspace}")
    return latest.id


def _latest_live(client: object, workspace: Path) -> str:
    from codecoder.daemon.client import DaemonClient

    assert isinstance(client, DaemonClient)
    client.initialize()
    live = client.call("_codecoder/sessions/list", {})["sessions"]
    here = [s for s in live if s.get("cwd") == str(workspace)]
    if not here:
        raise ValueError(f"the daemon has no live session in {workspace}")
    return str(here[-1]["sessionId"])


def _drive(handle: Any, session_id: str, workspace: Path, setup: AgentSetup | None) -> int:
    renderer = Renderer()
    terminals = [fd for fd in (1, 2) if os.isatty(fd)]
    previous = signal.signal(signal.SIGHUP, _hang_up)
    code = EXIT_OK
    try:
        where = " (daemon)" if setup is None else ""
        renderer.line(f"CodeCoder · session {session_id[:8]}{where} · {workspace}", "dim")
        renderer.line("Ctrl+C stops a turn · /compact · /exit or Ctrl+D to leave", "dim")
        _Session(handle, renderer, setup).run()
    except _HangUp:
        code = EXIT_SIGHUP
        _silence(terminals)  # the terminal is gone: writing to it would fail
        with contextlib.suppress(AgentClosed):
            handle.cancel()  # the command's tree is killed before the shutdown returns
    finally:
        handle.shutdown()  # in the daemon: detach, the session goes on
        signal.signal(signal.SIGHUP, previous)
    return code


class _HangUp(BaseException):
    """SIGHUP, raised on the main thread wherever it waits (like KeyboardInterrupt), so
    that a prompt blocked on a terminal that no longer answers gives way too."""


def _hang_up(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # once: the way out is not cut short
    raise _HangUp


def _silence(fds: list[int]) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in fds:
        os.dup2(devnull, fd)
    os.close(devnull)


class _Session:
    """The line-mode loop; `setup` is None on a daemon session (the daemon keeps its log
    and policy)."""

    def __init__(self, handle: Any, renderer: Renderer, setup: AgentSetup | None) -> None:
        self.handle = handle
        self.renderer = renderer
        self.setup = setup

    def run(self) -> None:
        while (line := self._read("\n> ")) is not None:
            text = line.strip()
            if not text:
                continue
            if text in ("/exit", "/quit"):
                return
            if text == "/compact":
                if self.setup is None:
                    self.renderer.line("/compact is not available on a daemon session", "dim")
                    continue
                self.handle.compact()
                self._until(lambda e: isinstance(e, Compacted | StatusUpdate) and _settles(e))
                continue
            if self.setup is not None and self.setup.log is not None:
                self.setup.log.begin_turn()
            self.handle.send(text)
            self._until(lambda e: isinstance(e, Done))

    def _until(self, last: Any) -> None:
        """Render events until one satisfies `last`; Ctrl+C, wherever it lands (waiting,
        rendering), cancels what is running and the events go on to its Done."""
        while True:
            try:
                event = self.handle.next_event()
                if event is None:
                    return
                self._show(event)
                if last(event):
                    return
            except KeyboardInterrupt:
                self.handle.cancel()

    def _show(self, event: AgentEvent) -> None:
        self.renderer.show(event)
        if isinstance(event, Usage) and self.setup is not None and self.setup.log is not None:
            self.setup.log.add_usage(event)
        inner = event
        while isinstance(inner, Subagent):
            inner = inner.event
        if isinstance(inner, ConfirmRequest):
            policy = self.setup.policy if self.setup is not None else None
            untrusted = policy is not None and not policy.trusted
            answer = self._read(_CONFIRM_PROMPT.format(note=_UNTRUSTED_NOTE if untrusted else ""))
            decision = _ANSWERS.get((answer or "n").strip()[:1].lower(), "deny")
            if decision == "allow_project" and policy is not None:
                self._before_first_project_rule(policy)
            inner.reply.send(ConfirmReply(decision))
        elif isinstance(inner, AskUser):
            for number, option in enumerate(inner.options, 1):
                self.renderer.line(f"  {number}. {option}")
            answer = (self._read(f"? {inner.question}\n  ") or "").strip()
            if answer.isdigit() and 0 < int(answer) <= len(inner.options):
                answer = inner.options[int(answer) - 1]
            inner.reply.send(answer)

    def _before_first_project_rule(self, policy: Any) -> None:
        """The first project rule creates `.codecoder/config.local.toml`, which is added
        to .gitignore; where that would change a tracked file, the user says whether."""
        from codecoder import paths
        from codecoder.permissions.tomlfile import ignore_plan

        workspace = policy.workspace
        if (paths.project_dir(workspace) / "config.local.toml").exists():
            return
        if ignore_plan(workspace) == "tracked":
            answer = (self._read(_GITIGNORE_PROMPT) or "").strip().lower()
            policy.edit_tracked_gitignore = answer.startswith("y")

    @staticmethod
    def _read(prompt: str) -> str | None:
        """A line from the user; None at end of input. Ctrl+C gives an empty line."""
        try:
            return input(prompt)
        except EOFError:
            return None
        except KeyboardInterrupt:
            print()
            return ""


def _settles(event: AgentEvent) -> bool:
    """The end of a /compact: its result, not the 'compacting' progress note."""
    return isinstance(event, Compacted) or (
        isinstance(event, StatusUpdate) and event.status == "compact"
    )
