"""Replaying a recorded session (`codecoder replay`): the same loop, run again on its
record, offline, without touching the recorded session.

Each time the session's agent came up (a run, a resume) its record begins with a Start
entry: a replay builds the same loop for each (the same tools by name, the same view,
rounds, turn numbers and ids), submits the commands it took, and lets a Replayer answer
the loop from the record (kernel/journal.py). What it produced is then held against what
was stored: every message byte for byte, every turn's events by the record's digest.
With `live_tools`, the calls the permission policy of the session's folder allows in the
given mode run again for real, and the first whose result differs is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder.kernel import codec
from codecoder.kernel.commands import Compact, ProcessMessage
from codecoder.kernel.events import AgentEvent, Done
from codecoder.kernel.journal import (
    CompactCommand,
    Divergence,
    Entry,
    LiveTools,
    Replayer,
    Start,
    Turn,
    decode_entries,
)
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.messages import Message, ToolCall, ToolResult
from codecoder.kernel.ports import (
    CompactedView,
    Decision,
    PromptVerdict,
    ProviderRequest,
    Risk,
    StreamEvent,
    Tool,
    ToolContext,
    Usage,
)
from codecoder.tools.process import ProcessManager

if TYPE_CHECKING:
    from codecoder.approval import ApprovalMode
    from codecoder.kernel.cancel import CancelToken
    from codecoder.sessions import SessionStore


class ReplayError(Exception):
    """The session cannot be replayed (no record, a damaged one); exit code 2."""


class ReplayReport(msgspec.Struct):
    """What a replay found. `identical`: the same history and the same events (and, with
    live tools, the same results)."""

    session_id: str
    turns: int = 0
    messages: int = 0
    history_difference: str = ""
    event_differences: list[str] = msgspec.field(default_factory=list)
    divergence: Divergence | None = None
    not_rerun: list[str] = msgspec.field(default_factory=list)
    mismatch: str = ""

    @property
    def identical(self) -> bool:
        return not (
            self.history_difference or self.event_differences or self.divergence or self.mismatch
        )

    def summary(self) -> str:
        """One line: what was replayed, or the first difference."""
        if self.mismatch:
            return f"the replay left the record: {self.mismatch}"
        if self.history_difference:
            return self.history_difference
        if self.divergence is not None:
            d = self.divergence
            return f"{d.tool} call {d.call_id} gives another result today"
        if self.event_differences:
            return self.event_differences[0]
        what = f"{_count(self.turns, 'turn')}, {_count(self.messages, 'message')}"
        return f"identical: {what} replayed"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def replay_session(
    store: SessionStore,
    session_id: str,
    *,
    live_tools: ApprovalMode | None = None,
    on_event: Callable[[int, AgentEvent], None] | None = None,
) -> ReplayReport:
    """Replay a stored session. `live_tools`: run again the calls the policy allows in
    that approval mode (`read-only`: reads only). `on_event(turn, event)` sees every
    replayed event. Raises ReplayError when there is no record to replay."""
    rows = store.load_records(session_id)
    if not rows:
        raise ReplayError(
            f"session {session_id[:8]} has no record (made before recording, with "
            "[record] enabled = false, or forked)"
        )
    try:
        entries = [entry for row in rows for entry in decode_entries(row)]
    except (msgspec.DecodeError, ValueError) as exc:
        raise ReplayError(f"the record of session {session_id[:8]} is damaged: {exc}") from exc
    stored = {m.id: m for m in store.load_messages(session_id)}
    workspace = Path(store.get(session_id).cwd)
    report = ReplayReport(session_id)
    produced: dict[int, Message] = {}
    manager = ProcessManager()
    try:
        live = _live_tools(workspace, live_tools, manager) if live_tools is not None else None
        for segment in _segments(entries):
            outcome = _replay_segment(
                segment,
                stored=stored,
                produced=produced,
                workspace=workspace,
                live=live,
                on_event=on_event,
            )
            report.turns += outcome.turns
            report.event_differences += outcome.replayer.differences
            report.not_rerun += outcome.replayer.not_rerun
            if report.divergence is None:
                report.divergence = outcome.replayer.divergence
            if outcome.mismatch:
                report.mismatch = outcome.mismatch
                break
    finally:
        manager.close()
    report.messages = len(produced)
    report.history_difference = _history_difference(produced, stored)
    return report


def _segments(entries: Sequence[Entry]) -> list[list[Entry]]:
    """The record cut at each Start: one list per time the agent came up."""
    segments: list[list[Entry]] = []
    for entry in entries:
        if isinstance(entry, Start):
            segments.append([entry])
        elif segments:
            segments[-1].append(entry)
        else:
            raise ReplayError("the record does not begin where an agent came up")
    return segments


class _Outcome(msgspec.Struct):
    replayer: Replayer
    turns: int
    mismatch: str


def _replay_segment(
    segment: list[Entry],
    *,
    stored: dict[int, Message],
    produced: dict[int, Message],
    workspace: Path,
    live: LiveTools | None,
    on_event: Callable[[int, AgentEvent], None] | None,
) -> _Outcome:
    start = segment[0]
    assert isinstance(start, Start)
    replayer = Replayer(segment[1:], stored, live=live)
    view = [_seeded(ref, produced, stored) for ref in start.view]
    sink = _Produced(produced)
    loop = AgentLoop(
        _NoProvider(),
        [_RecordedTool(name) for name in start.tools],
        workspace,
        policy=_RecordedPolicy() if start.policy else None,
        history=sink,
        compactor=_RecordedCompactor() if start.compactor else None,
        stop_gate=_RecordedGate() if start.stop_gate else None,
        prompt_gate=_RecordedGate() if start.prompt_gate else None,
        tool_source=replayer.replayed_source(_RecordedTool) if start.source else None,
        max_rounds=start.max_rounds,
        messages=view,
        first_turn=start.first_turn,
        next_id=start.next_id,
        journal=replayer,
        name="replay",
    )
    commands = [e for e in segment if isinstance(e, Turn | CompactCommand)]
    turns = sum(isinstance(e, Turn) for e in commands)
    handle = loop.start()
    mismatch = ""
    try:
        for command in commands:
            if isinstance(command, Turn):
                message = stored.get(command.message)
                if message is None:
                    raise ReplayError(f"the store has no message {command.message}")
                handle.submit(ProcessMessage(message))
            else:
                handle.submit(Compact())
        done = 0
        while done < turns:
            event = handle.next_event(timeout=60)
            if event is None:
                break
            if on_event is not None:
                on_event(loop.turn, event)
            done += isinstance(event, Done)
    finally:
        handle.shutdown()
    mismatch = replayer.mismatch
    if not mismatch and not replayer.finished:
        mismatch = "the record goes on after the replay ended"
    return _Outcome(replayer, turns, mismatch)


def _seeded(ref: int | Message, produced: dict[int, Message], stored: dict[int, Message]) -> Any:
    if isinstance(ref, Message):
        return ref
    message = produced.get(ref) or stored.get(ref)
    if message is None:
        raise ReplayError(f"the store has no message {ref}, which the record's view names")
    return message


def _history_difference(produced: dict[int, Message], stored: dict[int, Message]) -> str:
    """The first message the replay made differently from the store ("" when none)."""
    for ident in sorted(produced):
        recorded = stored.get(ident)
        if recorded is None:
            return f"message {ident}: the replay made one the store does not have"
        if codec.encode(produced[ident]) != codec.encode(recorded):
            return f"message {ident} ({recorded.role}) differs from the stored one"
    return ""


class _Produced:
    """The replay's history sink: what the loop commits, by id (never the store)."""

    def __init__(self, produced: dict[int, Message]) -> None:
        self._produced = produced

    def append(self, message: Message) -> None:
        self._produced[message.id] = message

    def record_compaction(self, view: CompactedView) -> None:
        return None


class _NoProvider:
    """The provider of a replay: the record answers; asking it is a bug."""

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        raise AssertionError("a replay asked the provider")


class _RecordedTool:
    """A tool of the record, by name: its results come from the record."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.description = ""
        self.risk: Risk = "read"
        self.parameters: dict[str, Any] = {"type": "object"}

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError(f"{self.name} validated arguments in a replay")

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise AssertionError(f"{self.name} ran in a replay")


class _RecordedPolicy:
    """Present so the loop asks; the record's verdicts answer."""

    def decide(self, tool: Tool, call: ToolCall) -> Decision:
        return Decision("allow")

    def remember(self, tool: Tool, call: ToolCall, scope: Any) -> None:
        return None

    def forbid(self, tool: Tool, call: ToolCall) -> None:
        return None


class _RecordedGate:
    """Present so the loop asks its stop and prompt gates (the hooks); the record's
    answers stand in for them, and no hook runs in a replay."""

    def stop(self, view: Sequence[Message], cancel: CancelToken) -> str | None:
        raise AssertionError("a replay asked a stop gate")

    def prompt(self, view: Sequence[Message], cancel: CancelToken) -> PromptVerdict:
        raise AssertionError("a replay asked a prompt gate")


class _RecordedCompactor:
    """Present so the loop compacts; the record's compactions answer."""

    def observe(self, view: Sequence[Message], usage: Usage | None) -> None:
        return None

    def ready(self) -> CompactedView | None:
        return None

    def compact_now(self, view: Sequence[Message], cancel: CancelToken) -> CompactedView | None:
        return None


def _live_tools(workspace: Path, mode: ApprovalMode, manager: ProcessManager) -> LiveTools:
    """The tools that touch only the workspace, for real, with the calls its folder's
    policy allows in `mode` without asking. Sub-agents, questions, skills and MCP tools
    are not run again: their recorded results stand."""
    from codecoder.permissions.chain import RulePolicy
    from codecoder.tools.files import EditFile, ListDir, ReadFile, WriteFile
    from codecoder.tools.ledger import ReadLedger
    from codecoder.tools.search import Glob, Grep
    from codecoder.tools.shell import RunCommand

    policy = RulePolicy.load(workspace, mode)
    reads = ReadLedger()
    local: list[Tool] = [
        ReadFile(reads), WriteFile(reads), EditFile(reads), ListDir(), Glob(), Grep(),
        RunCommand(manager),
    ]  # fmt: skip
    tools = {tool.name: tool for tool in local}

    def may_run(tool: Tool, call: ToolCall) -> bool:
        return policy.decide(tool, call).verdict == "allow"

    return LiveTools(tools, may_run)
