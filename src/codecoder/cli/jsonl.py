"""The lines of `exec --json` (schema `codecoder.exec/1`, docs/headless.md): one struct
per line type, and the one function that turns a kernel event into its line.

The kernel's events are the vocabulary; these are the wire. They differ where a reader
of the stream is better served: `tool_finished` puts `status`, `content` (the result's
text) and `error` side by side instead of nesting a ToolResult, a question carries its
reply as `request_id`, every line but `session` carries the `turn` it belongs to, and a
sub-agent's line nests its event without one. docs/headless.md lists every type and its
fields; tests/cli/test_jsonl.py checks that table against these structs.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from codecoder.kernel import codec
from codecoder.kernel.events import (
    AgentEvent,
    AgentState,
    AskUser,
    Compacted,
    ConfirmRequest,
    Done,
    DoneReason,
    Error,
    NewReasoning,
    NewToken,
    NoticeSource,
    StatusUpdate,
    Steered,
    Subagent,
    TodoItem,
    TodoUpdated,
    ToolError,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    Usage,
)
from codecoder.kernel.messages import ToolCall
from codecoder.plan.events import (
    GateFinished,
    GateStarted,
    MilestoneFinished,
    MilestoneStarted,
    MilestoneStatus,
    PlanEvent,
    PlanFinished,
    PlanStatus,
)
from codecoder.terminal_text import json_escaped

SCHEMA = "codecoder.exec/1"


class _Line(msgspec.Struct, frozen=True, tag_field="type", omit_defaults=False):
    pass


class _Turned(_Line, frozen=True, kw_only=True):
    turn: int | None = None
    """The session's turn; None (left out) inside a `subagent` line."""


class SessionLine(_Line, frozen=True, tag="session"):
    schema: str
    session_id: str


class NewTokenLine(_Turned, frozen=True, tag="new_token"):
    text: str


class NewReasoningLine(_Turned, frozen=True, tag="new_reasoning"):
    text: str


class StatusUpdateLine(_Turned, frozen=True, tag="status_update"):
    status: AgentState
    detail: str
    notice: NoticeSource | None


class ToolStartedLine(_Turned, frozen=True, tag="tool_started"):
    id: str
    name: str
    args: dict[str, Any]


class ToolOutputLine(_Turned, frozen=True, tag="tool_output"):
    id: str
    chunk: str


class ToolFinishedLine(_Turned, frozen=True, tag="tool_finished"):
    id: str
    name: str
    status: str
    content: str
    error: ToolError | None


class ConfirmRequestLine(_Turned, frozen=True, tag="confirm_request"):
    request_id: str
    tool_call: ToolCall
    reason: str


class AskUserLine(_Turned, frozen=True, tag="ask_user"):
    request_id: str
    question: str
    options: tuple[str, ...]


class UsageLine(_Turned, frozen=True, tag="usage"):
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    cost: float | None


class CompactedLine(_Turned, frozen=True, tag="compacted"):
    before_tokens: int
    after_tokens: int


class TodoUpdatedLine(_Turned, frozen=True, tag="todo_updated"):
    items: tuple[TodoItem, ...]


class ErrorLine(_Turned, frozen=True, tag="error"):
    kind: str
    message: str


class SubagentLine(_Turned, frozen=True, tag="subagent"):
    agent_id: str
    event: EventLine


class SteeredLine(_Turned, frozen=True, tag="steered"):
    text: str
    next_turn: bool
    by: Literal["user", "hook"]


class DoneLine(_Turned, frozen=True, tag="done"):
    cancelled: bool
    reason: DoneReason


EventLine = (
    NewTokenLine
    | NewReasoningLine
    | StatusUpdateLine
    | ToolStartedLine
    | ToolOutputLine
    | ToolFinishedLine
    | ConfirmRequestLine
    | AskUserLine
    | UsageLine
    | CompactedLine
    | TodoUpdatedLine
    | ErrorLine
    | SubagentLine
    | SteeredLine
    | DoneLine
)


# --- plans (`exec --plan`, docs/plans.md): the runner's events, between the agent's ------


class MilestoneStartedLine(_Turned, frozen=True, tag="milestone_started"):
    milestone: str
    index: int
    attempt: int


class GateStartedLine(_Turned, frozen=True, tag="gate_started"):
    milestone: str
    index: int
    command: str


class GateFinishedLine(_Turned, frozen=True, tag="gate_finished"):
    milestone: str
    index: int
    command: str
    exit_code: int | None
    duration_ms: int
    output_tail: str


class MilestoneFinishedLine(_Turned, frozen=True, tag="milestone_finished"):
    milestone: str
    status: MilestoneStatus
    attempts: int


class PlanFinishedLine(_Turned, frozen=True, tag="plan_finished"):
    status: PlanStatus
    passed: int
    total: int


PlanLine = (
    MilestoneStartedLine
    | GateStartedLine
    | GateFinishedLine
    | MilestoneFinishedLine
    | PlanFinishedLine
)

_PLAN_LINES: dict[type, type[_Turned]] = {
    MilestoneStarted: MilestoneStartedLine,
    GateStarted: GateStartedLine,
    GateFinished: GateFinishedLine,
    MilestoneFinished: MilestoneFinishedLine,
    PlanFinished: PlanFinishedLine,
}
"""A plan event's line has its fields; its `turn` is the line's `turn`."""


def plan_line(event: PlanEvent) -> PlanLine:
    return _PLAN_LINES[type(event)](**msgspec.structs.asdict(event))  # type: ignore[return-value]


# --- `codecoder replay --json`: the replayed events, then what the replay found -------


class ReplayDivergence(msgspec.Struct, frozen=True):
    call_id: str
    tool: str
    recorded: str
    live: str


class ReplayLine(_Line, frozen=True, tag="replay"):
    session_id: str
    identical: bool
    summary: str
    turns: int
    messages: int
    divergence: ReplayDivergence | None
    not_rerun: list[str]


# --- `codecoder undo --json`: what an undo or redo restored, or why it did not ------


class UndoFile(msgspec.Struct, frozen=True):
    path: str
    action: str


class UndoConflict(msgspec.Struct, frozen=True):
    path: str
    why: str
    kind: str


class UndoLine(_Line, frozen=True, tag="undo"):
    direction: Literal["undo", "redo"]
    session_id: str
    turn: int
    done: bool
    dry_run: bool
    files: list[UndoFile]
    conflicts: list[UndoConflict]
    diff: str
    fork: str | None
    not_kept: list[UndoConflict]


def undo_line(report: Any) -> UndoLine:
    """The line of a checkpoints.restore.UndoReport (imported by its caller only)."""
    return UndoLine(
        report.direction,
        report.session_id,
        report.turn,
        report.done,
        report.dry_run,
        [UndoFile(f.path, f.action) for f in report.files],
        [UndoConflict(c.path, c.why, c.kind) for c in report.conflicts],
        report.diff,
        report.fork,
        [UndoConflict(c.path, c.why, c.kind) for c in report.not_kept],
    )


Line = SessionLine | EventLine | PlanLine | ReplayLine | UndoLine

LINE_TYPES: tuple[type[_Line], ...] = (
    SessionLine,
    *EventLine.__args__,  # type: ignore[attr-defined]
    *PlanLine.__args__,  # type: ignore[attr-defined]
    ReplayLine,
    UndoLine,
)


_SAME_FIELDS: dict[type, type[_Turned]] = {
    NewToken: NewTokenLine,
    NewReasoning: NewReasoningLine,
    StatusUpdate: StatusUpdateLine,
    ToolStarted: ToolStartedLine,
    ToolOutput: ToolOutputLine,
    Usage: UsageLine,
    Compacted: CompactedLine,
    TodoUpdated: TodoUpdatedLine,
    Error: ErrorLine,
    Done: DoneLine,
    Steered: SteeredLine,
}
"""Events whose line has exactly their fields (and `turn`)."""


def line_for(event: AgentEvent, turn: int | None) -> EventLine:
    """The line of a kernel event (`turn` None inside a sub-agent's line)."""
    same = _SAME_FIELDS.get(type(event))
    if same is not None:
        return same(**msgspec.structs.asdict(event), turn=turn)  # type: ignore[return-value]
    match event:
        case ToolFinished():
            content = event.result.text if event.result is not None else ""
            return ToolFinishedLine(
                event.id, event.name, event.status, content, event.error, turn=turn
            )
        case ConfirmRequest(tool_call=call, reason=reason, reply=reply):
            return ConfirmRequestLine(reply.request_id, call, reason, turn=turn)
        case AskUser(question=question, options=options, reply=reply):
            return AskUserLine(reply.request_id, question, options, turn=turn)
        case Subagent(agent_id=agent_id, event=inner):
            return SubagentLine(agent_id, line_for(inner, None), turn=turn)
    raise TypeError(f"no exec --json line for {type(event).__name__}")


def encode(line: Line) -> bytes:
    """The line as JSON and its newline; a nested line leaves out its `turn`. The lines
    often go to a terminal: what one would obey is escaped (the values stay the same)."""
    record = codec.to_builtins(line)
    if isinstance(line, SubagentLine):
        record["event"].pop("turn", None)
    return json_escaped(codec.encode(record)) + b"\n"
