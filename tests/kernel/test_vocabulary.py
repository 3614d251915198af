"""Every kernel value survives its JSON form unchanged (store, wire, headless, replay)."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from codecoder.kernel import codec
from codecoder.kernel.commands import AgentCommand, Cancel, Compact, ProcessMessage, Shutdown
from codecoder.kernel.events import (
    AgentEvent,
    AskUser,
    Compacted,
    ConfirmRequest,
    Done,
    Error,
    NewReasoning,
    NewToken,
    StatusUpdate,
    Subagent,
    TodoItem,
    TodoUpdated,
    ToolError,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    Usage,
)
from codecoder.kernel.messages import Message, Reasoning, Text, ToolCall, ToolResult
from codecoder.kernel.oneshot import Oneshot

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
args = st.dictionaries(st.text(), json_values, max_size=4)
texts = st.builds(Text, st.text())
reasonings = st.builds(Reasoning, st.text(), st.none() | st.text())
calls = st.builds(ToolCall, st.text(min_size=1), st.text(min_size=1), args, st.none() | st.text())
results = st.builds(
    ToolResult,
    st.text(min_size=1),
    st.lists(texts, max_size=3).map(tuple),
    st.sampled_from(["success", "error", "cancelled"]),
)
items = st.one_of(texts, reasonings, calls, results)
messages = st.builds(
    Message,
    st.integers(min_value=0),
    st.sampled_from(["system", "user", "assistant", "tool"]),
    st.lists(items, max_size=5).map(tuple),
    st.sampled_from(["complete", "interrupted"]),
)


@settings(max_examples=200)
@given(messages)
def test_messages_round_trip(message: Message) -> None:
    assert codec.decode(codec.encode(message), Message) == message


@settings(max_examples=100)
@given(messages)
def test_commands_round_trip(message: Message) -> None:
    for command in (ProcessMessage(message), Cancel(), Shutdown(), Compact()):
        assert codec.decode(codec.encode(command), AgentCommand) == command  # type: ignore[arg-type]


def _events(call: ToolCall, result: ToolResult) -> list[Any]:
    return [
        NewToken("tok"),
        NewReasoning("hmm"),
        ToolStarted(call.id, call.name, call.args),
        ToolOutput(call.id, "chunk\n"),
        ToolFinished(call.id, call.name, result=result),
        ToolFinished(call.id, call.name, error=ToolError("denied", "no")),
        StatusUpdate("thinking", "x"),
        Usage(1, 2, 3, 4, 0.5),
        Compacted(100, 10),
        Error("network", "cut"),
        Done(cancelled=True, reason="cancelled"),
        Subagent("sub-1", Subagent("sub-2", NewToken("deep"))),
        TodoUpdated((TodoItem("a"), TodoItem("b", "done"))),
    ]


@settings(max_examples=100)
@given(calls, results)
def test_events_round_trip(call: ToolCall, result: ToolResult) -> None:
    for event in _events(call, result):
        assert codec.decode(codec.encode(event), AgentEvent) == event  # type: ignore[arg-type]


def test_question_events_carry_the_oneshot_as_request_id() -> None:
    call = ToolCall("c1", "write_file", {"path": "a"})
    confirm = ConfirmRequest(tool_call=call, reason="writes a file", reply=Oneshot())
    data = codec.to_builtins(confirm)
    assert data["type"] == "confirm_request"
    assert data["request_id"] == confirm.reply.request_id
    decoded = codec.decode(codec.encode(confirm), AgentEvent)  # type: ignore[arg-type]
    assert isinstance(decoded, ConfirmRequest)
    assert decoded.reply.request_id == confirm.reply.request_id
    assert decoded.tool_call == call
    ask = AskUser("which?", ("a", "b"), Oneshot("req_9"))
    assert msgspec.json.decode(codec.encode(ask)) == {
        "type": "ask_user",
        "question": "which?",
        "options": ["a", "b"],
        "request_id": "req_9",
    }


def test_values_are_immutable() -> None:
    message = Message(1, "user", (Text("hi"),))
    try:
        message.id = 2  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("Message must be frozen")
    assert hash(Text("a")) == hash(Text("a"))
