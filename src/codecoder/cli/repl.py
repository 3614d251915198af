"""`codecoder` and `codecoder resume`: the interactive terminal client (cli/tui/), on a
session of the running daemon (by default when one runs; always with `--attach`) or in
this process (`--no-daemon`, or no daemon).

Not a terminal (standard input or output redirected): it behaves like `codecoder exec`
on the task read from standard input (`codecoder < task.md > answer.md`), with exec's
approval default (never-ask) unless `--approval` was given, and exec's exit codes.
`codecoder resume --pick` is the exception: a picker needs a person at a terminal, so
without one it is a usage error (exit 2), never a guess at which session was meant.

With no model configured (no `-m`, no `--script`, no `model = …` in config.toml, not
resuming, no daemon) it prints a short guide instead of one error line.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder.exitcodes import EXIT_USAGE

if TYPE_CHECKING:
    from codecoder.app.options import AgentOptions
    from codecoder.cli.tui.backend import Backend
    from codecoder.daemon.client import DaemonClient
    from codecoder.sessions.records import SessionInfo

GUIDE = """\
CodeCoder needs a model to talk to. Pick one of these:

  1. An API key in the environment, and the model on the command line:
       export ANTHROPIC_API_KEY=…        # or OPENAI_API_KEY, OPENROUTER_API_KEY, DEEPSEEK_API_KEY
       codecoder -m anthropic/claude-sonnet-4-5

  2. A default model in {config}:
       model = "anthropic/claude-sonnet-4-5"

     or a local server (Ollama, vLLM, llama.cpp, LM Studio …), no key needed:
       model = "ollama/qwen3-coder"
       # another server:  [providers.local]  base_url = "http://localhost:8000/v1"  wire = "chat"

  3. No model at all: `codecoder demo` replays a recorded session offline.

`codecoder models` lists what is configured; `codecoder doctor` checks each key and server.
Every setting: docs/config.md.
"""


def run_repl(
    options: AgentOptions,
    *,
    attach: str | None = None,
    no_daemon: bool = False,
    approval_given: bool = True,
    pick: bool = False,
) -> int:
    """The interactive client; `approval_given`: `--approval` was on the command line
    (otherwise a run without a terminal takes exec's default); `pick`: `resume --pick`,
    the session is chosen in the client's picker before any is opened."""
    workspace = Path(options.cwd or ".").expanduser().resolve()
    if not workspace.is_dir():
        print(f"codecoder: no such folder: {workspace}", file=sys.stderr)
        return EXIT_USAGE
    if pick and not (os.isatty(0) and os.isatty(1)):
        print(
            "codecoder resume: --pick needs a terminal (standard input and output); "
            "give the session's ID instead (`codecoder sessions` lists them)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not (os.isatty(0) and os.isatty(1)):
        return _not_a_terminal(options, attach, approval_given)
    choices: list[SessionInfo] | None = []
    if pick:
        choices = _pickable(workspace)
        if not choices:
            if choices is not None:
                print(f"codecoder resume: no session to resume in {workspace}", file=sys.stderr)
            return EXIT_USAGE
    daemon: DaemonClient | None = None
    if attach is not None or (not no_daemon and _daemon_runs()):
        from codecoder.daemon.client import DaemonClient, DaemonUnavailable

        try:
            daemon = DaemonClient()
        except DaemonUnavailable as exc:
            if attach is not None:
                print(
                    f"codecoder: {exc} (start one with `codecoder daemon --detach`)",
                    file=sys.stderr,
                )
                return EXIT_USAGE
    if daemon is None and not pick and _needs_a_model(options):  # (a daemon has its own defaults)
        from codecoder import paths

        print(GUIDE.format(config=paths.config_dir() / "config.toml"), file=sys.stderr, end="")
        return EXIT_USAGE
    early = _EarlyFrame(_color())  # the prompt now; prompt_toolkit takes ~100 ms to import
    try:
        from codecoder.cli.tui.app import Client, FirstPick
        from codecoder.cli.tui.backend import open_backend

        def open_chosen(session: str) -> Backend:
            chosen = msgspec.structs.replace(options, resume=session)
            return open_backend(chosen, workspace, attach=None, daemon=daemon)

        client = Client(
            options,
            workspace,
            lambda: open_backend(options, workspace, attach=attach, daemon=daemon),
            color=_color(),
            daemon=daemon is not None,
            first_pick=FirstPick(choices, open_chosen) if choices else None,
        )
        early.hand_over()
        return client.run()
    finally:
        early.restore()


class _EarlyFrame:
    """The prompt and the footer, drawn before prompt_toolkit is imported (it is most of
    the launch time), with the terminal's echo and line buffering off so that what is
    typed meanwhile stays in its input queue, unechoed, for the editor to read.
    prompt_toolkit's first frame erases this one from the line it starts on. The
    terminal's settings as they were are put back at the end, whatever happens."""

    def __init__(self, color: bool) -> None:
        import termios

        self._saved: list[Any] | None = None
        try:
            self._saved = termios.tcgetattr(0)
            quiet = termios.tcgetattr(0)
            quiet[0] &= ~termios.ICRNL  # Enter stays Enter (not Ctrl+J, a new line)
            quiet[3] &= ~(termios.ECHO | termios.ICANON)
            termios.tcsetattr(0, termios.TCSANOW, quiet)  # NOW: keep what was typed
        except termios.error:
            self._saved = None
        from codecoder.cli.tui.text import MARK

        footer = "\x1b[90mstarting…\x1b[0m" if color else "starting…"
        os.write(1, f"\r{MARK} \r\n{footer}\x1b[1A\r\x1b[2C".encode())

    def hand_over(self) -> None:
        """Back to the prompt line's first column, where prompt_toolkit draws."""
        os.write(1, b"\r")

    def restore(self) -> None:
        import termios

        if self._saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(0, termios.TCSADRAIN, self._saved)


def _pickable(workspace: Path) -> list[SessionInfo] | None:
    """The sessions `resume --pick` offers: this folder's that got an answer, newest
    first (a failed or empty one has nothing to go on with). No store, no sessions: the
    file is not created by looking. None when the store cannot be read (said here)."""
    from codecoder import paths
    from codecoder.cli.tui.picker import LIMIT
    from codecoder.sessions import SessionError, SessionStore

    if not paths.sessions_db().exists():
        return []
    try:
        with SessionStore() as store:
            return store.list_sessions(workspace, LIMIT, answered_only=True)
    except SessionError as exc:
        print(f"codecoder resume: {exc}", file=sys.stderr)
        return None


def _color() -> bool:
    return not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _daemon_runs() -> bool:
    from codecoder.daemon.client import running_daemon

    return running_daemon() is not None


def _needs_a_model(options: AgentOptions) -> bool:
    if options.model or options.script or options.resume is not None or options.continue_:
        return False
    from codecoder import paths
    from codecoder.config import ConfigError, read_toml
    from codecoder.providers.registry import default_model

    try:
        config = read_toml(paths.config_dir() / "config.toml")
    except ConfigError:
        return False  # the session's start says what is wrong with the file
    return default_model(config) is None


def _not_a_terminal(options: AgentOptions, attach: str | None, approval_given: bool) -> int:
    """`codecoder` with its input or output redirected: `codecoder exec -`."""
    if attach is not None:
        from codecoder.daemon.client import DaemonClient, DaemonUnavailable

        try:
            DaemonClient().close()
        except DaemonUnavailable as exc:
            print(f"codecoder: {exc} (start one with `codecoder daemon --detach`)", file=sys.stderr)
            return EXIT_USAGE
        print(
            "codecoder: --attach needs a terminal; to run a task without one, use `codecoder exec`",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from codecoder.cli.commands import ExecOptions
    from codecoder.cli.headless import run_exec

    if options.resume is not None:  # a session that cannot be found: said before the task
        from codecoder.sessions import SessionError, SessionStore

        try:
            with SessionStore() as store:
                store.resolve(options.resume)
        except SessionError as exc:
            print(f"codecoder: {exc}", file=sys.stderr)
            return EXIT_USAGE

    if os.isatty(0):
        print(
            "codecoder: the output is not a terminal: reading the task from the terminal "
            "(end it with Ctrl+D), as `codecoder exec -` does",
            file=sys.stderr,
        )
    if not approval_given:
        options = msgspec.structs.replace(options, approval="never-ask")
    return run_exec(ExecOptions(options, "-"))
