"""The `todo_write` tool: the model's checklist for work of several steps.

Each call sends the whole list, which replaces the previous one; the tool keeps no
state. The list reaches clients as a TodoUpdated event (rendered by the terminal,
carried by the headless JSON as `todo_updated`) and the model as the result text.

At most one item in progress is advised (in the description) but not enforced: a
second one costs nothing, while refusing the call would cost the model a round trip
for a rule that only serves tidiness. The result says so when it happens.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from codecoder.kernel.events import TodoItem, TodoUpdated
from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import Risk, ToolContext
from codecoder.tools.base import TypedTool

MAX_ITEMS = 100
_MARKS = {"pending": "[ ]", "in_progress": "[>]", "done": "[x]"}
STATUS_ALIASES = {"completed": "done", "complete": "done", "in-progress": "in_progress"}
"""Other agents' names for a status (`completed` is Claude Code's and OpenCode's)."""
FOREIGN_FIELDS = frozenset({"activeForm", "id", "priority"})
"""Fields other agents' checklists carry that ours has no use for: dropped."""


class TodoEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    content: Annotated[
        str, msgspec.Meta(pattern=r"\S", description="What to do, in one short line.")
    ]
    status: Annotated[
        Literal["pending", "in_progress", "done"],
        msgspec.Meta(description="Mark one item in_progress while you work on it."),
    ] = "pending"


class TodoWriteArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    items: Annotated[
        list[TodoEntry],
        msgspec.Meta(
            max_length=MAX_ITEMS,
            description="The whole checklist in order; it replaces the previous one.",
        ),
    ]


class TodoWriteTool(TypedTool[TodoWriteArgs]):
    name = "todo_write"
    description = (
        "Write your checklist for the current task; the user sees it. Use it for work of "
        "three or more steps: list the steps, mark one in_progress when you start it and "
        "done as soon as it is finished, add steps you discover. Send the whole list each "
        "time. Skip it for simple one-step requests."
    )
    risk: Risk = "read"
    args_type = TodoWriteArgs
    aliases = {"todos": "items"}

    def adapt(self, args: dict[str, Any]) -> dict[str, Any]:
        items = args.get("items")
        if not isinstance(items, list):
            return args
        entries: list[Any] = items  # type: ignore[assignment]
        return {**args, "items": [_entry(entry) for entry in entries]}

    def call(self, args: TodoWriteArgs, ctx: ToolContext) -> ToolResult:
        items = tuple(
            TodoItem(content=" ".join(entry.content.split()), status=entry.status)
            for entry in args.items
        )
        ctx.emit(TodoUpdated(items=items))
        return tool_result(ctx.call_id, render(items))


def _entry(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    fields: dict[str, Any] = entry  # type: ignore[assignment]
    out = {key: value for key, value in fields.items() if key not in FOREIGN_FIELDS}
    status = out.get("status")
    if isinstance(status, str):
        out["status"] = STATUS_ALIASES.get(status, status)
    return out


def render(items: tuple[TodoItem, ...]) -> str:
    if not items:
        return "Checklist cleared."
    done = sum(item.status == "done" for item in items)
    lines = [f"Checklist updated ({done} of {len(items)} done):"]
    lines += [f"{_MARKS[item.status]} {item.content}" for item in items]
    working = sum(item.status == "in_progress" for item in items)
    if working > 1:
        lines.append(f"Note: {working} items are in progress; finish one before starting another.")
    return "\n".join(lines)
