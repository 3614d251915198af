"""The fold of streamed tool-call pieces, shared by every adapter.

Each wire streams a tool call as a start (id, name) and argument text in pieces, keyed
by something of its own (Chat: `index`; Responses: the item id; Anthropic: the content
block index). The fold keeps key → id, name, argument pieces, and answers each finished
call with a `ToolCallDone` carrying the raw argument text: the kernel parses it, and
malformed JSON becomes a ToolError there. (Pieces are not passed on as they come: no
client showed them, and each would have cost a hop through every queue.)

Bounded: the pieces of all the reply's calls together may reach the kernel's
`MAX_REPLY_ARGS`; past that the fold raises `reply_too_long` at once, so a call streaming
arguments without end holds a few MB here, not all it sent (the kernel's own cap sees a
call only once it is whole, too late for memory).
"""

from __future__ import annotations

from collections.abc import Hashable

from codecoder.kernel.ports import ToolCallDone
from codecoder.kernel.reply import MAX_REPLY_ARGS, reply_too_long


class _Call:
    __slots__ = ("id", "index", "name", "pieces")

    def __init__(self, index: int, call_id: str, name: str) -> None:
        self.index = index
        self.id = call_id
        self.name = name
        self.pieces: list[str] = []


class ToolCallAccumulator:
    """Open calls in the order they started; `finish` closes them in that order."""

    __slots__ = ("_calls", "_count", "_size")

    def __init__(self) -> None:
        self._calls: dict[Hashable, _Call] = {}
        self._count = 0
        self._size = 0
        """Characters of argument text folded in this reply, every call's together."""

    @property
    def count(self) -> int:
        """How many calls were started in this reply (open or finished)."""
        return self._count

    def add(
        self, key: Hashable, *, call_id: str | None = None, name: str | None = None, args: str = ""
    ) -> None:
        """Fold one piece. A piece with a new id under a key already in use starts a new
        call (some OpenAI-compatible servers send every call with index 0)."""
        call = self._calls.get(key)
        if call is not None and call_id and call.id != call_id and (call.pieces or call.name):
            self._calls[(key, self._count)] = call  # keep it open, under a key of its own
            call = None
        if call is None:
            call = _Call(self._count, call_id or f"call_{self._count}", name or "")
            self._count += 1
            self._calls[key] = call
        elif name and not call.name:
            call.name = name
        if args:
            self._count_args(call, len(args))
            call.pieces.append(args)

    def set_args(self, key: Hashable, args: str) -> None:
        """Replace the argument text with the authoritative full text (a `done` item)."""
        call = self._calls.get(key)
        if call is not None:
            self._count_args(call, len(args) - sum(len(piece) for piece in call.pieces))
            call.pieces = [args]

    def _count_args(self, call: _Call, grown: int) -> None:
        self._size += grown
        if self._size > MAX_REPLY_ARGS:
            self._calls.clear()  # what was held goes at once, not when the parser does
            raise reply_too_long(f"tool-call arguments ({call.name})", MAX_REPLY_ARGS)

    def finish_one(self, key: Hashable) -> ToolCallDone | None:
        call = self._calls.pop(key, None)
        return None if call is None else _done(call)

    def finish(self) -> list[ToolCallDone]:
        """Close every open call, in the order they started."""
        calls = sorted(self._calls.values(), key=lambda call: call.index)
        self._calls.clear()
        return [_done(call) for call in calls]


def _done(call: _Call) -> ToolCallDone:
    # A call streamed with no argument text at all takes no arguments.
    return ToolCallDone(id=call.id, name=call.name, raw_args="".join(call.pieces) or "{}")
