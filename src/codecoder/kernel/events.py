"""The event channel's vocabulary: every token and every state change (seed §3.6).

High traffic flows here (one NewToken per streamed chunk), so the values are small frozen
structs. Begin/end events pair by tool-call id: every ToolStarted(id) is followed by
exactly one ToolFinished(id) before the turn's single Done (invariants 1 and 2).
Question events carry their reply oneshot, which serialises as `request_id`.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from codecoder.kernel.messages import ToolCall, ToolResult
from codecoder.kernel.oneshot import Oneshot

DoneReason = Literal["completed", "cancelled", "max_rounds", "error", "shutdown"]
Decision = Literal["allow_once", "allow_session", "allow_project", "deny", "deny_session"]
"""`deny_session`: deny, and deny the same call again without asking for the session."""
ToolErrorKind = Literal["denied", "invalid_args", "unknown_tool", "crashed", "timeout"]


class ToolError(msgspec.Struct, frozen=True):
    """The tool could not run (denied, bad arguments, unknown, crashed). Distinct from a
    ToolResult with status error, where the tool ran and reported failure; both are fed
    back to the model so it can recover."""

    kind: ToolErrorKind
    message: str


class ConfirmReply(msgspec.Struct, frozen=True):
    """The user's answer to a ConfirmRequest; `message` goes to the model on deny.
    `by_person` False: nobody answered (a headless run, a timeout, a dismissed question),
    so the model is not told that the user denied the call."""

    decision: Decision
    message: str | None = None
    by_person: bool = True


class NewToken(msgspec.Struct, frozen=True, tag="new_token", tag_field="type"):
    text: str


class NewReasoning(msgspec.Struct, frozen=True, tag="new_reasoning", tag_field="type"):
    text: str


class ToolStarted(msgspec.Struct, frozen=True, tag="tool_started", tag_field="type"):
    id: str
    name: str
    args: dict[str, Any]


class ToolOutput(msgspec.Struct, frozen=True, tag="tool_output", tag_field="type"):
    """Live output of a long-running tool; the result keeps only a head and a tail."""

    id: str
    chunk: str


class ToolFinished(msgspec.Struct, frozen=True, tag="tool_finished", tag_field="type"):
    """Exactly one of `result` and `error` is set."""

    id: str
    name: str
    result: ToolResult | None = None
    error: ToolError | None = None

    @property
    def status(self) -> Literal["success", "error", "cancelled"]:
        return self.result.status if self.result is not None else "error"


AgentState = Literal[
    "idle",
    "thinking",
    "streaming",
    "waiting_for_approval",
    "waiting_for_user",
    "running_tool",
    "compacting",
    "retrying",
]
"""What the agent is doing. A closed set, so that a client can show each state its own way
and know it has seen them all; what varies goes into `detail`."""

NoticeSource = Literal[
    "sandbox", "mcp", "hook", "checkpoint", "compact", "max_tokens", "permissions"
]
"""Who says something worth a line while the agent works: full-auto without its sandbox, an
MCP server that failed, a hook's warning, a checkpoint not kept, a /compact with nothing to
do, a reply cut at its token limit, a permission rule that could not be saved or a
project's allow rules not applied (not approved as they are)."""


class StatusUpdate(msgspec.Struct, frozen=True, tag="status_update", tag_field="type"):
    """The agent's state changed to `status` (`detail`: the tool's name, the retry's wait,
    why it compacts). With `notice` set, the state has not changed: `detail` is a warning
    from that source, said while the agent is in `status`. One event for both, so that a
    consumer reading statuses never misses a warning, and one reading warnings needs no
    second stream."""

    status: AgentState
    detail: str = ""
    notice: NoticeSource | None = None


class AskUser(
    msgspec.Struct, frozen=True, tag="ask_user", tag_field="type", rename={"reply": "request_id"}
):
    """The model asks the user a question; the answer (a string) goes into `reply`."""

    question: str
    options: tuple[str, ...]
    reply: Oneshot[str]


class ConfirmRequest(
    msgspec.Struct,
    frozen=True,
    tag="confirm_request",
    tag_field="type",
    rename={"reply": "request_id"},
):
    """A tool call needs the user's permission; a ConfirmReply goes into `reply`."""

    tool_call: ToolCall
    reason: str
    reply: Oneshot[ConfirmReply]


class Usage(msgspec.Struct, frozen=True, tag="usage", tag_field="type"):
    """Tokens of one provider request (and its cost when the price is known)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float | None = None


class Compacted(msgspec.Struct, frozen=True, tag="compacted", tag_field="type"):
    before_tokens: int
    after_tokens: int


class Error(msgspec.Struct, frozen=True, tag="error", tag_field="type"):
    """A failure that ends the turn, with a one-line message fit for the user."""

    kind: str
    message: str


class Done(msgspec.Struct, frozen=True, tag="done", tag_field="type"):
    """The last event of every turn, exactly once."""

    cancelled: bool
    reason: DoneReason


class Steered(msgspec.Struct, frozen=True, tag="steered", tag_field="type"):
    """A message joined the running turn (`next_turn`: it came too late and is the next
    turn's message instead); `by`: `user` (a Steer) or `hook` (a stop hook said go on)."""

    text: str
    next_turn: bool = False
    by: Literal["user", "hook"] = "user"


class Subagent(msgspec.Struct, frozen=True, tag="subagent", tag_field="type"):
    """An event of a sub-agent, wrapped with its id on the parent's channel."""

    agent_id: str
    event: AgentEvent


class TodoItem(msgspec.Struct, frozen=True):
    content: str
    status: Literal["pending", "in_progress", "done"] = "pending"


class TodoUpdated(msgspec.Struct, frozen=True, tag="todo_updated", tag_field="type"):
    """The model's checklist changed (todo_write); clients render it."""

    items: tuple[TodoItem, ...]


AgentEvent = (
    NewToken
    | NewReasoning
    | ToolStarted
    | ToolOutput
    | ToolFinished
    | StatusUpdate
    | AskUser
    | ConfirmRequest
    | Usage
    | Compacted
    | Error
    | Done
    | Subagent
    | TodoUpdated
    | Steered
)
