"""The protocol mapping: kernel vocabulary ↔ Agent Client Protocol v1 (docs/acp.md).

Pure functions, no I/O: a kernel event becomes the `session/update` payloads it means
(`agent_message_chunk`, `tool_call`, `plan` …), a ConfirmRequest the options of
`session/request_permission`, a Done a `stopReason`, a stored history the updates that
replay it, and a prompt's content blocks the text the model reads. Field names follow
the schema of the `agent-client-protocol` package (checked against it in the tests).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from codecoder.kernel.events import (
    AgentEvent,
    ConfirmReply,
    DoneReason,
    NewReasoning,
    NewToken,
    Steered,
    TodoUpdated,
    ToolFinished,
    ToolOutput,
    ToolStarted,
)
from codecoder.kernel.messages import Message, Reasoning, Text, ToolCall, ToolResult
from codecoder.permissions.modes import MODES, ApprovalMode

OUTPUT_TAIL = 8 * 1024
"""The live output of a command is sent as its last 8 KiB (ACP replaces a tool call's
content with each update, so each one carries the tail so far)."""
MAX_ATTACHED_FILE = 256 * 1024
"""A `resource_link` to a local file is read into the prompt up to this size."""

_MODE_TEXT: dict[ApprovalMode, tuple[str, str]] = {
    "ask": ("Ask", "Asks before anything no rule allows"),
    "auto-edit": ("Auto-edit", "Edits files in the workspace without asking; commands ask"),
    "full-auto": ("Full auto", "Runs everything inside the workspace; outside asks"),
    "read-only": ("Read-only", "Only reads; any change is refused"),
    "never-ask": ("Never ask", "Refuses whatever would ask, with a reason the model reads"),
}
_KINDS = {
    "read_file": "read",
    "list_dir": "read",
    "skill": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "grep": "search",
    "glob": "search",
    "run_command": "execute",
    "web_fetch": "fetch",
    "todo_write": "think",
    "agent": "think",
}
_STOP_REASONS: dict[DoneReason, str] = {
    "completed": "end_turn",
    "cancelled": "cancelled",
    "shutdown": "cancelled",
    "max_rounds": "max_turn_requests",
    "error": "end_turn",
}
_PLAN_STATUS = {"pending": "pending", "in_progress": "in_progress", "done": "completed"}

PERMISSION_OPTIONS: tuple[dict[str, str], ...] = (
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_session", "name": "Always, this session", "kind": "allow_always"},
    {"optionId": "allow_project", "name": "Always, this project", "kind": "allow_always"},
    {"optionId": "deny", "name": "Deny", "kind": "reject_once"},
    {"optionId": "deny_session", "name": "Deny, this session", "kind": "reject_always"},
)
"""The answers of a ConfirmRequest; each optionId is a kernel Decision."""


def mode_state(current: ApprovalMode) -> dict[str, Any]:
    """`modes` of session/new and session/load: our approval modes."""
    return {
        "currentModeId": current,
        "availableModes": [
            {"id": mode, "name": _MODE_TEXT[mode][0], "description": _MODE_TEXT[mode][1]}
            for mode in MODES
        ],
    }


def stop_reason(reason: DoneReason) -> str:
    return _STOP_REASONS[reason]


def confirm_reply(option_id: str | None) -> ConfirmReply:
    """A permission answer (None: the request was cancelled) as the kernel's reply."""
    if option_id in ("allow_once", "allow_session", "allow_project", "deny_session"):
        return ConfirmReply(option_id)  # type: ignore[arg-type]
    if option_id == "deny":
        return ConfirmReply("deny")
    return ConfirmReply("deny", "the request was cancelled", by_person=False)


def ask_options(options: tuple[str, ...]) -> list[dict[str, str]]:
    """An AskUser question as permission options, for clients without
    `_codecoder/ask_user`: one per choice, and a way to decline."""
    found = [
        {"optionId": f"choice_{index}", "name": text, "kind": "allow_once"}
        for index, text in enumerate(options)
    ]
    return [*found, {"optionId": "decline", "name": "Don't answer", "kind": "reject_once"}]


def ask_answer(option_id: str | None, options: tuple[str, ...]) -> str:
    if option_id and option_id.startswith("choice_"):
        index = int(option_id.removeprefix("choice_"))
        if 0 <= index < len(options):
            return options[index]
    return "(the user did not answer)"


# --- tool calls -----------------------------------------------------------------------


def tool_call(call_id: str, name: str, args: dict[str, Any], workspace: Path) -> dict[str, Any]:
    """The fields a client shows for a tool call: title, kind, locations, raw input."""
    fields: dict[str, Any] = {
        "toolCallId": call_id,
        "title": tool_title(name, args),
        "kind": _KINDS.get(name, "other"),
        "rawInput": args,
    }
    path = args.get("path")
    if isinstance(path, str) and name != "run_command":
        location: dict[str, Any] = {"path": str(_absolute(path, workspace))}
        offset = args.get("offset")
        if isinstance(offset, int) and offset >= 1:
            location["line"] = offset
        fields["locations"] = [location]
    return fields


def tool_title(name: str, args: dict[str, Any]) -> str:
    """The call as a person would write it: the command, the path, the pattern."""
    command, path, pattern = args.get("command"), args.get("path"), args.get("pattern")
    if name == "run_command" and isinstance(command, str):
        return command
    verbs = {"read_file": "Read", "write_file": "Write", "edit_file": "Edit", "list_dir": "List"}
    if name in verbs and isinstance(path, str):
        return f"{verbs[name]} {path}"
    if name in ("grep", "glob") and isinstance(pattern, str):
        where = f" in {path}" if isinstance(path, str) else ""
        return f"{name} {pattern}{where}"
    tasks = args.get("tasks")
    if name == "agent" and isinstance(tasks, list) and tasks and isinstance(tasks[0], dict):
        task = " ".join(str(tasks[0].get("task", "")).split())[:80]
        more = f" (+{len(tasks) - 1} more)" if len(tasks) > 1 else ""
        return f"Sub-agent: {task}{more}"
    return name


def _absolute(path: str, workspace: Path) -> Path:
    expanded = Path(os.path.expanduser(path))
    return expanded if expanded.is_absolute() else workspace / expanded


def _diff(name: str, args: dict[str, Any], workspace: Path) -> dict[str, Any] | None:
    path = args.get("path")
    if not isinstance(path, str):
        return None
    where = str(_absolute(path, workspace))
    if name == "write_file" and isinstance(args.get("content"), str):
        return {"type": "diff", "path": where, "oldText": None, "newText": args["content"]}
    old, new = args.get("old_text"), args.get("new_text")
    if name == "edit_file" and isinstance(old, str) and isinstance(new, str):
        return {"type": "diff", "path": where, "oldText": old, "newText": new}
    return None


def _text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


class ToolCalls:
    """What the mapping remembers between events of one session: each running call's
    arguments (for the diff at its end) and its output tail."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self._args: dict[str, tuple[str, dict[str, Any]]] = {}
        self._tails: dict[str, str] = {}

    def running(self, name: str) -> str | None:
        """The id of the latest call of tool `name` still running, if any (an AskUser
        event does not name the ask_user call that raised it)."""
        found = [call_id for call_id, (called, _) in self._args.items() if called == name]
        return found[-1] if found else None

    def updates(self, event: AgentEvent) -> list[dict[str, Any]]:
        """The `session/update` payloads of one kernel event (none for most others)."""
        if isinstance(event, NewToken):
            return [_chunk("agent_message_chunk", event.text)]
        if isinstance(event, NewReasoning):
            return [_chunk("agent_thought_chunk", event.text)]
        if isinstance(event, ToolStarted):
            self._args[event.id] = (event.name, event.args)
            fields = tool_call(event.id, event.name, event.args, self.workspace)
            return [{"sessionUpdate": "tool_call", **fields, "status": "in_progress"}]
        if isinstance(event, ToolOutput):
            tail = (self._tails.get(event.id, "") + event.chunk)[-OUTPUT_TAIL:]
            self._tails[event.id] = tail
            return [_progress(event.id, content=[_text_content(tail)])]
        if isinstance(event, ToolFinished):
            return [self._finished(event)]
        if isinstance(event, TodoUpdated):
            return [plan(event)]
        if isinstance(event, Steered) and not event.next_turn:
            return [_chunk("user_message_chunk", event.text)]  # it joined the turn
        return []

    def _finished(self, event: ToolFinished) -> dict[str, Any]:
        name, args = self._args.pop(event.id, (event.name, {}))
        self._tails.pop(event.id, None)
        ok = event.error is None and event.result is not None and event.result.status == "success"
        text = event.result.text if event.result is not None else ""
        if event.error is not None:
            text = event.error.message
        content = [_text_content(text)] if text else []
        diff = _diff(name, args, self.workspace) if ok else None
        if diff is not None:
            content.insert(0, diff)
        return _progress(event.id, status="completed" if ok else "failed", content=content)


def _chunk(kind: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def _progress(call_id: str, **fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, **fields}


def plan(event: TodoUpdated) -> dict[str, Any]:
    entries = [
        {"content": item.content, "priority": "medium", "status": _PLAN_STATUS[item.status]}
        for item in event.items
    ]
    return {"sessionUpdate": "plan", "entries": entries}


def permission_call(call: ToolCall, workspace: Path) -> dict[str, Any]:
    """The `toolCall` of a session/request_permission: what is to be approved, with the
    diff of an edit so that it shows exactly what it changes."""
    fields = tool_call(call.id, call.name, call.args, workspace)
    diff = _diff(call.name, call.args, workspace)
    if diff is not None:
        fields["content"] = [diff]
    return {**fields, "status": "pending"}


# --- history -------------------------------------------------------------------------


def history_updates(messages: list[Message], workspace: Path) -> list[dict[str, Any]]:
    """The updates that show a stored conversation (session/load, attach)."""
    updates: list[dict[str, Any]] = []
    calls: dict[str, ToolCall] = {}
    for message in messages:
        for item in message.items:
            if isinstance(item, Text) and message.role in ("user", "assistant"):
                kind = "user_message_chunk" if message.role == "user" else "agent_message_chunk"
                updates.append(_chunk(kind, item.text))
            elif isinstance(item, Reasoning):
                updates.append(_chunk("agent_thought_chunk", item.text))
            elif isinstance(item, ToolCall):
                calls[item.id] = item
                fields = tool_call(item.id, item.name, item.args, workspace)
                updates.append({"sessionUpdate": "tool_call", **fields, "status": "in_progress"})
            elif isinstance(item, ToolResult):
                updates.append(_stored_result(item, calls.get(item.tool_call_id), workspace))
    return updates


def _stored_result(result: ToolResult, call: ToolCall | None, workspace: Path) -> dict[str, Any]:
    ok = result.status == "success"
    content = [_text_content(result.text)] if result.text else []
    diff = _diff(call.name, call.args, workspace) if ok and call is not None else None
    if diff is not None:
        content.insert(0, diff)
    return _progress(result.tool_call_id, status="completed" if ok else "failed", content=content)


# --- prompts ---------------------------------------------------------------------------


def prompt_text(blocks: Any, workspace: Path) -> str:
    """The user message of a session/prompt: text blocks as they are, an embedded
    resource as a tagged file, a link to a local file as its content (read here, up to
    MAX_ATTACHED_FILE). ValueError names what cannot be taken."""
    if not isinstance(blocks, list) or not blocks:
        raise ValueError("`prompt` must be a non-empty list of content blocks")
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            raise ValueError("a content block is not an object")
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            parts.append(_embedded(block["resource"]))
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            parts.append(_linked(block["uri"], workspace))
        else:
            raise ValueError(f"content blocks of type {kind!r} are not supported")
    return "\n\n".join(parts)


def _embedded(resource: dict[str, Any]) -> str:
    uri, text = resource.get("uri", ""), resource.get("text")
    if not isinstance(text, str):
        raise ValueError("only text resources are supported")
    return f'<file path="{_path_of(str(uri))}">\n{text}\n</file>'


def _linked(uri: str, workspace: Path) -> str:
    path = _path_of(uri)
    target = _absolute(path, workspace)
    try:
        with target.open("rb") as handle:
            data = handle.read(MAX_ATTACHED_FILE + 1)
    except OSError:
        return f"@{path}"
    if len(data) > MAX_ATTACHED_FILE or b"\x00" in data:
        return f"@{path} (not attached: large or binary; read it with a tool)"
    return f'<file path="{path}">\n{data.decode("utf-8", "replace")}\n</file>'


def _path_of(uri: str) -> str:
    parts = urlsplit(uri)
    return unquote(parts.path) if parts.scheme == "file" else uri
