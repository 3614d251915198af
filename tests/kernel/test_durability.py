"""What the loop makes durable, and when, against a crash that runs no cleanup
(invariant 6): a tool result is committed before anyone is told the call finished, and a
reply is drafted while it streams."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from codecoder.kernel.events import Done, Error, NewToken, ToolFinished
from codecoder.kernel.handle import AgentHandle
from codecoder.kernel.loop import DRAFT_EVERY, DRAFT_RATE, AgentLoop
from codecoder.kernel.messages import Message, Reasoning, Text
from codecoder.kernel.ports import HistoryUnavailable
from codecoder.kernel.reply import ReplyBuilder
from tests.invariants import check_turn
from tests.kernel.helpers import make_loop

pytestmark = pytest.mark.timeout(30)

Start = Callable[[AgentLoop], AgentHandle]
"""The `start_agent` fixture (tests/conftest.py)."""


class StoreFull(HistoryUnavailable):
    """What a store's write raises when the disk is full (the kernel knows no store: the
    sessions store raises its own HistoryUnavailable)."""


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


class HeldSink:
    """A history sink whose commit of a tool message waits until released (a store
    busy under load), or fails (`fail`)."""

    def __init__(self, *, fail: bool = False) -> None:
        self.messages: list[Message] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail = fail

    def append(self, message: Message) -> None:
        if message.role == "tool":
            self.entered.set()
            if self.fail:
                raise StoreFull("the disk is full")
            self.release.wait(10)
        self.messages.append(message)


class DraftingSink:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.drafts: list[Message] = []

    def append(self, message: Message) -> None:
        self.messages.append(message)

    def draft(self, message: Message) -> None:
        self.drafts.append(message)


def test_a_tool_result_is_committed_before_its_call_is_announced_finished(
    tmp_path: Path, start_agent: Start
) -> None:
    """A client that saw ToolFinished must find the result after a crash: while the
    commit waits, no ToolFinished may be out."""
    sink = HeldSink()
    handle = start_agent(make_loop([[call("echo", text="a")], ["done"]], tmp_path, history=sink))
    handle.send("go")
    seen: list[Any] = []
    try:
        assert sink.entered.wait(10)
        while True:
            seen.append(handle.next_event(0.3))
    except TimeoutError:
        pass
    finally:
        sink.release.set()  # a failure leaves no loop waiting
    assert not [e for e in seen if isinstance(e, ToolFinished)], "announced before committed"
    events = seen + handle.wait_done(10)
    check_turn(events)
    assert [m.role for m in sink.messages] == ["user", "assistant", "tool", "assistant"]


def test_a_result_that_cannot_be_committed_still_finishes_its_call(
    tmp_path: Path, start_agent: Start
) -> None:
    """Committing first must not cost invariant 2: the call finishes, then the turn
    ends with the store's error."""
    sink = HeldSink(fail=True)
    handle = start_agent(make_loop([[call("echo", text="a")], ["done"]], tmp_path, history=sink))
    handle.send("go")
    events = handle.wait_done(10)
    assert check_turn(events).reason == "error"
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert len(finished) == 1 and finished[0].id == "call_0_0"
    errors = [e for e in events if isinstance(e, Error)]
    assert [(e.kind, e.message) for e in errors] == [("store", "the disk is full")]


def test_a_streaming_reply_is_drafted_at_a_bounded_rate(tmp_path: Path, start_agent: Start) -> None:
    """Each draft is the reply so far under the id the reply takes, interrupted; at most
    one per DRAFT_EVERY; the final message is what it would be without drafts."""
    words = "".join(f"w{i} " for i in range(120))  # ~1.2 s at 10 ms a token
    reply = {
        "token_delay": 0.01,
        "parts": [{"type": "reasoning", "text": "think it over", "token": "sig"}, words],
    }
    sink = DraftingSink()
    handle = start_agent(make_loop([reply], tmp_path, history=sink))
    handle.send("go")
    events = handle.wait_done(10)
    assert isinstance(events[-1], Done) and not events[-1].cancelled
    final = sink.messages[-1]
    assert final.items == (Reasoning("think it over", "sig"), Text(words))
    assert final.status == "complete"
    streamed = 1.2 + 0.03  # tokens of the reasoning too
    assert 2 <= len(sink.drafts) <= streamed / DRAFT_EVERY + 1, len(sink.drafts)
    texts = [d.text for d in sink.drafts]
    assert texts == sorted(texts, key=len) and all(words.startswith(t) for t in texts)
    assert {d.id for d in sink.drafts} == {final.id}
    assert {d.status for d in sink.drafts} == {"interrupted"}
    assert "".join(e.text for e in events if isinstance(e, NewToken)) == words


def test_a_draft_leaves_the_builder_as_it_was() -> None:
    """Drafting mid-run must not close the open text or reasoning: the final message
    has one item per run, as without drafts."""
    builder = ReplyBuilder()
    assert builder.draft(7) is None
    builder.reasoning("a")
    first = builder.draft(7)
    assert first is not None and first.items == (Reasoning("a"),)
    builder.reasoning("b")
    builder.reasoning_done("tok")
    builder.text("x")
    builder.draft(7)
    builder.text("y")
    second = builder.draft(7)
    assert second is not None and second.items == (Reasoning("ab", "tok"), Text("xy"))
    builder.text("z")
    final = builder.build(7, interrupted=False)
    assert final is not None and final.items == (Reasoning("ab", "tok"), Text("xyz"))


def test_drafts_of_a_long_reply_come_further_apart(tmp_path: Path, start_agent: Start) -> None:
    """Each draft rewrites the whole reply: past DRAFT_RATE characters a second of
    drafts, they wait longer, so a long answer does not write its square to the store."""
    words = "".join("x" * 8191 + " " for _ in range(150))  # 1.2 M characters in ~1.5 s
    sink = DraftingSink()
    handle = start_agent(
        make_loop([{"token_delay": 0.01, "parts": [words]}], tmp_path, history=sink)
    )
    drafted_within_the_rate(handle, sink, words)


def test_a_finished_call_counts_in_a_drafts_size(tmp_path: Path, start_agent: Start) -> None:
    """A reply that streams text after a call with 2 MB of arguments: each draft holds the
    call, so the drafts are spaced by it too (before: 8 MB a second to the store's log)."""
    big = {"type": "tool_call", "name": "echo", "args": {"text": "A" * 2_000_000}}
    words = "w " * 150  # ~1.5 s at 10 ms a token
    sink = DraftingSink()
    reply = {"token_delay": 0.01, "parts": [big, words]}
    handle = start_agent(make_loop([reply, ["done"]], tmp_path, history=sink))
    drafted_within_the_rate(handle, sink, words, last=-3)


def drafted_within_the_rate(
    handle: AgentHandle, sink: DraftingSink, words: str, *, last: int = -1
) -> None:
    started = time.monotonic()
    handle.send("go")
    events = handle.wait_done(20)
    elapsed = time.monotonic() - started
    assert isinstance(events[-1], Done) and sink.messages[last].text == words
    assert sink.drafts, "no draft of a reply that streamed for a second"
    after_first = sum(len(msgspec.json.encode(d.items)) for d in sink.drafts[1:])
    assert after_first <= DRAFT_RATE * elapsed, (len(sink.drafts), after_first, elapsed)
