"""Shared set-up for the permission tests: a workspace, config files, tools, calls."""

from __future__ import annotations

import itertools
from functools import cache
from pathlib import Path
from typing import Any

from codecoder import paths
from codecoder.kernel.messages import ToolCall
from codecoder.kernel.ports import Risk, Tool
from codecoder.permissions.tomlfile import toml_string
from codecoder.tools.ask import AskUserTool
from codecoder.tools.files import EditFile, ListDir, ReadFile, WriteFile
from codecoder.tools.process import ProcessManager
from codecoder.tools.search import Glob, Grep
from codecoder.tools.shell import RunCommand

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
