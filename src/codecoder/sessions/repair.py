"""Making a stored history valid for a provider again (invariant 3).

A session killed mid-tool leaves an assistant message whose calls have no results; a
provider rejects such a history outright. `repair` is the one place that fixes it, as a
pure function over the loaded messages, so resume, fork and the crash trials share it and
the store itself never rewrites what it recorded.

The shape a provider accepts, and `problems` checks: ToolCalls appear only in assistant
messages, ToolResults only in tool messages; every call is answered exactly once in the
run of tool messages that directly follows its assistant message; no result lacks its
call; no message is empty.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from codecoder.kernel.messages import Message, MessageItem, Text, ToolCall, ToolResult

CANCELLED_TEXT = "[cancelled: the session stopped before this tool call finished]"


class InvalidHistory(ValueError):
    """A history a provider would reject; the message lists what is wrong."""


def repair(messages: Sequence[Message]) -> list[Message]:
    """A valid history with every recorded message's content kept.

    - every unanswered call gets a `cancelled` ToolResult in a new tool message after the
      run of results that follows its assistant message (merged into that run only when
      no id is free there);
    - results without their call, second results for one call, calls outside assistant
      messages and anything but results in tool messages are left out, and so are
      messages left empty;
    - an interrupted assistant message keeps its text and its status.

    A new tool message takes the id after the run. When no id is free there (a dangling
    call followed by more messages, which no resume of ours writes), the unanswered calls
    are replaced by a note in their assistant message, so ids stay unique and increasing.
    Idempotent: repair(repair(h)) == repair(h).
    One pass, and the messages that need no change are passed on as they are: resume runs
    this over the whole history. Items are tested with `type(x) is T`, not isinstance: the
    kernel's item types are final, and msgspec's metaclass makes isinstance three times
    slower, which shows on 10,000 messages.
    """
    fix = _Repair()
    for message in messages:
        fix.add(message)
    fix.close(None)
    return fix.out


class _Repair:
    """The pass's state: the output so far and the calls of the last assistant message."""

    def __init__(self) -> None:
        self.out: list[Message] = []
        self.calls: dict[str, bool] = {}  # the open assistant message's calls → answered
        self.dropped_run_id: int | None = None  # a free id: a tool message left out

    def add(self, message: Message) -> None:
        if message.role == "tool":
            self._add_results(message)
            return
        self.close(message.id)
        kept = _normalised(message)
        if kept is None:
            return
        self.out.append(kept)
        if kept.role == "assistant":
            self.calls = {item.id: False for item in kept.items if type(item) is ToolCall}

    def close(self, next_id: int | None) -> None:
        """End the open assistant message's run, answering the calls still unanswered."""
        missing = tuple(cancelled_result(call) for call, done in self.calls.items() if not done)
        if not missing:
            pass
        elif next_id is None or self.out[-1].id + 1 < next_id:
            # A new message after the run, so a resume can append it to the store as is.
            self.out.append(Message(id=self.out[-1].id + 1, role="tool", items=missing))
        elif self.out[-1].role == "tool":
            self.out[-1] = _with_items(self.out[-1], self.out[-1].items + missing)
        elif self.dropped_run_id is not None:
            self.out.append(Message(id=self.dropped_run_id, role="tool", items=missing))
        else:  # no id is free before the next message: the unanswered calls are dropped
            self.out[-1] = _without_calls(self.out[-1], set(self.calls) - self._answered())
        self.calls = {}
        self.dropped_run_id = None

    def _add_results(self, message: Message) -> None:
        kept: list[MessageItem] = []
        for item in message.items:
            if type(item) is ToolResult and self.calls.get(item.tool_call_id) is False:
                self.calls[item.tool_call_id] = True
                kept.append(item)
        if not kept:
            if self.dropped_run_id is None:
                self.dropped_run_id = message.id
            return
        same = len(kept) == len(message.items)
        self.out.append(message if same else _with_items(message, tuple(kept)))

    def _answered(self) -> set[str]:
        return {call for call, done in self.calls.items() if done}


def problems(messages: Sequence[Message]) -> list[str]:
    """Everything in `messages` a provider would reject (empty when the history is valid)."""
    found: list[str] = []
    owner: Message | None = None
    answered: dict[str, bool] = {}
    last_id: int | None = None
    for message in messages:
        if last_id is not None and message.id <= last_id:
            found.append(f"message {message.id} does not come after message {last_id}")
        last_id = message.id
        if not message.items:
            found.append(f"message {message.id} ({message.role}) is empty")
        if message.role == "tool":
            found.extend(_check_results(message, answered))
            continue
        found.extend(_unanswered(owner, answered))
        found.extend(_misplaced(message))
        owner = message if message.role == "assistant" else None
        answered = {call.id: False for call in message.tool_calls} if owner else {}
    found.extend(_unanswered(owner, answered))
    return found


def check_valid(messages: Sequence[Message]) -> None:
    """Raise InvalidHistory naming the first problems when a provider would reject it."""
    found = problems(messages)
    if found:
        more = f" (and {len(found) - 5} more)" if len(found) > 5 else ""
        raise InvalidHistory("; ".join(found[:5]) + more)


def cancelled_result(call_id: str) -> ToolResult:
    return ToolResult(tool_call_id=call_id, content=(Text(CANCELLED_TEXT),), status="cancelled")


_ONLY_CALLS = frozenset({ToolResult})
_NEITHER = frozenset({ToolCall, ToolResult})


def _normalised(message: Message) -> Message | None:
    """The message without items its role cannot carry; None when nothing is left."""
    banned = _ONLY_CALLS if message.role == "assistant" else _NEITHER
    for item in message.items:
        if type(item) in banned:
            break
    else:
        return message if message.items else None
    items = tuple(item for item in message.items if type(item) not in banned)
    return _with_items(message, items) if items else None


def _without_calls(message: Message, call_ids: set[str]) -> Message:
    """The assistant message with those calls replaced by a note of what was cut off."""
    items: list[MessageItem] = []
    for item in message.items:
        if type(item) is ToolCall and item.id in call_ids:
            items.append(Text(f"[tool call {item.name} ({item.id}) was cut off before it ran]"))
        else:
            items.append(item)
    return _with_items(message, tuple(items))


def _with_items(message: Message, items: tuple[MessageItem, ...]) -> Message:
    return msgspec.structs.replace(message, items=items)


def _check_results(message: Message, answered: dict[str, bool]) -> list[str]:
    found: list[str] = []
    for item in message.items:
        if not isinstance(item, ToolResult):
            found.append(f"message {message.id}: a tool message carrying {type(item).__name__}")
            continue
        call_id = item.tool_call_id
        if call_id not in answered:
            found.append(f"message {message.id}: result for {call_id!r} has no call before it")
        elif answered[call_id]:
            found.append(f"message {message.id}: second result for {call_id!r}")
        else:
            answered[call_id] = True
    return found


def _unanswered(owner: Message | None, answered: dict[str, bool]) -> list[str]:
    if owner is None:
        return []
    return [
        f"message {owner.id}: tool call {call_id!r} has no result"
        for call_id, done in answered.items()
        if not done
    ]


def _misplaced(message: Message) -> list[str]:
    found: list[str] = []
    for item in message.items:
        if isinstance(item, ToolResult):
            call_id = item.tool_call_id
            found.append(f"message {message.id}: result for {call_id!r} outside a tool message")
        elif isinstance(item, ToolCall) and message.role != "assistant":
            found.append(f"message {message.id}: tool call {item.id!r} in a {message.role} message")
    return found
