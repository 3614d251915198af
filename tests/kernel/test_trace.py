"""The trace (`--trace`): complete, numbered in channel order, and cheap to leave on."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec
import pytest

from codecoder.kernel import codec
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import AgentEvent, ConfirmReply, ConfirmRequest, Done, NewToken
from codecoder.kernel.handle import AgentHandle
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import ToolCall
from codecoder.kernel.ports import Decision, ProviderRequest, StreamEvent, TextDelta, Tool
from codecoder.kernel.trace import RequestDigest, Tracer
from tests.invariants import check_turn
from tests.kernel.helpers import Echo, make_loop

Start = Callable[[AgentLoop], AgentHandle]


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


class RulePolicy:
    """Asks for echo with the decision fields a real chain fills in."""

    def decide(self, tool: Tool, call: ToolCall) -> Decision:
        return Decision(
            "ask", "echo needs approval", rule="echo", level="user", parts=(f"echo {call.id}",)
        )

    def remember(self, tool: Tool, call: ToolCall, scope: Literal["session", "project"]) -> None:
        return None

    def forbid(self, tool: Tool, call: ToolCall) -> None:
        return None


def answered_turn(handle: AgentHandle, reply: ConfirmReply) -> list[AgentEvent]:
    handle.send("go")
    events: list[AgentEvent] = []
    while not isinstance(event := handle.next_event(5), Done):
        assert event is not None
        events.append(event)
        if isinstance(event, ConfirmRequest):
            event.reply.send(reply, by="terminal")
    return [*events, event]


def test_every_line_is_numbered_in_file_order_and_names_its_agent_thread_and_turn(
    tmp_path: Path, start_agent: Start
) -> None:
    tracer = Tracer(tmp_path / "trace.jsonl")
    loop = make_loop([[call("echo", text="a")], ["fine"]], tmp_path, tracer=tracer)
    handle = start_agent(loop)
    handle.send("go")
    check_turn(handle.wait_done(5))
    handle.shutdown()
    tracer.close()
    records = Tracer.read(tmp_path / "trace.jsonl")
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert [r["t"] for r in records] == sorted(r["t"] for r in records)
    assert {r["agent"] for r in records} == {"agent"}
    assert records[0]["dir"] == "command" and records[0]["turn"] == 1
    assert records[-1]["data"]["type"] == "shutdown"
    events = [r for r in records if r["dir"] == "event"]
    assert {r["thread"] for r in events} == {"agent-loop"} and events[-1]["data"]["type"] == "done"
    streams = [r["data"] for r in records if r["dir"] == "stream"]
    assert {s["type"] for s in streams} >= {"tool_call_done", "text_delta", "stop"}
    texts = [s for s in streams if s["type"] == "text_delta"]
    assert "".join(c for s in texts for c in s["chunks"]) == "fine"


def test_decisions_and_replies_say_why_and_who(tmp_path: Path, start_agent: Start) -> None:
    tracer = Tracer(tmp_path / "trace.jsonl")
    loop = make_loop(
        [[call("echo", text="a")], ["fine"]], tmp_path, tracer=tracer, policy=RulePolicy()
    )
    check_turn(answered_turn(start_agent(loop), ConfirmReply("deny", "not now")))
    tracer.close()
    records = Tracer.read(tmp_path / "trace.jsonl")
    (decision,) = [r["data"] for r in records if r["dir"] == "decision"]
    assert decision == {
        "tool_call_id": "call_0_0",
        "verdict": "ask",
        "reason": "echo needs approval",
        "rule": "echo",
        "level": "user",
        "parts": ["echo call_0_0"],
    }
    (reply,) = [r for r in records if r["dir"] == "reply"]
    request = next(
        r for r in records if r["dir"] == "event" and r["data"]["type"] == "confirm_request"
    )
    assert reply["data"]["request_id"] == request["data"]["request_id"]
    assert reply["data"]["answer"] == {"decision": "deny", "message": "not now", "by_person": True}
    assert reply["data"]["by"] == "terminal" and reply["seq"] > request["seq"]


def test_what_a_waiting_agent_has_done_is_on_disk_before_it_asks(
    tmp_path: Path, start_agent: Start
) -> None:
    """Lines are encoded and written at the flush points only: a question, a turn's end.
    Whoever reads the trace as soon as the question arrives sees every line up to
    the question, in order, the rounds before it included."""
    path = tmp_path / "trace.jsonl"
    tracer = Tracer(path)
    replies = [[call("echo", text=str(i))] for i in range(40)] + [["fine"]]
    loop = make_loop(replies, tmp_path, tracer=tracer, policy=AskOnLast(), max_rounds=50)
    handle = start_agent(loop)
    handle.send("go")
    events: list[AgentEvent] = []
    while not isinstance(event := handle.next_event(5), ConfirmRequest):
        assert event is not None and not isinstance(event, Done)
        events.append(event)
    on_disk = Tracer.read(path)
    assert [r["seq"] for r in on_disk] == list(range(1, len(on_disk) + 1))
    assert on_disk[-1]["data"]["type"] == "confirm_request"
    assert sum(r["dir"] == "request" for r in on_disk) == 40
    event.reply.send(ConfirmReply("allow_once"), by="terminal")
    check_turn([*events, event, *handle.turn(5)])
    whole = Tracer.read(path)  # the turn's end is written before Done reaches anyone
    assert whole[: len(on_disk)] == on_disk and whole[-1]["data"]["type"] == "done"
    handle.shutdown()
    tracer.close()


class AskOnLast(RulePolicy):
    """Allows every echo but the fortieth, which it asks about."""

    def decide(self, tool: Tool, call: ToolCall) -> Decision:
        if call.id != "call_39_0":
            return Decision("allow")
        return super().decide(tool, call)


def test_a_question_from_a_tool_is_traced_with_its_answer(
    tmp_path: Path, start_agent: Start
) -> None:
    from codecoder.tools.ask import AskUserTool

    tracer = Tracer(tmp_path / "trace.jsonl")
    replies = [[call("ask_user", question="which?", options=["a", "b"])], ["ok"]]
    loop = make_loop(replies, tmp_path, tracer=tracer, tools=[AskUserTool()])
    handle = start_agent(loop)
    handle.send("go")
    for event in handle.turn(5):
        if hasattr(event, "question"):
            event.reply.send("b", by="stdin")  # type: ignore[union-attr]
    tracer.close()
    (reply,) = [r["data"] for r in Tracer.read(tmp_path / "trace.jsonl") if r["dir"] == "reply"]
    assert reply["answer"] == "b" and reply["by"] == "stdin"


def test_requests_are_traced_by_hash_and_size_and_whole_only_when_asked(
    tmp_path: Path, start_agent: Start
) -> None:
    """Equal requests have equal hashes (two runs of the same script), different ones
    differ; the hash chain over the view is rebuilt when a compaction swaps it."""
    seen: list[list[dict[str, Any]]] = []
    for bodies in (False, True, False):
        path = tmp_path / f"trace-{len(seen)}.jsonl"
        tracer = Tracer(path, bodies=bodies)
        replies = [[call("echo", text="a")], [call("echo", text="b")], ["fine"]]
        loop = make_loop(replies, tmp_path, tracer=tracer)
        handle = start_agent(loop)
        handle.send("go")
        handle.wait_done(5)
        handle.shutdown()
        tracer.close()
        seen.append([r["data"] for r in Tracer.read(path) if r["dir"] == "request"])
    first, whole, again = seen
    assert [r["messages"] for r in first] == [1, 3, 5]
    assert [r["sha256"] for r in again] == [r["sha256"] for r in first]
    assert len({r["sha256"] for r in first}) == 3
    assert first[0]["bytes"] < first[1]["bytes"] < first[2]["bytes"]
    assert all("body" not in r for r in first)
    body = codec.convert(whole[1]["body"], ProviderRequest)
    assert [m.role for m in body.messages] == ["user", "assistant", "tool"]
    digest = RequestDigest()
    view = list(body.messages)
    full, _ = digest.digest(body)
    assert digest.digest(body)[0] == full
    swapped = msgspec.structs.replace(body, messages=(view[0], *view[2:]))
    assert digest.digest(swapped)[0] != full
    assert digest.digest(body)[0] == full == RequestDigest().digest(body)[0]


def test_a_message_queued_behind_a_turn_is_traced_under_its_own_turn(
    tmp_path: Path, start_agent: Start
) -> None:
    tracer = Tracer(tmp_path / "trace.jsonl")
    replies = [[{"type": "sleep", "seconds": 0.3}, "first"], ["second"]]
    loop = make_loop(replies, tmp_path, tracer=tracer)
    handle = start_agent(loop)
    handle.send("one")
    handle.send("two")  # while turn 1 is still running
    handle.wait_done(5)
    handle.wait_done(5)
    tracer.close()
    records = Tracer.read(tmp_path / "trace.jsonl")
    messages = [r for r in records if r["data"].get("type") == "process_message"]
    assert [r["turn"] for r in messages] == [1, 2]
    dones = [r for r in records if r["dir"] == "event" and r["data"]["type"] == "done"]
    assert [r["turn"] for r in dones] == [1, 2]


class Flood:
    """A provider that streams `count` one-character tokens as fast as it can, then
    waits to be cancelled: the worst case for keeping the trace in channel order."""

    def __init__(self, count: int) -> None:
        self.count = count

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        for i in range(self.count):
            yield TextDelta(str(i % 10))
        cancel.wait(30)


def _one_cancelled_flood(path: Path, cancel_after: int, start: Start) -> None:
    tracer = Tracer(path)
    loop = AgentLoop(Flood(20_000), [Echo()], path.parent, tracer=tracer)
    handle = start(loop)
    handle.send("go")
    seen: list[AgentEvent] = []
    tokens = 0
    while tokens < cancel_after:
        event = handle.next_event(5)
        assert event is not None
        seen.append(event)
        tokens += isinstance(event, NewToken)
    canceller = threading.Thread(target=handle.cancel)
    canceller.start()  # from another thread, as a client's Ctrl+C arrives
    seen += handle.wait_done(5)
    canceller.join()
    handle.shutdown()
    loop.join_readers()
    tracer.close()
    records = Tracer.read(path)
    traced = [r["data"] for r in records if r["dir"] == "event"]
    assert traced == [msgspec.json.decode(codec.encode(e)) for e in seen]
    cancel = next(r for r in records if r["data"].get("type") == "cancel")
    done = next(r for r in records if r["dir"] == "event" and r["data"]["type"] == "done")
    assert cancel["seq"] < done["seq"] and done["data"]["reason"] == "cancelled"
    assert traced[-1]["type"] == "done"  # nothing of the turn after its Done


@pytest.mark.parametrize("run", range(20))
def test_the_trace_is_in_channel_order_when_a_token_flood_is_cancelled(
    tmp_path: Path, start_agent: Start, run: int
) -> None:
    """The property over many runs, cancelling after a different number of tokens each
    time: the event lines sorted by seq are exactly the events the client took, and the
    Cancel sorts before the Done it caused."""
    cancel_after = random.Random(run).randint(1, 5)
    _one_cancelled_flood(tmp_path / "trace.jsonl", cancel_after, start_agent)
