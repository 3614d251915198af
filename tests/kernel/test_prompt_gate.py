"""The prompt gate (issue 18, the `session_start` and `user_prompt` hooks): asked once a
turn's message is committed, before the first request; its context joins the turn as a
user message, a block ends the turn unasked; both replay from the record."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.commands import ProcessMessage
from codecoder.kernel.events import AgentEvent, Done, Error, StatusUpdate, Steered
from codecoder.kernel.handle import AgentHandle
from codecoder.kernel.journal import Prompted, Recorder, Replayer, Turn, decode_entries
from codecoder.kernel.journal import Start as StartEntry
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import Message
from codecoder.kernel.ports import PromptVerdict
from tests.invariants import check_history, check_turn
from tests.kernel.helpers import make_loop

Start = Callable[[AgentLoop], AgentHandle]


class Gate:
    """Answers each turn from a list; remembers what it was shown."""

    def __init__(self, *verdicts: PromptVerdict) -> None:
        self.verdicts = list(verdicts)
        self.seen: list[str] = []

    def prompt(self, view: Sequence[Message], cancel: CancelToken) -> PromptVerdict:
        self.seen.append(view[-1].text)
        return self.verdicts.pop(0) if self.verdicts else PromptVerdict()


def test_context_joins_the_turn_after_the_prompt_before_the_request(
    tmp_path: Path, start_agent: Start
) -> None:
    gate = Gate(PromptVerdict(context="branch: main; 2 tests failing"))
    loop = make_loop([["ok"]], tmp_path, prompt_gate=gate)
    handle = start_agent(loop)
    handle.send("fix the tests")
    events = handle.wait_done(5)
    assert check_turn(events).reason == "completed"
    assert gate.seen == ["fix the tests"]  # the prompt was committed and last
    steered = events.index(Steered("branch: main; 2 tests failing", by="hook"))
    thinking = next(
        i for i, e in enumerate(events) if isinstance(e, StatusUpdate) and e.status == "thinking"
    )
    assert steered < thinking
    assert [(m.role, m.text) for m in loop.messages] == [
        ("user", "fix the tests"),
        ("user", "branch: main; 2 tests failing"),
        ("assistant", "ok"),
    ]
    check_history(loop.messages)


def test_a_blocked_prompt_ends_the_turn_without_a_request(
    tmp_path: Path, start_agent: Start
) -> None:
    gate = Gate(PromptVerdict(blocked="user_prompt hook: no secrets in prompts"))
    loop = make_loop([["never sent"], ["second"]], tmp_path, prompt_gate=gate)
    handle = start_agent(loop)
    handle.send("my password is hunter2")
    events = handle.wait_done(5)
    assert check_turn(events).reason == "error"
    assert Error("blocked", "user_prompt hook: no secrets in prompts") in events
    assert not any(isinstance(e, StatusUpdate) and e.status == "thinking" for e in events)
    handle.send("next")  # the script's first reply was never asked for
    assert [e for e in handle.wait_done(5) if isinstance(e, Done)] == [Done(False, "completed")]
    assert [m.text for m in loop.messages if m.role == "assistant"] == ["never sent"]


class Hanging:
    """A gate that waits for the turn's cancel (a hook that hangs)."""

    def __init__(self) -> None:
        self.asked = threading.Event()

    def prompt(self, view: Sequence[Message], cancel: CancelToken) -> PromptVerdict:
        self.asked.set()
        cancel.wait(30)
        cancel.check()
        return PromptVerdict()


def test_cancel_during_the_gate_keeps_the_prompt(tmp_path: Path, start_agent: Start) -> None:
    gate = Hanging()
    loop = make_loop([["never"]], tmp_path, prompt_gate=gate)
    handle = start_agent(loop)
    handle.send("go")
    assert gate.asked.wait(5)
    handle.cancel()
    events: list[AgentEvent] = []
    while not events or not isinstance(events[-1], Done):
        event = handle.next_event(5)
        assert event is not None
        events.append(event)
    assert events[-1] == Done(True, "cancelled")
    assert [m.text for m in loop.messages] == ["go"]


class Sink:
    def __init__(self) -> None:
        self.rows: list[bytes] = []
        self.messages: list[Message] = []

    def record(self, body: bytes, *, now: bool) -> None:
        self.rows.append(body)

    def append(self, message: Message) -> None:
        self.messages.append(message)


@pytest.mark.parametrize(
    "verdicts",
    [
        (PromptVerdict(context="ctx 1"), PromptVerdict()),
        (PromptVerdict(blocked="no"), PromptVerdict(context="ctx 2")),
    ],
)
def test_prompt_gate_answers_replay_from_the_record(
    tmp_path: Path, start_agent: Start, verdicts: tuple[PromptVerdict, ...]
) -> None:
    sink = Sink()
    replies = [["one"], ["two"]]
    loop = make_loop(
        replies, tmp_path, prompt_gate=Gate(*verdicts), history=sink, journal=Recorder(sink)
    )
    handle = start_agent(loop)
    recorded: list[AgentEvent] = []
    for text in ("first", "second"):
        handle.send(text)
        recorded += handle.wait_done(5)
    handle.shutdown()
    entries = [e for row in sink.rows for e in decode_entries(row)]
    start = entries[0]
    assert isinstance(start, StartEntry) and start.prompt_gate
    assert [e for e in entries if isinstance(e, Prompted)] == [
        Prompted(v.context, v.blocked) for v in verdicts
    ]

    class NoGate:
        def prompt(self, view: Sequence[Message], cancel: CancelToken) -> PromptVerdict:
            raise AssertionError("a replay ran a hook")

    replayer = Replayer(entries[1:], {m.id: m for m in sink.messages})
    again = Sink()
    replay = make_loop([], tmp_path, prompt_gate=NoGate(), history=again, journal=replayer)
    handle = start_agent(replay)
    replayed: list[AgentEvent] = []
    for turn in [e for e in entries if isinstance(e, Turn)]:
        handle.submit(ProcessMessage(next(m for m in sink.messages if m.id == turn.message)))
        replayed += handle.wait_done(5)
    assert replayed == recorded
    assert again.messages == sink.messages
    assert replayer.differences == [] and replayer.mismatch == ""
