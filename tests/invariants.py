"""Checks of DESIGN.md §3 invariants, shared by the kernel, provider and CLI tests."""

from __future__ import annotations

from collections.abc import Sequence

from codecoder.kernel.events import AgentEvent, Done, Subagent, ToolFinished, ToolStarted
from codecoder.kernel.messages import Message


def check_turn(events: Sequence[AgentEvent]) -> Done:
    """Invariants 1 and 2 for the events of one turn: exactly one Done, last; every
    ToolStarted(id) followed by exactly one ToolFinished(id) before it."""
    dones = [i for i, e in enumerate(events) if isinstance(e, Done)]
    assert dones == [len(events) - 1], f"Done must come once, last: {dones} of {len(events)}"
    open_calls: dict[str, int] = {}
    finished: set[str] = set()
    for event in events:
        if isinstance(event, Subagent):
            continue
        if isinstance(event, ToolStarted):
            assert event.id not in open_calls and event.id not in finished, event.id
            open_calls[event.id] = 1
        elif isinstance(event, ToolFinished):
            assert event.id in open_calls, f"ToolFinished({event.id}) without ToolStarted"
            del open_calls[event.id]
            finished.add(event.id)
            assert (event.result is None) != (event.error is None)
    assert not open_calls, f"ToolStarted without ToolFinished: {sorted(open_calls)}"
    done = events[-1]
    assert isinstance(done, Done)
    return done


def check_history(messages: Sequence[Message]) -> None:
    """Invariant 3: every ToolCall has exactly one ToolResult after it, no result lacks
    its call, and message ids increase."""
    ids = [m.id for m in messages]
    assert ids == sorted(set(ids)), f"message ids not increasing: {ids}"
    calls: dict[str, int] = {}
    results: dict[str, int] = {}
    for position, message in enumerate(messages):
        for call in message.tool_calls:
            assert call.id not in calls, f"duplicate tool call id {call.id}"
            calls[call.id] = position
        for result in message.tool_results:
            assert result.tool_call_id in calls, f"result without call: {result.tool_call_id}"
            assert result.tool_call_id not in results, f"two results: {result.tool_call_id}"
            assert calls[result.tool_call_id] < position
            results[result.tool_call_id] = position
    missing = set(calls) - set(results)
    assert not missing, f"tool calls without a result: {sorted(missing)}"
