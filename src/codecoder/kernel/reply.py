"""Folding one streamed model reply into an assistant message.

The loop feeds StreamEvents in; the builder keeps items in the order the model produced
them (text, reasoning with its opaque token, tool calls) and can be closed at any moment:
a cancel or a broken stream still leaves a message whose text is kept, marked interrupted.
"""

from __future__ import annotations

from typing import Any

import msgspec

from codecoder.kernel.messages import Message, MessageItem, Reasoning, Text, ToolCall


def parse_args(raw: str) -> tuple[dict[str, Any], str | None]:
    """The model's argument text as (args, raw_args): raw_args is kept only when the text
    is not a JSON object, and such a call fails as a ToolError the model sees."""
    if not raw.strip():
        return {}, None
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return {}, raw
    if not isinstance(value, dict):
        return {}, raw
    return value, None


class ReplyBuilder:
    __slots__ = ("_items", "_reasoning", "_text")

    def __init__(self) -> None:
        self._items: list[MessageItem] = []
        self._text: list[str] = []
        self._reasoning: list[str] | None = None

    def text(self, text: str) -> None:
        if self._reasoning is not None:
            self.reasoning_done(None)
        self._text.append(text)

    def reasoning(self, text: str) -> None:
        self._flush_text()
        if self._reasoning is None:
            self._reasoning = []
        self._reasoning.append(text)

    def reasoning_done(self, token: str | None) -> None:
        self._flush_text()
        parts = self._reasoning or []
        self._reasoning = None
        if parts or token:
            self._items.append(Reasoning(text="".join(parts), token=token))

    def tool_call(self, call_id: str, name: str, raw_args: str) -> ToolCall:
        self._flush()
        args, raw = parse_args(raw_args)
        call = ToolCall(id=call_id, name=name, args=args, raw_args=raw)
        self._items.append(call)
        return call

    def build(self, message_id: int, *, interrupted: bool) -> Message | None:
        """The assistant message so far, or None when the model produced nothing."""
        self._flush()
        if not self._items:
            return None
        status = "interrupted" if interrupted else "complete"
        return Message(id=message_id, role="assistant", items=tuple(self._items), status=status)

    def draft(self, message_id: int) -> Message | None:
        """The message so far as a crash would leave it (interrupted), without closing the
        open text or reasoning: the reply goes on as if never looked at. The open run is
        joined in place, so drafting a long reply again and again copies it once."""
        items = list(self._items)
        if self._text:
            self._text = ["".join(self._text)]
            items.append(Text(self._text[0]))
        elif self._reasoning:
            self._reasoning = ["".join(self._reasoning)]
            items.append(Reasoning(text=self._reasoning[0]))
        if not items:
            return None
        return Message(id=message_id, role="assistant", items=tuple(items), status="interrupted")

    def _flush(self) -> None:
        self._flush_text()
        if self._reasoning is not None:
            self.reasoning_done(None)

    def _flush_text(self) -> None:
        if self._text:
            self._items.append(Text("".join(self._text)))
            self._text = []
