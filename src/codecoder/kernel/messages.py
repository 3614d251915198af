"""Provider-neutral conversation values (DESIGN.md §2).

Plain tagged values: equal content means equal messages. They are frozen msgspec structs
so that the session store, the daemon wire, headless output and replay all share one
lossless JSON form (`kernel.codec`).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Role = Literal["system", "user", "assistant", "tool"]
MessageStatus = Literal["complete", "interrupted"]
ToolResultStatus = Literal["success", "error", "cancelled"]


class Text(msgspec.Struct, frozen=True, tag="text", tag_field="type"):
    """A run of plain text (also the only content item a tool result carries today)."""

    text: str


class Reasoning(msgspec.Struct, frozen=True, tag="reasoning", tag_field="type"):
    """Model reasoning. `token` is the provider's opaque proof (Anthropic thinking
    signature, OpenAI encrypted reasoning) and must be sent back byte for byte."""

    text: str
    token: str | None = None


class ToolCall(msgspec.Struct, frozen=True, tag="tool_call", tag_field="type"):
    """A tool invocation. `raw_args` keeps the model's text when it was not valid JSON;
    such a call never runs and fails as a ToolError the model can see."""

    id: str
    name: str
    args: dict[str, Any]
    raw_args: str | None = None


ContentItem = Text


class ToolResult(msgspec.Struct, frozen=True, tag="tool_result", tag_field="type"):
    """The answer to one ToolCall: the tool ran (success/error) or never finished
    (cancelled). Every ToolCall in history has exactly one (invariant 3)."""

    tool_call_id: str
    content: tuple[ContentItem, ...]
    status: ToolResultStatus = "success"

    @property
    def text(self) -> str:
        return "".join(item.text for item in self.content)


MessageItem = Text | Reasoning | ToolCall | ToolResult


class Message(msgspec.Struct, frozen=True):
    """One conversation message. `id` is unique and increasing within a session; an
    assistant message cut short by cancel or crash keeps its text, marked interrupted."""

    id: int
    role: Role
    items: tuple[MessageItem, ...]
    status: MessageStatus = "complete"

    @property
    def text(self) -> str:
        return "".join(item.text for item in self.items if isinstance(item, Text))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(item for item in self.items if isinstance(item, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(item for item in self.items if isinstance(item, ToolResult))


def user_message(text: str, id: int = 0) -> Message:
    return Message(id=id, role="user", items=(Text(text),))


def tool_result(call_id: str, text: str, status: ToolResultStatus = "success") -> ToolResult:
    return ToolResult(tool_call_id=call_id, content=(Text(text),), status=status)


def same_args(checked: dict[str, Any], given: dict[str, Any]) -> bool:
    """Whether a tool's check left a call's arguments as they were, value and type: in
    Python `0 == False` and `1 == 1.0`, so an `==` took `"sandbox": 0` for unchanged and
    the policy judged the 0 (not `False`: no escalation) that the tool then read as False."""
    return checked is given or msgspec.json.encode(checked) == msgspec.json.encode(given)
