"""Folding one streamed model reply into an assistant message.

The loop feeds StreamEvents in; the builder keeps items in the order the model produced
them (text, reasoning with its opaque token, tool calls) and can be closed at any moment:
a cancel or a broken stream still leaves a message whose text is kept, marked interrupted.

A reply is bounded as a whole (`capped`): what a model sends is decided by the model or
by whoever answers at its URL, and without a cap a stuck model or a hostile endpoint
streams into memory, the terminal and the session store without end (200 MB of text took
`exec` to 1 GB and left a 200 MB message in the store).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from typing import Any

import msgspec

from codecoder.kernel.messages import Message, MessageItem, Reasoning, Text, ToolCall
from codecoder.kernel.ports import (
    ProviderError,
    ReasoningDelta,
    ReasoningDone,
    StreamEvent,
    TextDelta,
    ToolCallDone,
)

MAX_REPLY_TEXT = 4 * 1024 * 1024
"""Characters of text and reasoning (its opaque tokens included) one reply may carry.
The longest output a model offers today is 128k tokens, about half a million characters;
eight times that is no real answer, only a model repeating itself or an endpoint that
never stops, and it still holds a few MB at most in memory and in the store."""

MAX_REPLY_ARGS = 4 * 1024 * 1024
"""Characters of tool-call arguments one reply may carry, all its calls together (so any
one call too). Arguments are output tokens as well: a `write_file` of a whole file fits
in the half million characters a model can send at most."""


def reply_too_long(what: str, limit: int) -> ProviderError:
    """The error that ends a turn whose reply passed a cap: one line that says which cap
    and that the reply was cut there (kept, interrupted), never retried (a model that ran
    away once would do it again, and a hostile endpoint certainly)."""
    return ProviderError(
        "reply_too_long",
        f"the model's reply passed {limit:,} characters of {what} and was cut there",
    )


def capped(events: Iterable[StreamEvent]) -> Iterator[StreamEvent]:
    """`events` up to the caps: the delta that passes MAX_REPLY_TEXT is cut to what fits
    and yielded, then `reply_too_long` is raised; a call whose arguments pass
    MAX_REPLY_ARGS is dropped (it never ran, so no call goes without a result) and the
    same error is raised. Every reply of every provider goes through here (the loop's
    reader, compaction). The source is closed when this ends, however it ends, so a
    provider drops its connection at the cap and nothing more is read."""
    text = 0
    args = 0
    try:
        for event in events:
            if type(event) is TextDelta or type(event) is ReasoningDelta:
                text += len(event.text)
                if text > MAX_REPLY_TEXT:
                    keep = len(event.text) - (text - MAX_REPLY_TEXT)
                    if keep > 0:
                        yield msgspec.structs.replace(event, text=event.text[:keep])
                    raise reply_too_long("text", MAX_REPLY_TEXT)
            elif type(event) is ToolCallDone:
                args += len(event.raw_args)
                if args > MAX_REPLY_ARGS:
                    raise reply_too_long(f"tool-call arguments ({event.name})", MAX_REPLY_ARGS)
            elif type(event) is ReasoningDone and event.token:
                text += len(event.token)
                if text > MAX_REPLY_TEXT:
                    raise reply_too_long("text", MAX_REPLY_TEXT)
            yield event
    finally:
        if isinstance(events, Generator):
            events.close()


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
