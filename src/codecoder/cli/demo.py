"""`codecoder demo`: a recorded session replayed offline on a copy of an example project.

Everything but the model is real: the kernel, the tools, the permission policy, the
commands it runs (the project's own tests, twice) and the edit it makes to the copy.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from codecoder.cli.render import Renderer
from codecoder.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_SIGINT, EXIT_USAGE
from codecoder.kernel.events import AgentEvent, Done
from codecoder.kernel.handle import AgentHandle
from codecoder.providers.scripted import Script, ScriptedProvider, load_script

if TYPE_CHECKING:
    from codecoder.app.wiring import AgentSetup
    from codecoder.cli.commands import DemoOptions

TASK = "The tests in this project fail. Find out why and fix it."
MAX_SPEED = 1000.0


def run_demo(options: DemoOptions) -> int:
    from codecoder.app.wiring import WiringError, demo_agent

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
        if done.reason == "cancelled":
            return EXIT_SIGINT
        return EXIT_OK if done.reason == "completed" else EXIT_FAILED
    finally:
        if options.keep:
            print(f"(the project copy is kept in {workspace})")
        else:
            shutil.rmtree(workspace, ignore_errors=True)


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
