"""Record and replay in the kernel: a recorded run, replayed from its record alone, gives
the same history and the same events (kernel/journal.py)."""

from __future__ import annotations

import json
import re
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec
import pytest

from codecoder.kernel import codec
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.commands import ProcessMessage
from codecoder.kernel.events import (
    AgentEvent,
    AskUser,
    ConfirmReply,
    ConfirmRequest,
    Done,
    StatusUpdate,
    Subagent,
    ToolFinished,
    ToolOutput,
    Usage,
)
from codecoder.kernel.handle import AgentHandle
from codecoder.kernel.journal import (
    OUTPUT_BUDGET,
    OUTPUT_HOLD,
    Checked,
    Entry,
    LiveTools,
    Recorder,
    Replayer,
    Start,
    Turn,
    decode_entries,
    encode_entries,
)
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import Message, Text, ToolCall, ToolResult, tool_result
from codecoder.kernel.ports import CompactedView, Decision, Risk, Tool, ToolContext
from codecoder.providers.scripted import FORMAT, ScriptedProvider, parse_script
from codecoder.tools.ask import AskUserTool
from codecoder.tools.base import TypedTool
from tests.kernel.helpers import Crash, Echo, EchoArgs, Wait

Start_ = Callable[[AgentLoop], AgentHandle]


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


class Talker(TypedTool[EchoArgs]):
    """A tool with live output, a part of which its result does not hold."""

    name = "talk"
    description = "Talk."
    risk: Risk = "read"
    args_type = EchoArgs

    def call(self, args: EchoArgs, ctx: ToolContext) -> ToolResult:
        for _ in range(args.times):
            ctx.output(args.text)
        ctx.output("said only live\n")
        return tool_result(ctx.call_id, args.text * args.times)


class FileReader(TypedTool[EchoArgs]):
    """Reads a file of the workspace (what --live-tools runs again)."""

    name = "read"
    description = "Read."
    risk: Risk = "read"
    args_type = EchoArgs

    def call(self, args: EchoArgs, ctx: ToolContext) -> ToolResult:
        return tool_result(ctx.call_id, (ctx.workspace / args.text).read_text())


class AskEcho:
    """Asks about every echo; denies `talk` outright."""

    def decide(self, tool: Tool, call: ToolCall) -> Decision:
        if tool.name == "echo":
            return Decision("ask", "echo needs approval")
        if tool.name == "talk" and call.args.get("text") == "no":
            return Decision("deny", "not that")
        return Decision("allow")

    def remember(self, tool: Tool, call: ToolCall, scope: Literal["session", "project"]) -> None:
        raise OSError("read-only file system")

    def forbid(self, tool: Tool, call: ToolCall) -> None:
        return None


class SecondRoundCompactor:
    """Prepares a compaction once two replies have been seen."""

    def __init__(self) -> None:
        self.seen: list[Sequence[Message]] = []

    def observe(self, view: Sequence[Message], usage: Usage | None) -> None:
        self.seen.append(list(view))

    def ready(self) -> CompactedView | None:
        if len(self.seen) != 2:
            return None
        view = self.seen.pop()
        summary = Message(id=0, role="user", items=(Text("summary of the start"),))
        return CompactedView(summary, view[-2].id, 100, 10)

    def compact_now(self, view: Sequence[Message], cancel: CancelToken) -> CompactedView | None:
        return None


class MemorySink:
    def __init__(self) -> None:
        self.rows: list[bytes] = []

    def record(self, body: bytes, *, now: bool) -> None:
        self.rows.append(body)

    def entries(self) -> list[Entry]:
        return [entry for row in self.rows for entry in decode_entries(row)]


class MemoryHistory:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    def append(self, message: Message) -> None:
        self.messages.append(message)


REPLIES: list[Any] = [
    [
        {"type": "reasoning", "text": "Let me think about it.", "token": "sig-1"},
        "I will echo first. ",
        call("echo", text="ab", times=2),
        {"type": "usage", "input_tokens": 12, "output_tokens": 7},
    ],
    [call("talk", text="hi ", times=3), call("talk", text="no")],
    [call("echo", text="c", times="2"), call("echo", text="c", times="x")],
    [call("ask_user", question="which one?", options=["a", "b"]), call("crash", text="x")],
    [{"type": "tool_call", "name": "echo", "raw_args": '{"text": "unterminated'}],
    ["All done, and here is a long answer with many words in it."],
    ["Second turn, short."],
]


def _tools() -> list[Tool]:
    return [Echo(), Talker(), AskUserTool(), Crash(), Wait()]


def recorded_run(tmp_path: Path, start: Start_) -> tuple[MemorySink, MemoryHistory, list[Any]]:
    sink, history = MemorySink(), MemoryHistory()
    loop = AgentLoop(
        ScriptedProvider.from_replies(REPLIES),
        _tools(),
        tmp_path,
        policy=AskEcho(),
        history=history,
        compactor=SecondRoundCompactor(),
        journal=Recorder(sink),
    )
    handle = start(loop)
    events: list[Any] = []
    for text in ("go", "and again"):
        handle.send(text)
        for event in handle.turn(5):
            events.append(event)
            if isinstance(event, ConfirmRequest):
                event.reply.send(ConfirmReply("allow_session"), by="terminal")
            elif isinstance(event, AskUser):
                event.reply.send("b", by="terminal")
    handle.shutdown()
    return sink, history, events


def replay(
    entries: list[Entry],
    messages: dict[int, Message],
    tmp_path: Path,
    start: Start_,
    live: LiveTools | None = None,
) -> tuple[Replayer, MemoryHistory, list[AgentEvent]]:
    first = entries[0]
    assert isinstance(first, Start)
    replayer = Replayer(entries[1:], messages, live=live)
    history = MemoryHistory()
    loop = AgentLoop(
        ScriptedProvider.from_replies([]),  # never asked: the record answers
        [_Named(name) for name in first.tools],
        tmp_path,
        policy=AskEcho() if first.policy else None,
        history=history,
        compactor=SecondRoundCompactor() if first.compactor else None,
        max_rounds=first.max_rounds,
        first_turn=first.first_turn,
        next_id=first.next_id,
        journal=replayer,
    )
    handle = start(loop)
    events: list[AgentEvent] = []
    for turn in [e for e in entries if isinstance(e, Turn)]:
        handle.submit(ProcessMessage(messages[turn.message]))
        events += handle.turn(5)
    handle.shutdown()
    return replayer, history, events


class _Named:
    """A tool of the record: never run in a replay (its result is recorded)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.description = ""
        self.risk: Risk = "read"
        self.parameters: dict[str, Any] = {}

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        return args

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise AssertionError(f"{self.name} ran in a replay")


def _encoded(messages: Sequence[Message]) -> list[bytes]:
    return [codec.encode(m) for m in messages]


def test_a_replay_gives_the_same_history_and_events(tmp_path: Path, start_agent: Start_) -> None:
    sink, history, events = recorded_run(tmp_path, start_agent)
    assert any(isinstance(e, ToolFinished) and e.error for e in events)  # the denial, the crash
    entries = sink.entries()
    messages = {m.id: m for m in history.messages}
    replayer, again, replayed = replay(entries, messages, tmp_path, start_agent)
    assert _encoded(again.messages) == _encoded(history.messages)
    assert replayer.differences == [] and replayer.finished
    stable = [_plain(e) for e in events]
    assert [_plain(e) for e in replayed] == stable


def _plain(event: AgentEvent) -> Any:
    """An event as JSON with its question id left out (a replay makes new oneshots)."""
    value = msgspec.json.decode(codec.encode(event))
    value.pop("request_id", None)
    return value


def test_the_record_keeps_text_as_lengths_and_results_by_reference(
    tmp_path: Path, start_agent: Start_
) -> None:
    sink, _, _ = recorded_run(tmp_path, start_agent)
    record = b"".join(sink.rows)
    assert b"I will echo first" not in record and b"many words" not in record
    assert b"unterminated" not in record  # the raw arguments are in the message
    assert b"said only live" in record  # live output the result does not hold
    assert b"summary of the start" in record  # a compaction's summary is not a message
    checked = [e for e in sink.entries() if isinstance(e, Checked)]
    assert [(e.args, e.error is not None) for e in checked] == [
        ({"text": "c", "times": 2}, False),  # what the loop went on with
        (None, True),  # refused: the policy was never asked
    ]


def test_a_changed_kernel_is_caught_by_the_event_digest(
    tmp_path: Path, start_agent: Start_, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink, history, _ = recorded_run(tmp_path, start_agent)
    messages = {m.id: m for m in history.messages}
    original = AgentLoop._emit

    def changed(self: AgentLoop, event: AgentEvent) -> None:
        if isinstance(event, StatusUpdate) and event.status == "thinking":
            event = StatusUpdate("thinking", "changed")
        original(self, event)

    monkeypatch.setattr(AgentLoop, "_emit", changed)
    replayer, again, _ = replay(sink.entries(), messages, tmp_path, start_agent)
    assert _encoded(again.messages) == _encoded(history.messages)  # the history is the same
    assert replayer.differences and replayer.differences[0].startswith("turn 1: StatusUpdate")


def test_live_tools_report_the_first_call_whose_result_changed(
    tmp_path: Path, start_agent: Start_
) -> None:
    (tmp_path / "notes.txt").write_text("first version\n")
    replies = [[call("read", text="notes.txt"), call("read", text="notes.txt")], ["ok"]]
    sink, history = MemorySink(), MemoryHistory()
    loop = AgentLoop(
        ScriptedProvider.from_replies(replies),
        [FileReader()],
        tmp_path,
        history=history,
        journal=Recorder(sink),
    )
    handle = start_agent(loop)
    handle.send("go")
    handle.wait_done(5)
    handle.shutdown()
    messages = {m.id: m for m in history.messages}
    live = LiveTools({"read": FileReader()}, lambda tool, call: True)
    same, _, _ = replay(sink.entries(), messages, tmp_path, start_agent, live=live)
    assert same.divergence is None
    (tmp_path / "notes.txt").write_text("second version\n")
    live = LiveTools({"read": FileReader()}, lambda tool, call: True)
    changed, again, _ = replay(sink.entries(), messages, tmp_path, start_agent, live=live)
    assert changed.divergence is not None
    assert (changed.divergence.call_id, changed.divergence.tool) == ("call_0_0", "read")
    assert "second version" in changed.divergence.live
    assert _encoded(again.messages) == _encoded(history.messages)  # still the recorded run


def test_a_cancelled_turn_replays_to_the_same_end(tmp_path: Path, start_agent: Start_) -> None:
    replies = [[call("echo", text="a"), call("wait", seconds=30)], ["never"]]
    sink, history = MemorySink(), MemoryHistory()
    loop = AgentLoop(
        ScriptedProvider.from_replies(replies),
        _tools(),
        tmp_path,
        history=history,
        journal=Recorder(sink),
    )
    handle = start_agent(loop)
    handle.send("go")
    events: list[AgentEvent] = []
    for event in handle.turn(5):
        events.append(event)
        if isinstance(event, ToolFinished) and event.id == "call_0_0":
            handle.cancel()
    handle.shutdown()
    assert isinstance(events[-1], Done) and events[-1].reason == "cancelled"
    messages = {m.id: m for m in history.messages}
    replayer, again, replayed = replay(sink.entries(), messages, tmp_path, start_agent)
    assert _encoded(again.messages) == _encoded(history.messages)
    assert [_plain(e) for e in replayed] == [_plain(e) for e in events]
    assert replayer.differences == []


def test_live_output_past_the_budget_is_kept_as_lengths(tmp_path: Path) -> None:
    from codecoder.kernel.journal import OutputRef, _output_refs

    big = "x" * 1000
    events: list[AgentEvent] = [ToolOutput("c", big)] * (OUTPUT_BUDGET // 1000 + 5)
    kept = _output_refs(events, "c", "short result")
    assert isinstance(kept[-1], OutputRef) and not kept[-1].kept
    literal = sum(len(e.chunk) for e in kept if isinstance(e, ToolOutput))
    assert literal <= OUTPUT_BUDGET


class Flood(TypedTool[EchoArgs]):
    """Prints `times` chunks of 64 KiB, each a new string, then as many for a sub-agent's
    call (a parent's `agent` tool passes its children's events on like this)."""

    name = "flood"
    description = "Flood."
    risk: Risk = "read"
    args_type = EchoArgs

    def call(self, args: EchoArgs, ctx: ToolContext) -> ToolResult:
        for i in range(args.times):
            ctx.output(f"{i:08d}".ljust(65536, "x"))
        for i in range(args.times):
            ctx.emit(Subagent("child", ToolOutput("call_c", f"{i:08d}".ljust(65536, "y"))))
        return tool_result(ctx.call_id, f"{0:08d}".ljust(65536, "x") + "…the end")


NOT_RECORDED = re.compile(r"\[… ([\d,]+) characters in ([\d,]+) chunks not recorded …\]\n")


def test_a_call_that_prints_200_mb_is_recorded_in_bounded_memory_and_replays(
    tmp_path: Path, start_agent: Start_
) -> None:
    times = 1600  # 100 MB for the call, 100 MB for its sub-agent's
    sink, history = MemorySink(), MemoryHistory()
    replies = [[call("flood", text="", times=times)], ["done"]]
    loop = AgentLoop(
        ScriptedProvider.from_replies(replies),
        [Flood()],
        tmp_path,
        history=history,
        journal=Recorder(sink),
    )
    tracemalloc.start()
    try:
        handle = start_agent(loop)
        handle.send("go")
        live = [e for e in handle.turn(30) if not isinstance(e, ToolOutput | Subagent)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    handle.shutdown()
    assert peak < 40_000_000  # it held all 200 MB: every event of the call until its end
    assert sum(len(row) for row in sink.rows) < 4 * OUTPUT_HOLD
    messages = {m.id: m for m in history.messages}
    replayer, again, replayed = replay(sink.entries(), messages, tmp_path, start_agent)
    assert _encoded(again.messages) == _encoded(history.messages)
    assert replayer.differences == [] and replayer.finished
    assert [e for e in replayed if not isinstance(e, ToolOutput | Subagent)] == live
    ours = [e.chunk for e in replayed if isinstance(e, ToolOutput)]
    theirs = [
        e.event.chunk
        for e in replayed
        if isinstance(e, Subagent) and isinstance(e.event, ToolOutput)
    ]
    assert ours[0] == f"{0:08d}".ljust(65536, "x")  # by reference to the result
    for chunks in (ours, theirs):
        note = NOT_RECORDED.fullmatch(chunks[-1])
        assert note is not None, chunks[-1][:100]
        kept = chunks[:-1]
        assert sum(map(len, kept)) <= OUTPUT_HOLD
        assert sum(map(len, kept)) + int(note[1].replace(",", "")) == times * 65536
        assert len(kept) + int(note[2].replace(",", "")) == times
    assert theirs[:-1] == [f"{i:08d}".ljust(65536, "y") for i in range(len(theirs) - 1)]


def test_entries_round_trip_and_large_rows_are_deflated() -> None:
    entries: list[Entry] = [
        Start(
            ("echo",), 0, 1, 100, (1, Message(0, "user", (Text("s" * 5000),))), True, False, False
        )
    ]
    body = encode_entries(entries)
    assert len(body) < 1000 and not body.startswith(b"[")
    assert decode_entries(body) == entries


@pytest.mark.parametrize("run", range(12))
def test_a_turn_cancelled_at_any_moment_replays_the_same(
    tmp_path: Path, start_agent: Start_, run: int
) -> None:
    """The property over many runs: wherever the cancel lands (mid-stream, between a
    tool's events, while a tool waits), the record takes the replay to the same end."""
    import random

    words = " ".join(f"w{i}" for i in range(40))
    replies = [
        {"token_delay": 0.001, "parts": [words, call("echo", text="a"), call("wait", seconds=30)]},
        {"token_delay": 0.001, "parts": [words]},
    ]
    sink, history = MemorySink(), MemoryHistory()
    loop = AgentLoop(
        ScriptedProvider(parse_script(json.dumps({"format": FORMAT, "replies": replies}))),
        _tools(),
        tmp_path,
        history=history,
        journal=Recorder(sink),
    )
    handle = start_agent(loop)
    handle.send("go")
    cancel_at = random.Random(run).randint(1, 30)
    events: list[AgentEvent] = []
    for event in handle.turn(5):
        events.append(event)
        if len(events) == cancel_at:
            handle.cancel()
    handle.shutdown()
    messages = {m.id: m for m in history.messages}
    replayer, again, replayed = replay(sink.entries(), messages, tmp_path, start_agent)
    assert _encoded(again.messages) == _encoded(history.messages)
    assert [_plain(e) for e in replayed] == [_plain(e) for e in events]
    assert replayer.differences == [] and replayer.finished
