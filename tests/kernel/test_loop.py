"""The turn loop through its public handle, with the scripted provider and real tools."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import (
    Compacted,
    ConfirmReply,
    ConfirmRequest,
    Done,
    Error,
    NewReasoning,
    NewToken,
    StatusUpdate,
    ToolFinished,
    ToolStarted,
    Usage,
)
from codecoder.kernel.handle import AgentClosed, AgentHandle
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import Message, Reasoning, Text, ToolCall
from codecoder.kernel.ports import (
    CompactedView,
    Decision,
    ProviderRequest,
    StreamEvent,
    TextDelta,
    Tool,
    Verdict,
)
from codecoder.providers.scripted import ScriptedProvider
from tests.invariants import check_history, check_turn
from tests.kernel.helpers import Echo, make_loop

CANCEL_BOUND = 0.2  # 10x the 20 ms target

Start = Callable[[AgentLoop], AgentHandle]
"""The `start_agent` fixture (tests/conftest.py): the handle is shut down at teardown."""


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def run(loop: AgentLoop, text: str = "go", timeout: float = 10) -> list[Any]:
    handle = loop.start()
    try:
        handle.send(text)
        return handle.wait_done(timeout)
    finally:
        handle.shutdown()


def test_reply_streams_tokens_then_done(tmp_path: Path) -> None:
    loop = make_loop([["Hello world, this is it."]], tmp_path)
    events = run(loop)
    done = check_turn(events)
    assert done == Done(cancelled=False, reason="completed")
    tokens = [e.text for e in events if isinstance(e, NewToken)]
    assert "".join(tokens) == "Hello world, this is it."
    assert [m.role for m in loop.messages] == ["user", "assistant"]
    assert loop.messages[1].text == "Hello world, this is it."


def test_tool_rounds_feed_results_back_until_the_model_stops(tmp_path: Path) -> None:
    replies = [
        ["Let me echo.", call("echo", text="ab", times=2), call("echo", text="c")],
        [call("echo", text="d")],
        ["All done."],
    ]
    loop = make_loop(replies, tmp_path)
    events = run(loop)
    check_turn(events)
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [f.result.text for f in finished if f.result] == ["abab", "c", "d"]
    started = [e.id for e in events if isinstance(e, ToolStarted)]
    assert started == ["call_0_1", "call_0_2", "call_1_0"]
    check_history(loop.messages)
    roles = [m.role for m in loop.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "tool", "assistant"]


@pytest.mark.parametrize(
    ("part", "kind"),
    [
        (call("nope", x=1), "unknown_tool"),
        (call("echo", text=5), "invalid_args"),
        (call("echo", wrong="x"), "invalid_args"),
        (
            {"type": "tool_call", "name": "echo", "raw_args": '{"text": "unterminated'},
            "invalid_args",
        ),
        ({"type": "tool_call", "name": "echo", "raw_args": "[1, 2]"}, "invalid_args"),
        (call("crash", text="boom"), "crashed"),
    ],
)
def test_bad_tool_calls_become_tool_errors_the_model_sees(
    tmp_path: Path, part: dict[str, Any], kind: str
) -> None:
    loop = make_loop([[part], ["recovered"]], tmp_path)
    events = run(loop)
    assert check_turn(events).reason == "completed"
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert finished.error is not None and finished.error.kind == kind
    tool_message = loop.messages[2]
    assert tool_message.role == "tool"
    assert tool_message.tool_results[0].status == "error"
    assert kind in tool_message.tool_results[0].text
    assert loop.messages[-1].text == "recovered"


def test_round_limit_ends_the_turn(tmp_path: Path) -> None:
    loop = make_loop([[call("echo", text="x")]] * 5, tmp_path, max_rounds=3)
    events = run(loop)
    done = check_turn(events)
    assert done.reason == "max_rounds"
    assert any(isinstance(e, Error) and e.kind == "max_rounds" for e in events)
    assert sum(isinstance(e, ToolFinished) for e in events) == 3
    check_history(loop.messages)


def test_provider_error_keeps_partial_text_interrupted(tmp_path: Path) -> None:
    loop = make_loop([["partial answer", {"type": "error", "kind": "network"}]], tmp_path)
    events = run(loop)
    assert check_turn(events).reason == "error"
    error = next(e for e in events if isinstance(e, Error))
    assert error.kind == "network"
    assert loop.messages[-1].status == "interrupted"
    assert loop.messages[-1].text == "partial answer"


def test_exhausted_script_is_an_error(tmp_path: Path) -> None:
    loop = make_loop([], tmp_path)
    events = run(loop)
    assert check_turn(events).reason == "error"
    assert any(isinstance(e, Error) and e.kind == "script_exhausted" for e in events)


def test_reasoning_and_its_opaque_token_are_kept(tmp_path: Path) -> None:
    reply = [
        {"type": "reasoning", "text": "think hard", "token": "sig=="},
        "answer",
        {"type": "usage", "input_tokens": 3},
    ]
    loop = make_loop([reply], tmp_path)
    events = run(loop)
    assert "".join(e.text for e in events if isinstance(e, NewReasoning)) == "think hard"
    assert Usage(input_tokens=3) in events
    assert loop.messages[1].items[0] == Reasoning("think hard", "sig==")


class RecordingSink:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.times: list[float] = []

    def append(self, message: Message) -> None:
        self.messages.append(message)
        self.times.append(time.monotonic())


class CountingProvider:
    """Records how many messages were durable at each request (invariant 6)."""

    def __init__(self, inner: ScriptedProvider, sink: RecordingSink) -> None:
        self.inner = inner
        self.sink = sink
        self.seen: list[tuple[int, int]] = []

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        self.seen.append((len(request.messages), len(self.sink.messages)))
        return self.inner.stream(request, cancel)


def test_every_message_is_durable_before_the_next_request(tmp_path: Path) -> None:
    sink = RecordingSink()
    provider = CountingProvider(
        ScriptedProvider.from_replies([[call("echo", text="a"), call("echo", text="b")], ["ok"]]),
        sink,
    )
    loop = AgentLoop(provider, [Echo()], tmp_path, history=sink)
    run(loop)
    assert provider.seen == [(1, 1), (4, 4)]
    assert sink.messages == list(loop.messages)
    assert [m.id for m in sink.messages] == [1, 2, 3, 4, 5]


# --- cancellation ---------------------------------------------------------------------


def _cancel_and_measure(
    loop: AgentLoop, *, until: type | None = None, settle: float = 0.05
) -> tuple[list[Any], float]:
    """Cancel once the turn is under way (after an event of type `until`, or a pause)."""
    handle = loop.start()
    try:
        handle.send("go")
        seen: list[Any] = []
        if until is not None:
            while not isinstance(event := handle.next_event(5), until):
                seen.append(event)
            seen.append(event)
        else:
            time.sleep(settle)
        started = time.monotonic()
        handle.cancel()
        events = seen + handle.wait_done(10)
        return events, time.monotonic() - started
    finally:
        handle.shutdown()


def test_cancel_during_token_flood(tmp_path: Path) -> None:
    flood = "tok " * 300_000
    loop = make_loop([[flood]], tmp_path)
    events, elapsed = _cancel_and_measure(loop, until=NewToken)
    assert check_turn(events) == Done(cancelled=True, reason="cancelled")
    assert elapsed < CANCEL_BOUND
    last = loop.messages[-1]
    assert last.role == "assistant" and last.status == "interrupted"
    assert 0 < len(last.text) < len(flood)
    loop.join_readers()


def test_cancel_during_silent_stream(tmp_path: Path) -> None:
    loop = make_loop([["before silence ", {"type": "sleep", "seconds": 60}, "never"]], tmp_path)
    events, elapsed = _cancel_and_measure(loop, until=NewToken)
    assert check_turn(events).reason == "cancelled"
    assert elapsed < CANCEL_BOUND
    assert loop.messages[-1].text == "before silence "
    assert loop.messages[-1].status == "interrupted"


class DeafProvider:
    """A stream that has gone silent and ignores cancellation (a hung socket)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        self.release.wait(30)
        return iter(())


def test_cancel_does_not_wait_for_a_provider_that_ignores_it(tmp_path: Path) -> None:
    provider = DeafProvider()
    loop = AgentLoop(provider, [], tmp_path)
    try:
        events, elapsed = _cancel_and_measure(loop)
    finally:
        provider.release.set()
        loop.join_readers()
    assert check_turn(events).reason == "cancelled"
    assert elapsed < CANCEL_BOUND


class EndlessFlood:
    """Streams tokens as fast as it can until the turn is cancelled, so the reply can never
    end before the cancel does (a scripted flood of any length can, on a busy machine).
    `flooding` is set once `backlog()` reaches `backlog_at`."""

    def __init__(self, backlog_at: int = 200) -> None:
        self.backlog: Callable[[], int] = lambda: 0
        self.backlog_at = backlog_at
        self.flooding = threading.Event()

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        while not cancel.is_cancelled():
            yield TextDelta("tok ")
            if not self.flooding.is_set() and self.backlog() >= self.backlog_at:
                self.flooding.set()


def test_cancel_while_the_client_reads_no_events(tmp_path: Path, start_agent: Start) -> None:
    sink = RecordingSink()
    provider = EndlessFlood()
    loop = AgentLoop(provider, [], tmp_path, history=sink)
    handle = start_agent(loop)
    provider.backlog = lambda: handle.statistics()["queued_events"]
    handle.send("go")
    assert provider.flooding.wait(10)  # the loop has been filling a queue nobody drains
    started = time.monotonic()
    handle.cancel()
    events = handle.wait_done(10)  # read only afterwards
    assert check_turn(events).reason == "cancelled"
    assert sum(isinstance(e, NewToken) for e in events) >= provider.backlog_at - 2
    assert sink.messages[-1].status == "interrupted"
    assert sink.messages[-1].text.startswith("tok tok ")
    assert sink.times[-1] - started < CANCEL_BOUND  # the interrupted message is the last act


def test_cancel_during_a_running_tool(tmp_path: Path) -> None:
    replies = [[call("wait", seconds=60), call("echo", text="never")], ["unused"]]
    loop = make_loop(replies, tmp_path)
    events, elapsed = _cancel_and_measure(loop, until=ToolStarted)
    assert check_turn(events).reason == "cancelled"
    assert elapsed < CANCEL_BOUND
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [f.status for f in finished] == ["cancelled", "cancelled"]
    check_history(loop.messages)


def test_cancel_that_races_the_submit_is_not_lost(tmp_path: Path, start_agent: Start) -> None:
    loop = make_loop([["should not be asked"]], tmp_path)
    handle = start_agent(loop)
    handle.send("go")
    handle.cancel()
    events = handle.wait_done(5)
    handle.shutdown()
    assert check_turn(events).reason == "cancelled"
    assert not any(isinstance(e, NewToken) for e in events)


def test_next_turn_runs_normally_after_a_cancel(tmp_path: Path, start_agent: Start) -> None:
    loop = make_loop([[{"type": "sleep", "seconds": 60}], ["second answer"]], tmp_path)
    handle = start_agent(loop)
    handle.send("first")
    time.sleep(0.05)
    handle.cancel()
    assert check_turn(handle.wait_done(5)).reason == "cancelled"
    handle.send("second")
    events = handle.wait_done(5)
    assert check_turn(events).reason == "completed"
    assert loop.messages[-1].text == "second answer"
    handle.shutdown()


def test_shutdown_ends_the_turn_and_the_thread(tmp_path: Path, start_agent: Start) -> None:
    loop = make_loop([[{"type": "sleep", "seconds": 60}]], tmp_path)
    handle = start_agent(loop)
    handle.send("go")
    time.sleep(0.05)
    handle.shutdown(timeout=5)
    events = list(handle.events())
    assert check_turn(events) == Done(cancelled=True, reason="shutdown")
    assert not handle.alive
    with pytest.raises(AgentClosed):
        handle.send("more")


def test_shutdown_skips_queued_messages(tmp_path: Path, start_agent: Start) -> None:
    loop = make_loop([[{"type": "sleep", "seconds": 60}], ["never"]], tmp_path)
    handle = start_agent(loop)
    handle.send("one")
    handle.send("two")
    time.sleep(0.05)
    handle.shutdown(timeout=5)
    dones = [e for e in handle.events() if isinstance(e, Done)]
    assert dones[0].reason == "shutdown"
    assert all(d.reason == "shutdown" for d in dones)


# --- confirmation through the reply oneshot -----------------------------------------


class AskPolicy:
    def __init__(self, verdict: Verdict = "ask") -> None:
        self.verdict: Verdict = verdict
        self.remembered: list[tuple[str, str]] = []

    def decide(self, tool: Tool, call: ToolCall) -> Decision:
        if (tool.name, "forbidden") in self.remembered:
            return Decision("deny", f"{tool.name} was denied for this session")
        if (tool.name, "session") in self.remembered:
            return Decision("allow")
        return Decision(self.verdict, f"{tool.name} needs approval")

    def remember(self, tool: Tool, call: ToolCall, scope: Literal["session", "project"]) -> None:
        self.remembered.append((tool.name, scope))

    def forbid(self, tool: Tool, call: ToolCall) -> None:
        self.remembered.append((tool.name, "forbidden"))


def _confirm_run(
    tmp_path: Path, answer: ConfirmReply, policy: AskPolicy | None = None
) -> tuple[list[Any], AskPolicy, AgentLoop]:
    policy = policy or AskPolicy()
    replies = [[call("echo", text="hi")], [call("echo", text="again")], ["end"]]
    loop = make_loop(replies, tmp_path, policy=policy)
    handle = loop.start()
    handle.send("go")
    events: list[Any] = []
    try:
        while True:
            event = handle.next_event(5)
            assert event is not None
            events.append(event)
            if isinstance(event, ConfirmRequest):
                assert event.reply.send(answer) is True
            if isinstance(event, Done):
                break
    finally:
        handle.shutdown()
    return events, policy, loop


def test_allow_once_asks_every_time(tmp_path: Path) -> None:
    events, policy, _ = _confirm_run(tmp_path, ConfirmReply("allow_once"))
    assert sum(isinstance(e, ConfirmRequest) for e in events) == 2
    assert [e.status for e in events if isinstance(e, ToolFinished)] == ["success", "success"]
    assert policy.remembered == []


def test_allow_session_is_remembered(tmp_path: Path) -> None:
    events, policy, _ = _confirm_run(tmp_path, ConfirmReply("allow_session"))
    assert sum(isinstance(e, ConfirmRequest) for e in events) == 1
    assert policy.remembered == [("echo", "session")]


def test_deny_with_a_message_reaches_the_model(tmp_path: Path) -> None:
    events, _, loop = _confirm_run(tmp_path, ConfirmReply("deny", "use the other file"))
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert all(f.error is not None and f.error.kind == "denied" for f in finished)
    assert "use the other file" in loop.messages[2].tool_results[0].text
    check_history(loop.messages)


def test_deny_verdict_never_asks(tmp_path: Path) -> None:
    replies = [[call("echo", text="x")], ["ok"]]
    loop = make_loop(replies, tmp_path, policy=AskPolicy("deny"))
    events = run(loop)
    assert not any(isinstance(e, ConfirmRequest) for e in events)
    assert next(e for e in events if isinstance(e, ToolFinished)).error.kind == "denied"  # type: ignore[union-attr]


def test_cancel_while_waiting_for_a_reply_ends_the_turn_and_ignores_the_late_reply(
    tmp_path: Path, start_agent: Start
) -> None:
    loop = make_loop([[call("echo", text="x")], ["unused"]], tmp_path, policy=AskPolicy())
    handle = start_agent(loop)
    handle.send("go")
    events: list[Any] = []
    while not isinstance(event := handle.next_event(5), ConfirmRequest):
        events.append(event)
    started = time.monotonic()
    handle.cancel()
    rest = handle.wait_done(5)
    assert time.monotonic() - started < CANCEL_BOUND
    assert event.reply.send(ConfirmReply("allow_once")) is False
    events += [event, *rest]
    assert check_turn(events).reason == "cancelled"
    assert next(e for e in events if isinstance(e, ToolFinished)).status == "cancelled"
    handle.shutdown()
    check_history(loop.messages)


def test_deny_for_the_session_denies_the_next_call_without_asking(tmp_path: Path) -> None:
    events, policy, _ = _confirm_run(tmp_path, ConfirmReply("deny_session"))
    assert sum(isinstance(e, ConfirmRequest) for e in events) == 1
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [f.error.kind if f.error else None for f in finished] == ["denied", "denied"]
    assert policy.remembered == [("echo", "forbidden")]


class BrokenMemory(AskPolicy):
    def remember(self, tool: Tool, call: ToolCall, scope: Literal["session", "project"]) -> None:
        raise OSError("read-only file system")


def test_a_rule_that_cannot_be_saved_still_runs_the_allowed_call(tmp_path: Path) -> None:
    events, _, _ = _confirm_run(tmp_path, ConfirmReply("allow_project"), BrokenMemory())
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [f.status for f in finished] == ["success", "success"]
    assert any(isinstance(e, StatusUpdate) and "read-only file system" in e.detail for e in events)


def test_cancel_after_a_streamed_tool_call_still_answers_it(
    tmp_path: Path, start_agent: Start
) -> None:
    loop = make_loop([[call("echo", text="a"), {"type": "sleep", "seconds": 60}]], tmp_path)
    handle = start_agent(loop)
    handle.send("go")
    time.sleep(0.1)  # the call has streamed; the reply has gone silent
    handle.cancel()
    events = handle.wait_done(5)
    handle.shutdown()
    assert check_turn(events).reason == "cancelled"
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [(f.id, f.status) for f in finished] == [("call_0_0", "cancelled")]
    check_history(loop.messages)
    assert loop.messages[1].status == "interrupted" and loop.messages[1].tool_calls


def test_a_broken_stream_after_a_tool_call_still_answers_it(
    tmp_path: Path, start_agent: Start
) -> None:
    replies = [[call("echo", text="a"), {"type": "error", "kind": "network"}], ["next"]]
    loop = make_loop(replies, tmp_path)
    handle = start_agent(loop)
    handle.send("go")
    events = handle.wait_done(5)
    assert check_turn(events).reason == "error"
    handle.send("again")
    assert check_turn(handle.wait_done(5)).reason == "completed"
    handle.shutdown()
    check_history(loop.messages)


class StaleCompactor:
    """Offers a compaction prepared for a view that no longer exists."""

    def observe(self, view: Any, usage: Any) -> None:
        return None

    def ready(self) -> CompactedView | None:
        summary = Message(id=0, role="user", items=(Text("old summary"),))
        return CompactedView(summary, first_kept_id=999, before_tokens=10, after_tokens=1)

    def compact_now(self, view: Any, cancel: CancelToken) -> CompactedView | None:
        return None


def test_a_stale_compaction_is_never_applied(tmp_path: Path) -> None:
    loop = make_loop([["one"]], tmp_path, compactor=StaleCompactor())
    events = run(loop)
    assert not any(isinstance(e, Compacted) for e in events)
    assert [m.text for m in loop.messages] == ["go", "one"]


def test_finished_turn_tokens_leave_the_parent_token() -> None:
    parent = CancelToken()
    loop_tokens = []
    for _ in range(50):
        child = parent.child()
        loop_tokens.append(child)
        child.detach()
    assert parent.statistics()["callbacks"] == 0
    parent.cancel()
    assert not any(t.is_cancelled() for t in loop_tokens)


def test_turn_gives_events_as_they_come_and_stops_at_done(tmp_path: Path) -> None:
    loop = make_loop([["first ", {"type": "sleep", "seconds": 60}], ["second"]], tmp_path)
    handle = loop.start()
    try:
        handle.send("go")
        events = handle.turn(timeout=5)
        first = next(e for e in events if isinstance(e, NewToken))
        assert first.text == "first "  # live: the turn has not ended yet
        handle.cancel()
        assert list(events)[-1] == Done(cancelled=True, reason="cancelled")
        handle.send("again")
        assert [e for e in handle.turn(timeout=5) if isinstance(e, Done)] == [
            Done(cancelled=False, reason="completed")
        ]
    finally:
        handle.shutdown(timeout=5)
    with pytest.raises(AgentClosed):
        list(handle.turn(timeout=5))  # the stream has ended: no Done will come
