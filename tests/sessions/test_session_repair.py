"""repair() and problems(): the cases a crash leaves behind, then random histories."""

from __future__ import annotations

from typing import Literal, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codecoder.kernel.messages import (
    Message,
    MessageItem,
    MessageStatus,
    Reasoning,
    Role,
    Text,
    ToolCall,
    ToolResult,
    ToolResultStatus,
    tool_result,
    user_message,
)
from codecoder.sessions.repair import (
    CANCELLED_TEXT,
    InvalidHistory,
    check_valid,
    problems,
    repair,
)
from tests.sessions.session_samples import every_kind, exchange


def call(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="run_command", args={"cmd": call_id})


def assistant(id: int, *items: MessageItem, status: MessageStatus = "complete") -> Message:
    return Message(id=id, role="assistant", items=items, status=status)


def tool(id: int, *items: MessageItem) -> Message:
    return Message(id=id, role="tool", items=items)


def cancelled(call_id: str) -> ToolResult:
    return ToolResult(tool_call_id=call_id, content=(Text(CANCELLED_TEXT),), status="cancelled")


def test_valid_histories_pass_unchanged() -> None:
    for history in ([], exchange(1, 3), every_kind()):
        assert problems(history) == []
        assert repair(history) == history


def test_a_crash_mid_tool_gets_a_cancelled_result_after_the_call() -> None:
    history = [user_message("go", id=1), assistant(2, Text("Running."), call("a"), call("b"))]
    assert problems(history) == [
        "message 2: tool call 'a' has no result",
        "message 2: tool call 'b' has no result",
    ]
    fixed = repair(history)
    assert fixed == [*history, tool(3, cancelled("a"), cancelled("b"))]
    check_valid(fixed)


def test_missing_results_join_the_tool_message_that_has_the_others() -> None:
    history = [
        user_message("go", id=1),
        assistant(2, call("a"), call("b"), call("c")),
        tool(3, tool_result("a", "done a")),
        tool(4, tool_result("c", "done c", "error")),
        user_message("next", id=5),
    ]
    fixed = repair(history)
    assert fixed[:3] == history[:3]
    assert fixed[3] == tool(4, tool_result("c", "done c", "error"), cancelled("b"))
    assert fixed[4] == history[4]
    check_valid(fixed)


def test_an_interrupted_assistant_message_keeps_its_text_and_status() -> None:
    cut = assistant(2, Reasoning("hmm"), Text("The answer is 4"), status="interrupted")
    history = [user_message("2+2?", id=1), cut]
    assert repair(history) == history
    with_call = assistant(2, Text("Let me run"), call("x"), status="interrupted")
    fixed = repair([user_message("q", id=1), with_call])
    assert fixed[1] is with_call and fixed[1].status == "interrupted"
    assert fixed[2] == tool(3, cancelled("x"))


def test_orphan_and_duplicate_results_are_left_out() -> None:
    history = [
        user_message("go", id=1),
        tool(2, tool_result("ghost", "no call made me")),
        assistant(3, call("a")),
        tool(4, tool_result("a", "first"), tool_result("a", "second"), tool_result("zz", "?")),
        assistant(5, Text("ok")),
        tool(6, tool_result("a", "late")),
    ]
    found = problems(history)
    assert any("'ghost' has no call" in p for p in found)
    assert any("second result for 'a'" in p for p in found)
    assert any("'zz' has no call" in p for p in found)
    fixed = repair(history)
    assert fixed == [history[0], history[2], tool(4, tool_result("a", "first")), history[4]]
    check_valid(fixed)


def test_items_outside_their_role_and_empty_messages_are_left_out() -> None:
    history = [
        Message(id=1, role="user", items=(Text("hi"), call("u"), tool_result("u", "x"))),
        Message(id=2, role="user", items=()),
        assistant(3, Text("a"), tool_result("q", "misplaced")),
        tool(4, Text("stray text")),
        assistant(5),
    ]
    assert len(problems(history)) >= 5
    fixed = repair(history)
    assert fixed == [user_message("hi", id=1), assistant(3, Text("a"))]
    check_valid(fixed)


def test_a_dangling_call_in_the_middle_takes_a_free_id() -> None:
    gap = [user_message("a", id=1), assistant(2, call("x")), user_message("b", id=5)]
    assert [m.id for m in repair(gap)] == [1, 2, 3, 5]
    tight = [user_message("a", id=1), assistant(2, call("x")), user_message("b", id=3)]
    fixed = repair(tight)
    assert [m.id for m in fixed] == [1, 2, 3]  # no id free: the call becomes a note
    assert not fixed[1].tool_calls and "was cut off" in fixed[1].text
    check_valid(fixed)
    dropped = [assistant(2, call("x")), tool(3, tool_result("other", "?")), user_message("b", id=4)]
    assert [m.id for m in repair(dropped)] == [2, 3, 4]  # the left-out message's id


def test_repeated_call_ids_in_later_turns_pair_with_their_own_results() -> None:
    """Scripted replays restart call ids; pairing is by position, not by a global id."""
    history = [
        user_message("one", id=1),
        assistant(2, call("call_0_0")),
        tool(3, tool_result("call_0_0", "first run")),
        user_message("two", id=4),
        assistant(5, call("call_0_0")),
    ]
    fixed = repair(history)
    assert fixed[:5] == history
    assert fixed[5] == tool(6, cancelled("call_0_0"))
    check_valid(fixed)


def test_check_valid_names_the_problems() -> None:
    history = [assistant(1, *(call(f"c{n}") for n in range(7)))]
    with pytest.raises(InvalidHistory, match=r"'c0' has no result.*\(and 2 more\)"):
        check_valid(history)


# --- random histories ------------------------------------------------------------------

CALL_IDS = st.sampled_from(["a", "b", "c", "d"])
STATUSES = st.sampled_from(get_args(ToolResultStatus))
STATES = st.sampled_from(get_args(MessageStatus))
KINDS: list[Literal["user", "assistant", "tool", "empty"]] = [
    "user",
    "assistant",
    "tool",
    "tool",
    "empty",
]


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Random mixes of what a crash, a fork or an old bug could leave in a store."""
    out: list[Message] = []
    next_id = draw(st.integers(0, 3))
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(KINDS))
        items: tuple[MessageItem, ...]
        if kind == "user":
            items = (Text(draw(st.text(max_size=5))),)
        elif kind == "assistant":
            calls = tuple(call(c) for c in draw(st.lists(CALL_IDS, max_size=3, unique=True)))
            text = (Text("t"),) if draw(st.booleans()) else ()
            items = text + calls
        elif kind == "tool":
            results = draw(st.lists(st.tuples(CALL_IDS, STATUSES), min_size=0, max_size=3))
            items = tuple(tool_result(c, f"r{c}", s) for c, s in results)
        else:
            items = ()
        role: Role = "assistant" if kind == "empty" else kind
        status: MessageStatus = draw(STATES) if role == "assistant" else "complete"
        out.append(Message(id=next_id, role=role, items=items, status=status))
        next_id += draw(st.integers(1, 3))
    return out


@settings(max_examples=300, deadline=None)
@given(histories())
def test_repair_always_yields_a_valid_history(history: list[Message]) -> None:
    fixed = repair(history)
    assert problems(fixed) == []
    assert repair(fixed) == fixed
    if problems(history) == []:
        assert fixed == history


@settings(max_examples=300, deadline=None)
@given(histories())
def test_repair_keeps_every_conversation_message_and_only_adds_cancellations(
    history: list[Message],
) -> None:
    fixed = repair(history)
    spoken = [m for m in history if m.role != "tool" and m.items]
    said = [m for m in fixed if m.role != "tool"]
    assert [(m.id, m.role) for m in said] == [(m.id, m.role) for m in spoken]
    for before, after in zip(spoken, said, strict=True):
        # only a call no id was free to answer is replaced, by a note saying so
        notes = [i for i in after.items if isinstance(i, Text) and "was cut off" in i.text]
        assert [i for i in after.items if i not in notes] == [
            i for i in before.items if not (isinstance(i, ToolCall) and i not in after.items)
        ]
    kept = {(m.id, r) for m in history if m.role == "tool" for r in m.tool_results}
    for message in fixed:
        for result in message.tool_results:
            assert (message.id, result) in kept or result.text == CANCELLED_TEXT
    ids = [m.id for m in fixed]
    assert ids == sorted(set(ids))
