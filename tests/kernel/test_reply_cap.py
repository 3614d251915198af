"""A reply is bounded as a whole (issue 32, adversarial review): whatever a provider
streams, the loop keeps at most MAX_REPLY_TEXT characters of text and reasoning and
MAX_REPLY_ARGS of arguments, ends the turn with `reply_too_long`, stops reading (the
provider's stream is closed at the cap) and keeps its invariants: the text up to the cap
is kept interrupted, every call of the reply is started and finished (cancelled)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent, Error, ToolFinished, ToolStarted
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import Reasoning, Text, ToolCall
from codecoder.kernel.ports import (
    ProviderRequest,
    ReasoningDelta,
    Stop,
    StreamEvent,
    TextDelta,
    ToolCallDone,
)
from codecoder.kernel.reply import MAX_REPLY_ARGS, MAX_REPLY_TEXT
from tests.invariants import check_history, check_turn
from tests.kernel.helpers import Echo

PIECE = 64 * 1024


class Runaway:
    """A provider whose reply runs on: a finished `echo` call, then `kind` deltas of
    64 KiB up to three times the cap (a bound, so that a loop without the cap ends too)."""

    def __init__(self, kind: type[TextDelta] | type[ReasoningDelta]) -> None:
        self.kind = kind
        self.sent = 0
        self.closed = False

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        try:
            yield ToolCallDone(id="call_1", name="echo", raw_args='{"text": "hi"}')
            for _ in range(3 * MAX_REPLY_TEXT // PIECE):
                self.sent += 1
                yield self.kind("x" * PIECE)
            yield Stop("end_turn")
        finally:
            self.closed = True


def run(loop: AgentLoop) -> list[AgentEvent]:
    handle = loop.start()
    try:
        handle.send("go")
        return handle.wait_done(30)
    finally:
        handle.shutdown()
        loop.join_readers()


def test_text_past_the_cap_is_kept_to_the_cap_and_the_turn_ends_with_a_clear_error(
    tmp_path: Path,
) -> None:
    provider = Runaway(TextDelta)
    loop = AgentLoop(provider, [Echo()], tmp_path)
    events = run(loop)
    assert check_turn(events).reason == "error"
    errors = [e for e in events if isinstance(e, Error)]
    assert errors == [
        Error(
            kind="reply_too_long",
            message=f"the model's reply passed {MAX_REPLY_TEXT:,} characters of text and was"
            " cut there",
        )
    ]
    # the call finished before the cap never ran, but was started and finished
    assert [type(e) for e in events if isinstance(e, ToolStarted | ToolFinished)] == [
        ToolStarted,
        ToolFinished,
    ]
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert finished.result is not None and finished.result.status == "cancelled"
    reply = loop.messages[1]
    assert reply.status == "interrupted"
    assert reply.items == (
        ToolCall(id="call_1", name="echo", args={"text": "hi"}),
        Text("x" * MAX_REPLY_TEXT),
    )
    check_history(loop.messages)
    # reading stopped at the cap: the stream was closed, not drained
    assert provider.closed
    assert provider.sent == MAX_REPLY_TEXT // PIECE + 1


def test_reasoning_counts_toward_the_cap(tmp_path: Path) -> None:
    provider = Runaway(ReasoningDelta)
    loop = AgentLoop(provider, [Echo()], tmp_path)
    events = run(loop)
    assert check_turn(events).reason == "error"
    assert [e.kind for e in events if isinstance(e, Error)] == ["reply_too_long"]
    reasoning = loop.messages[1].items[-1]
    assert isinstance(reasoning, Reasoning) and len(reasoning.text) == MAX_REPLY_TEXT
    assert provider.closed and provider.sent == MAX_REPLY_TEXT // PIECE + 1


class HugeCall:
    """A reply whose second call carries arguments past the cap, whole (as a provider that
    gathered it would hand it over)."""

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        yield TextDelta("reading")
        yield ToolCallDone(id="call_1", name="echo", raw_args='{"text": "hi"}')
        yield ToolCallDone(id="call_2", name="echo", raw_args='{"text": "' + "y" * MAX_REPLY_ARGS)
        yield Stop("tool_use")


def test_arguments_past_the_cap_end_the_turn_and_the_call_is_not_kept(tmp_path: Path) -> None:
    loop = AgentLoop(HugeCall(), [Echo()], tmp_path)
    events = run(loop)
    assert check_turn(events).reason == "error"
    assert [e for e in events if isinstance(e, Error)] == [
        Error(
            kind="reply_too_long",
            message=f"the model's reply passed {MAX_REPLY_ARGS:,} characters of tool-call"
            " arguments (echo) and was cut there",
        )
    ]
    assert [e.id for e in events if isinstance(e, ToolStarted)] == ["call_1"]
    reply = loop.messages[1]
    assert reply.status == "interrupted"
    assert reply.items == (Text("reading"), ToolCall(id="call_1", name="echo", args={"text": "hi"}))
    check_history(loop.messages)
