"""ask_user: the question goes out as AskUser with a oneshot; the answer is the result."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.kernel.events import AgentEvent, AskUser
from codecoder.kernel.ports import ToolContext, ToolFailure
from codecoder.tools.ask import AskUserTool


def context(tmp_path: Path, emit: list[AgentEvent], answer: str | None) -> ToolContext:
    def sink(event: AgentEvent) -> None:
        emit.append(event)
        if answer is not None and isinstance(event, AskUser):
            assert event.reply.send(answer)

    return ToolContext(call_id="call_1", cancel=CancelToken(), workspace=tmp_path, emit=sink)


def test_the_answer_becomes_the_result(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    result = AskUserTool().run(
        {"question": "Which colour?", "options": ["red", "blue"]},
        context(tmp_path, events, "blue"),
    )
    assert result.text == "blue"
    assert result.status == "success"
    (asked,) = [e for e in events if isinstance(e, AskUser)]
    assert isinstance(asked, AskUser)
    assert asked.question == "Which colour?"
    assert asked.options == ("red", "blue")
    states = [(type(e).__name__, getattr(e, "status", "")) for e in events]
    assert states == [
        ("StatusUpdate", "waiting_for_user"),
        ("AskUser", ""),
        ("StatusUpdate", "running_tool"),
    ]


def test_an_empty_answer_is_said_so(tmp_path: Path) -> None:
    result = AskUserTool().run({"question": "Anything?"}, context(tmp_path, [], "  "))
    assert result.text == "(the user gave no answer)"


@pytest.mark.parametrize("args", [{}, {"question": " "}, {"question": "q", "options": "a"}])
def test_bad_arguments_fail_before_asking(tmp_path: Path, args: dict[str, object]) -> None:
    events: list[AgentEvent] = []
    with pytest.raises(ToolFailure):
        AskUserTool().run(args, context(tmp_path, events, "x"))
    assert events == []


def test_cancel_while_waiting_ends_the_wait_and_a_late_answer_is_refused(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    ctx = context(tmp_path, events, None)
    canceller = threading.Timer(0.05, ctx.cancel.cancel)
    canceller.start()
    try:
        with pytest.raises(Cancelled):
            AskUserTool().run({"question": "Still there?"}, ctx)
    finally:
        canceller.join()
    (asked,) = [e for e in events if isinstance(e, AskUser)]
    assert isinstance(asked, AskUser)
    assert asked.reply.send("too late") is False


def test_the_schema_offers_options_as_optional(tmp_path: Path) -> None:
    schema = AskUserTool().parameters
    assert schema["required"] == ["question"]
    assert schema["properties"]["options"]["type"] == "array"
    assert AskUserTool().risk == "read"
