"""Tool calls as a person would write them: the command, the path, the pattern; never a
Python repr. Unknown tools (MCP, web_fetch, later ones) show their arguments as
`key=value` with JSON values. An MCP tool (`mcp__SERVER__TOOL`, the name the model sees)
is shown as `SERVER · TOOL`: the prefix and the doubled underscores are plumbing, the
server and the tool are what a person configured and recognises."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from codecoder.cli.tui.text import safe_line
from codecoder.wording import counted

MCP_PREFIX = "mcp__"
"""mcp/tools.py PREFIX, written out: importing that module takes the kernel and the MCP
caps into the client's start-up (tests/cli/test_tui_mcp.py checks they agree)."""


def _text(args: dict[str, Any], key: str, default: str = "") -> str:
    value = args.get(key, default)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _command(args: dict[str, Any]) -> str:
    where = args.get("cwd")
    return f"$ {_text(args, 'command')}" + (f"  (in {where})" if isinstance(where, str) else "")


def _read(args: dict[str, Any]) -> str:
    path = _text(args, "path")
    offset, limit = args.get("offset"), args.get("limit")
    if isinstance(offset, int) and offset > 1:
        end = f"-{offset + limit - 1}" if isinstance(limit, int) else "-"
        return f"{path}:{offset}{end}"
    return path


def _write(args: dict[str, Any]) -> str:
    content = args.get("content")
    lines = content.count("\n") + (0 if content.endswith("\n") else 1) if content else 0
    return f"{_text(args, 'path')} ({counted(lines, 'line')})"


def _edit(args: dict[str, Any]) -> str:
    every = " (every occurrence)" if args.get("replace_all") else ""
    return _text(args, "path") + every


def _search(args: dict[str, Any]) -> str:
    pattern = _text(args, "pattern")
    where = _text(args, "path", ".")
    glob = args.get("glob")
    shown = f"{pattern} in {where}"
    return shown + (f" ({glob})" if isinstance(glob, str) and glob else "")


def _agent(args: dict[str, Any]) -> str:
    tasks = args.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        return ""
    first = tasks[0].get("task", "") if isinstance(tasks[0], dict) else str(tasks[0])
    more = f" (+{len(tasks) - 1} more)" if len(tasks) > 1 else ""
    return f"{first}{more}"


def _todo(args: dict[str, Any]) -> str:
    items = args.get("items")
    return counted(len(items), "item") if isinstance(items, list) else ""


_SHOWN: dict[str, Callable[[dict[str, Any]], str]] = {
    "run_command": _command,
    "read_file": _read,
    "write_file": _write,
    "edit_file": _edit,
    "list_dir": lambda args: _text(args, "path", "."),
    "glob": _search,
    "grep": _search,
    "ask_user": lambda args: _text(args, "question"),
    "todo_write": _todo,
    "skill": lambda args: _text(args, "name"),
    "agent": _agent,
}

LABELS = {
    "run_command": "Run",
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "list_dir": "List",
    "glob": "Find",
    "grep": "Search",
    "ask_user": "Ask",
    "todo_write": "Plan",
    "skill": "Skill",
    "agent": "Agents",
}


DOING = {
    "run_command": "Running a command",
    "read_file": "Reading",
    "write_file": "Writing a file",
    "edit_file": "Editing",
    "list_dir": "Listing",
    "glob": "Finding files",
    "grep": "Searching",
    "ask_user": "Asking you",
    "todo_write": "Planning",
    "skill": "Loading a skill",
    "agent": "Waiting for sub-agents",
}


def mcp_parts(name: str) -> tuple[str, str] | None:
    """An MCP tool's server and tool, None for any other name. A server's name never
    holds `__` (mcp/config.py refuses it), so the first `__` after the prefix ends it."""
    if not name.startswith(MCP_PREFIX):
        return None
    server, sep, tool = name[len(MCP_PREFIX) :].partition("__")
    return (server, tool) if sep and server and tool else None


def label(name: str) -> str:
    """A tool's label; a name we do not know is the model's, shown as it is."""
    parts = mcp_parts(name)
    if parts is not None:
        return safe_line(" · ".join(parts))
    return LABELS.get(name) or safe_line(name)


def doing(name: str) -> str:
    """What the agent is doing while the tool runs (the status line)."""
    return DOING.get(name) or f"Running {label(name)}"


def argument_lines(args: dict[str, Any]) -> list[str]:
    """Every argument on a line of its own (`key: value`), for an approval of a tool we
    do not know: nothing cut, since the person approves exactly these values."""
    if not args:
        return ["(no arguments)"]
    return [
        f"{safe_line(key)}: {safe_line(value if isinstance(value, str) else _json(value))}"
        for key, value in args.items()
    ]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def arguments(name: str, args: dict[str, Any]) -> str:
    """The call's arguments on one line, made safe for the terminal."""
    shown = _SHOWN.get(name)
    if shown is not None:
        try:
            return safe_line(shown(args))
        except (AttributeError, TypeError):
            pass  # arguments the model got wrong: shown as they are
    parts = [
        f"{key}={value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
        for key, value in args.items()
    ]
    return safe_line(" ".join(parts))


def result_summary(name: str, text: str) -> str:
    """A finished call's result in a few words (its first line; a count for listings)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    if len(lines) > 1 and lines[0].strip() in ("{", "["):
        compact = _compact_json(text)  # pretty-printed JSON: its first line says nothing
        if compact is not None:
            return safe_line(compact)
    if name in ("read_file",):
        return counted(len(lines), "line")
    if name in ("glob", "grep", "list_dir") and len(lines) > 1:
        return counted(len(lines), "line")
    more = f" (+{counted(len(lines) - 1, 'line')})" if len(lines) > 1 else ""
    return safe_line(lines[0]) + more


def _compact_json(text: str) -> str | None:
    """JSON text on one line, None for text that is not JSON."""
    try:
        return _json(json.loads(text))
    except ValueError:
        return None
