"""The agent's state as StatusUpdate says it (issue 16, item 2): a closed set, in the
order the work happens, `running_tool` only once a call is allowed, and notices that
never change the state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import (
    AgentState,
    AskUser,
    ConfirmReply,
    ConfirmRequest,
    Done,
    StatusUpdate,
    ToolFinished,
)
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import ToolCall
from codecoder.kernel.ports import (
    Decision,
    ProviderRequest,
    Stop,
    StreamEvent,
    TextDelta,
    Tool,
)
from codecoder.tools.ask import AskUserTool
from tests.kernel.helpers import make_loop


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


class ByName:
    """Asks for `echo`, denies `crash`, allows the rest."""

    def decide(self, tool: Tool, call: ToolCall) -> Decision:
        if tool.name == "echo":
            return Decision("ask", "echo needs approval")
        if tool.name == "crash":
            return Decision("deny", "never")
        return Decision("allow")

    def remember(self, tool: Tool, call: ToolCall, scope: Any) -> None: ...

    def forbid(self, tool: Tool, call: ToolCall) -> None: ...


def drive(loop: Any, answers: dict[type, Any]) -> list[Any]:
    """One turn; questions answered from `answers` by their event's type."""
    handle = loop.start()
    events: list[Any] = []
    try:
        handle.send("go")
        while True:
            event = handle.next_event(5)
            assert event is not None
            events.append(event)
            if isinstance(event, ConfirmRequest | AskUser):
                assert event.reply.send(answers[type(event)]) is True
            if isinstance(event, Done):
                return events
    finally:
        handle.shutdown()


def shown(events: list[Any]) -> list[str]:
    """The statuses and the questions, in order."""
    out: list[str] = []
    for event in events:
        if isinstance(event, StatusUpdate) and event.notice is None:
            out.append(f"{event.status}:{event.detail}" if event.detail else event.status)
        elif isinstance(event, ConfirmRequest | AskUser | Done):
            out.append(type(event).__name__)
    return out


def test_states_follow_the_work_and_a_tool_runs_only_once_allowed(tmp_path: Path) -> None:
    replies = [[call("echo", text="hi")], [call("crash", text="x")], ["done"]]
    loop = make_loop(replies, tmp_path, policy=ByName())
    events = drive(loop, {ConfirmRequest: ConfirmReply("allow_once")})
    assert shown(events) == [
        "thinking",
        "streaming",
        "waiting_for_approval:echo",
        "ConfirmRequest",
        "running_tool:echo",  # after the answer, never before the question
        "thinking",
        "streaming",  # crash is denied by rule: no running_tool for it
        "thinking",
        "streaming",
        "idle",
        "Done",
    ]
    assert [e.status for e in events if isinstance(e, ToolFinished)] == ["success", "error"]


def test_a_denied_call_never_says_running_tool(tmp_path: Path) -> None:
    replies = [[call("echo", text="hi")], ["ok"]]
    loop = make_loop(replies, tmp_path, policy=ByName())
    events = drive(loop, {ConfirmRequest: ConfirmReply("deny")})
    states = shown(events)
    assert "waiting_for_approval:echo" in states
    assert not any(s.startswith("running_tool") for s in states)


def test_a_question_to_the_user_is_waited_for_then_the_tool_goes_on(tmp_path: Path) -> None:
    replies = [[call("ask_user", question="which?", options=["a", "b"])], ["ok"]]
    loop = make_loop(replies, tmp_path, tools=[AskUserTool()])
    events = drive(loop, {AskUser: "a"})
    states = shown(events)
    asked = states.index("AskUser")
    assert states[asked - 2 : asked + 2] == [
        "running_tool:ask_user",
        "waiting_for_user",
        "AskUser",
        "running_tool",
    ]


def test_every_status_is_one_of_the_closed_set(tmp_path: Path) -> None:
    replies = [[call("echo", text="hi"), call("crash", text="x")], ["done"]]
    loop = make_loop(replies, tmp_path, policy=ByName())
    events = drive(loop, {ConfirmRequest: ConfirmReply("allow_once")})
    statuses = [e for e in events if isinstance(e, StatusUpdate)]
    assert statuses and all(e.status in get_args(AgentState) for e in statuses)
    assert statuses[-1] == StatusUpdate("idle")  # the turn's last state, before Done


class CutShort:
    """A model whose reply hits its output token limit."""

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        yield TextDelta("cut")
        yield Stop("max_tokens")


def test_a_notice_is_said_in_the_state_the_agent_is_in(tmp_path: Path) -> None:
    loop = AgentLoop(CutShort(), [], tmp_path)
    events = drive(loop, {})
    notices = [e for e in events if isinstance(e, StatusUpdate) and e.notice is not None]
    assert notices == [
        StatusUpdate("streaming", "the reply hit the output token limit", "max_tokens")
    ]
    assert shown(events) == ["thinking", "streaming", "idle", "Done"]
