"""Steer (issue 18): a message joins the running turn at its next round boundary, or is
the next turn's message when the turn ends first; a stop gate can continue a turn."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent, StatusUpdate, Steered, ToolFinished
from codecoder.kernel.handle import AgentHandle
from codecoder.kernel.journal import Recorder, Replayer
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import Message
from tests.invariants import check_history, check_turn
from tests.kernel.helpers import make_loop

Start = Callable[[AgentLoop], AgentHandle]


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def until(handle: AgentHandle, predicate: Callable[[AgentEvent], bool]) -> list[AgentEvent]:
    seen: list[AgentEvent] = []
    while True:
        event = handle.next_event(5)
        assert event is not None
        seen.append(event)
        if predicate(event):
            return seen


def test_a_steer_joins_the_turn_between_rounds_once(tmp_path: Path, start_agent: Start) -> None:
    replies = [[call("wait", seconds=0.3)], [call("echo", text="b")], ["done"]]
    loop = make_loop(replies, tmp_path)
    handle = start_agent(loop)
    handle.send("go")
    events = until(handle, lambda e: isinstance(e, StatusUpdate) and e.status == "running_tool")
    handle.steer("also check the tests")
    events += handle.wait_done(5)
    check_turn(events)
    steered = [e for e in events if isinstance(e, Steered)]
    assert steered == [Steered("also check the tests")]
    position = events.index(steered[0])
    finished = next(i for i, e in enumerate(events) if isinstance(e, ToolFinished))
    thinking = [
        i for i, e in enumerate(events) if isinstance(e, StatusUpdate) and e.status == "thinking"
    ]
    assert finished < position < thinking[1]  # after the tool, before the next request
    roles = [(m.role, m.text) for m in loop.messages]
    assert roles.count(("user", "also check the tests")) == 1
    assert [r for r, _ in roles] == [
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    check_history(loop.messages)


def test_a_steer_the_turn_ends_before_taking_is_the_next_turn(
    tmp_path: Path, start_agent: Start
) -> None:
    replies = [["the answer", {"type": "sleep", "seconds": 0.3}], ["the second answer"]]
    loop = make_loop(replies, tmp_path)
    handle = start_agent(loop)
    handle.send("go")
    first = until(handle, lambda e: type(e).__name__ == "NewToken")
    handle.steer("and in French")
    first += handle.wait_done(5)
    assert first[-2] == Steered("and in French", next_turn=True)  # said before Done
    second = handle.wait_done(5)
    assert check_turn(second).reason == "completed"
    users = [m.text for m in loop.messages if m.role == "user"]
    assert users == ["go", "and in French"]
    assert loop.turn == 2


def test_a_steer_with_no_turn_running_is_a_message(tmp_path: Path, start_agent: Start) -> None:
    loop = make_loop([["hello"]], tmp_path)
    handle = start_agent(loop)
    handle.steer("hi")
    assert check_turn(handle.wait_done(5)).reason == "completed"
    assert [m.text for m in loop.messages] == ["hi", "hello"]


def test_cancel_drops_steers_not_yet_taken(tmp_path: Path, start_agent: Start) -> None:
    loop = make_loop([[call("wait", seconds=30)], ["never"]], tmp_path)
    handle = start_agent(loop)
    handle.send("go")
    events = until(handle, lambda e: isinstance(e, StatusUpdate) and e.status == "running_tool")
    handle.steer("then this")
    handle.cancel()
    events += handle.wait_done(5)
    assert check_turn(events).reason == "cancelled"
    assert not any(isinstance(e, Steered) for e in events)
    assert all(m.text != "then this" for m in loop.messages)
    loop.join_readers()


class Gate:
    """Like a `stop` hook that blocks once: the turn goes on with its reason."""

    def __init__(self) -> None:
        self.asked = 0

    def stop(self, view: Sequence[Message], cancel: CancelToken) -> str | None:
        self.asked += 1
        return "the tests still fail: fix them" if self.asked == 1 else None


def test_a_stop_gate_continues_the_turn_with_its_text(tmp_path: Path, start_agent: Start) -> None:
    loop = make_loop([["done"], ["really done"]], tmp_path, stop_gate=Gate())
    handle = start_agent(loop)
    handle.send("go")
    events = handle.wait_done(5)
    assert check_turn(events).reason == "completed"
    assert Steered("the tests still fail: fix them", by="hook") in events
    assert [m.text for m in loop.messages] == [
        "go", "done", "the tests still fail: fix them", "really done"
    ]  # fmt: skip


class Sink:
    def __init__(self) -> None:
        self.rows: list[bytes] = []
        self.messages: list[Message] = []

    def record(self, body: bytes, *, now: bool) -> None:
        self.rows.append(body)

    def append(self, message: Message) -> None:
        self.messages.append(message)


def test_steers_and_the_stop_gate_replay(tmp_path: Path, start_agent: Start) -> None:
    from codecoder.kernel.commands import ProcessMessage
    from codecoder.kernel.journal import Start as StartEntry
    from codecoder.kernel.journal import Turn, decode_entries

    replies = [[call("wait", seconds=0.3)], ["done"], ["after the hook"], ["next turn"]]
    sink = Sink()
    loop = make_loop(replies, tmp_path, stop_gate=Gate(), history=sink, journal=Recorder(sink))
    handle = start_agent(loop)
    handle.send("go")
    recorded = until(handle, lambda e: isinstance(e, StatusUpdate) and e.status == "running_tool")
    handle.steer("steered")
    recorded += handle.wait_done(5)
    handle.shutdown()
    entries = [e for row in sink.rows for e in decode_entries(row)]
    start = entries[0]
    assert isinstance(start, StartEntry) and start.stop_gate
    replayer = Replayer(entries[1:], {m.id: m for m in sink.messages})
    again = Sink()
    replay = make_loop([], tmp_path, stop_gate=Gate(), history=again, journal=replayer)
    handle = start_agent(replay)
    for turn in [e for e in entries if isinstance(e, Turn)]:
        handle.submit(ProcessMessage(next(m for m in sink.messages if m.id == turn.message)))
    replayed = handle.wait_done(5)
    assert [type(e) for e in replayed] == [type(e) for e in recorded]
    assert again.messages == sink.messages
    assert replayer.differences == [] and replayer.mismatch == ""
