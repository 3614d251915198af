"""Shared set-up for the permission tests: a workspace, config files, tools, calls."""

from __future__ import annotations

import itertools
import subprocess
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from codecoder import paths
from codecoder.kernel.events import AgentEvent, ConfirmReply, ConfirmRequest, Done
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import ToolCall
from codecoder.kernel.ports import Risk, Tool
from codecoder.permissions import RulePolicy
from codecoder.permissions.modes import ApprovalMode
from codecoder.permissions.tomlfile import toml_string
from codecoder.permissions.trust import approve_project, trust
from codecoder.providers.scripted import ScriptedProvider
from codecoder.tools.ask import AskUserTool
from codecoder.tools.files import EditFile, ListDir, ReadFile, WriteFile
from codecoder.tools.process import ProcessManager
from codecoder.tools.search import Glob, Grep
from codecoder.tools.shell import RunCommand
from tests.invariants import check_history, check_turn

_ids = itertools.count(1)


class NetworkTool:
    """A tool with a URL argument, as web_fetch will have (the policy reads only the
    name, the risk and the arguments)."""

    name = "web_fetch"
    description = "Fetch a URL."
    risk: Risk = "network"
    parameters: dict[str, Any] = {"type": "object"}

    def run(self, args: dict[str, Any], ctx: Any) -> Any:
        raise AssertionError("the policy never runs a tool")


@cache
def tools() -> dict[str, Any]:
    """The real tools by name (typed loosely: some tools declare `risk` as a plain str)."""
    return {
        "run_command": RunCommand(ProcessManager()),
        "read_file": ReadFile(),
        "write_file": WriteFile(),
        "edit_file": EditFile(),
        "list_dir": ListDir(),
        "glob": Glob(),
        "grep": Grep(use_rg=False),
        "ask_user": AskUserTool(),
        "web_fetch": NetworkTool(),
    }


def call(name: str, **args: Any) -> tuple[Tool, ToolCall]:
    return tools()[name], ToolCall(id=f"call_{next(_ids)}", name=name, args=args)


def run(command: str, **extra: Any) -> tuple[Tool, ToolCall]:
    return call("run_command", command=command, **extra)


def toml_table(name: str, table: dict[str, list[str]]) -> str:
    lines = [f"[{name}]"]
    for key, items in table.items():
        lines.append(f"{key} = [{', '.join(toml_string(item) for item in items)}]")
    return "\n".join(lines) + "\n"


def write_user_rules(table: dict[str, list[str]]) -> Path:
    path = paths.config_dir() / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(toml_table("permissions", table))
    return path


def write_project_rules(workspace: Path, table: dict[str, list[str]], local: bool = False) -> Path:
    path = paths.project_dir(workspace) / ("config.local.toml" if local else "config.toml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(toml_table("permissions", table))
    return path


def trust_folder(workspace: Path) -> None:
    """Trust the folder and approve its allow rules as they are, as `codecoder trust` does."""
    trust(workspace)
    approve_project(workspace)


RULES = {"allow": ["run_command(git status)", "run_command(echo:*)"]}
"""The user rules of the adversarial world."""
SECRET = "ssh-rsa AAAA-very-secret"


class World(NamedTuple):
    """The places a case may touch: the workspace, a folder outside it, the home."""

    ws: Path
    out: Path
    home: Path


def make_world(tmp_path: Path, home: Path) -> World:
    """A git workspace with a link out of it and a key in it pointing at a secret, a
    folder outside it, and a home with something to lose."""
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "README.md").write_text("hello\n")
    out = tmp_path / "outside"
    out.mkdir()
    (out / "existing.txt").write_text("original\n")
    (out / "script.sh").write_text(f"touch {out}/curl-ran\n")
    (ws / "link").symlink_to(out)
    (home / "x").mkdir()
    (home / "x" / "keep.txt").write_text("keep\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    (ws / "key").symlink_to(home / ".ssh" / "id_rsa")
    write_user_rules(RULES)
    return World(ws, out, home)


def drive(
    world: World, mode: ApprovalMode, name: str, args: dict[str, Any], answer: str = "deny"
) -> list[AgentEvent]:
    """One turn through the real kernel, policy and tools: the model makes the call,
    then finishes; every question gets `answer`."""
    replies = [[{"type": "tool_call", "name": name, "args": args}], ["finished"]]
    policy = RulePolicy.load(world.ws, mode)
    loop = AgentLoop(
        ScriptedProvider.from_replies(replies), list(tools().values()), world.ws, policy=policy
    )
    handle = loop.start()
    events: list[AgentEvent] = []
    try:
        handle.send("go")
        while True:
            event = handle.next_event(20)
            assert event is not None, "the turn did not finish"
            events.append(event)
            if isinstance(event, ConfirmRequest):
                assert event.reply.send(ConfirmReply(answer, "not this")) is True  # type: ignore[arg-type]
            if isinstance(event, Done):
                break
    finally:
        handle.shutdown()
    check_turn(events)
    check_history(loop.messages)
    return events
