"""`codecoder demo`: a recorded session replayed offline on a copy of an example project.

Everything but the model is real: the kernel, the tools, the permission policy, the
commands it runs (the project's own tests, twice) and the edit it makes to the copy.

In a terminal it runs in the terminal client itself (cli/tui/), which types the task as
a person would and leaves when the turn is over, so the first minute shows the product
as it is. Piped (CI, `| less`) it is printed line by line (cli/render.py) instead.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from codecoder.app.options import AgentOptions
from codecoder.cli.render import Renderer
from codecoder.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_SIGINT, EXIT_USAGE
from codecoder.kernel.events import AgentEvent, Done
from codecoder.kernel.handle import AgentHandle
from codecoder.providers.scripted import Script, ScriptedProvider, load_script

if TYPE_CHECKING:
    from codecoder.app.wiring import AgentSetup
    from codecoder.cli.commands import DemoOptions
    from codecoder.cli.tui.app import Client
    from codecoder.cli.tui.backend import LocalBackend

TASK = "The tests in this project fail. Find out why and fix it."
MAX_SPEED = 1000.0
MODEL = "demo (recorded)"
"""The model the client's banner and footer name: no model is asked."""
INTRO = (
    "CodeCoder demo: a recorded session, replayed offline (no API key)\n"
    "on a copy of an example project. It runs by itself; Ctrl+C stops it.\n"
)
"""Lines short enough for a narrow terminal: written before the client, which wraps."""
CLOSING = (
    "That was the demo: the model's replies were recorded; the tools, the test runs and "
    "the edit were real, on the copy. To work on your own project, run `codecoder` in it "
    "(it says how to set up a model), or `codecoder -m PROVIDER/MODEL`."
)


def run_demo(options: DemoOptions) -> int:
    if not 0 < options.speed <= MAX_SPEED:  # NaN is neither
        print(f"codecoder: --speed must be above 0 and at most {MAX_SPEED:g}", file=sys.stderr)
        return EXIT_USAGE
    bundle = resources.files("codecoder.demo")
    workspace = Path(tempfile.mkdtemp(prefix="codecoder-demo-"))
    try:
        with resources.as_file(bundle / "project") as project:
            shutil.copytree(project, workspace, dirs_exist_ok=True)
        with resources.as_file(bundle / "session.json") as script_path:
            script = _scaled(load_script(script_path), options.speed)
        if os.isatty(0) and os.isatty(1):
            return _in_the_client(script, workspace)
        return _printed(script, workspace)
    finally:
        if options.keep:
            print(f"(the project copy is kept in {workspace})")
        else:
            shutil.rmtree(workspace, ignore_errors=True)


def _in_the_client(script: Script, workspace: Path) -> int:
    """The terminal client on the copy, with the task submitted for the person. It runs
    full-auto: an approval would wait for a key, and the demo must finish on its own.
    The intro is written before prompt_toolkit is imported (most of the launch time)."""
    color = not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    os.write(1, (f"\x1b[1m{INTRO}\x1b[0m" if color else INTRO).encode())
    from codecoder.cli.tui.app import Client  # prompt_toolkit: only for a terminal

    agent = AgentOptions(model=MODEL, cwd=str(workspace), approval="full-auto")
    client = Client(
        agent, workspace, lambda: _backend(script, agent, workspace), color=color, daemon=False
    )
    client.after_turn = lambda done: _leave(client, done)
    client.submit(TASK, TASK)  # waits for the session, then shows and sends as if typed
    return client.run()


def _backend(script: Script, agent: AgentOptions, workspace: Path) -> LocalBackend:
    """The demo's session, on the client's worker thread: no session store, no config
    but the permission rules (a broken config.toml is a usage error, as elsewhere)."""
    from codecoder.app.wiring import WiringError, demo_agent
    from codecoder.cli.tui.backend import LocalBackend, StartFailed

    try:
        setup = demo_agent(ScriptedProvider(script), workspace)
    except WiringError as exc:
        raise StartFailed(str(exc)) from exc
    return LocalBackend(setup, agent, workspace)


def _leave(client: Client, done: Done | None) -> None:
    """The turn is over: say how to go on for real, and leave. Staying would offer a
    prompt whose every message fails: the recorded model has no more replies."""
    client.say_markdown(CLOSING)  # wrapped at word boundaries, as answers are
    client.flush()
    if done is not None and done.reason == "cancelled":
        code = EXIT_SIGINT
    else:
        code = EXIT_OK if done is not None and done.reason == "completed" else EXIT_FAILED
    client.exit_code = code
    client.screen.app.exit(result=code)


def _printed(script: Script, workspace: Path) -> int:
    """Not a terminal: the turn printed line by line, as a log reads."""
    from codecoder.app.wiring import WiringError, demo_agent

    try:
        setup = demo_agent(ScriptedProvider(script), workspace)
    except WiringError as exc:
        print(f"codecoder: {exc}", file=sys.stderr)
        return EXIT_USAGE
    renderer = Renderer()
    renderer.line("CodeCoder demo", "bold")
    renderer.line(
        f"An offline replay (no API key) in a copy of an example project: {workspace}\n",
        "dim",
    )
    renderer.user(TASK)
    try:
        done = _replay(setup, renderer)
    finally:
        setup.close()
    renderer.summary()
    renderer.line(f"\n{CLOSING}")
    if done.reason == "cancelled":
        return EXIT_SIGINT
    return EXIT_OK if done.reason == "completed" else EXIT_FAILED


def _replay(setup: AgentSetup, renderer: Renderer) -> Done:
    """Run the turn; Ctrl+C cancels it cleanly, a second Ctrl+C kills its commands."""
    handle = setup.loop.start()
    try:
        handle.send(TASK)
        try:
            return _render_turn(handle, renderer)
        except KeyboardInterrupt:
            handle.cancel()
            try:
                return _render_turn(handle, renderer)
            except KeyboardInterrupt:
                setup.kill_processes()
                return Done(cancelled=True, reason="cancelled")
    finally:
        handle.shutdown()


def _render_turn(handle: AgentHandle, renderer: Renderer) -> Done:
    """Shows the turn live; after a Ctrl+C, a second call goes on where this one was."""
    event: AgentEvent | None = None
    for event in handle.turn():
        renderer.show(event)
    assert isinstance(event, Done)  # a turn ends on its Done
    return event


def _scaled(script: Script, speed: float) -> Script:
    replies = [
        msgspec.structs.replace(r, token_delay=r.token_delay / speed) for r in script.replies
    ]
    return msgspec.structs.replace(script, replies=replies)
