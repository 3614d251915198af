"""What the store keeps besides the messages themselves, and how a message is cut to size.

Tool output is capped on the way in: the client saw the full stream live, and a session
file that grows by megabytes per `cat` makes resume hang (Codex users report session
files of 500 MB and more). The model's later view is the capped text, cut in the middle
with a note saying so.

A model's reply is capped by the kernel as it streams (kernel/reply.py): its text and
reasoning at MAX_REPLY_TEXT, its arguments at MAX_REPLY_ARGS. The store holds every
message it is given to the same caps, so what it keeps is bounded whoever wrote it.
"""

from __future__ import annotations

import msgspec

from codecoder.kernel.messages import (
    Message,
    MessageItem,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
)
from codecoder.kernel.reply import MAX_REPLY_ARGS, MAX_REPLY_TEXT

TOOL_OUTPUT_CAP = 64 * 1024
"""Characters of one ToolResult kept in the store; the rest is cut from the middle."""

TITLE_CAP = 80


class SessionInfo(msgspec.Struct, frozen=True):
    """One row of the sessions table. `fork_message_id` is the last message copied from
    `parent_id`; `cost` is None while no request had a known price."""

    id: str
    cwd: str
    model: str
    title: str | None
    created_at: float
    updated_at: float
    parent_id: str | None
    fork_message_id: int | None
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    cost: float | None
    turns: int
    message_count: int


SESSION_COLUMNS = ", ".join(SessionInfo.__struct_fields__)


class CheckpointRow(msgspec.Struct, frozen=True):
    """One row of the checkpoints table: the files turn `turn` changed, as JSON
    (checkpoints/record.py reads it), in the object store `store`; `state` is `done` or
    `undone`; `changed_at` when that last changed."""

    id: int
    session_id: str
    turn: int
    message_id: int | None
    workspace: str
    store: str
    files: bytes
    state: str
    created_at: float
    changed_at: float


CHECKPOINT_COLUMNS = ", ".join(CheckpointRow.__struct_fields__)


def title_of(message: Message) -> str | None:
    """A session's title: the first non-blank line of its first user message, capped."""
    if message.role != "user":
        return None
    for raw in message.text.splitlines():
        line = raw.strip()
        if line:
            return line if len(line) <= TITLE_CAP else line[: TITLE_CAP - 1] + "…"
    return None


def cap_result(result: ToolResult, limit: int = TOOL_OUTPUT_CAP) -> ToolResult:
    """The result with its text cut from the middle when longer than `limit` characters.

    Head and tail are kept because both matter: a command's first lines say what ran, its
    last lines say how it ended.
    """
    text = result.text
    if len(text) <= limit:
        return result
    half = limit // 2
    cut = len(text) - 2 * half
    note = f"\n[… {cut} characters cut from the middle when the session was stored …]\n"
    capped = text[:half] + note + text[-half:]
    return msgspec.structs.replace(result, content=(Text(capped),))


def cap_message(message: Message, limit: int = TOOL_OUTPUT_CAP) -> Message:
    """The message with every ToolResult capped at `limit`, and its text, reasoning and
    unparsed arguments at the kernel's reply caps (cut at the end, as the loop cuts a
    reply that ran on: no real message comes near them, a model's reply never passes them,
    and a message of any role that did would not fit a context window); the same object
    when nothing is cut."""
    if not any(_too_long(item, limit) for item in message.items):
        return message
    return msgspec.structs.replace(
        message, items=tuple(_cap(item, limit) for item in message.items)
    )


def _cap(item: MessageItem, limit: int) -> MessageItem:
    if isinstance(item, ToolResult):
        return cap_result(item, limit)
    if isinstance(item, Text) and len(item.text) > MAX_REPLY_TEXT:
        return Text(_cut_end(item.text, MAX_REPLY_TEXT))
    if isinstance(item, Reasoning) and len(item.text) > MAX_REPLY_TEXT:
        return msgspec.structs.replace(item, text=_cut_end(item.text, MAX_REPLY_TEXT))
    raw = item.raw_args if isinstance(item, ToolCall) else None
    if raw is not None and len(raw) > MAX_REPLY_ARGS:
        return msgspec.structs.replace(item, raw_args=_cut_end(raw, MAX_REPLY_ARGS))
    return item


def _cut_end(text: str, limit: int) -> str:
    return (
        text[:limit] + f"\n[… {len(text) - limit:,} characters cut when the session was stored …]"
    )


def _too_long(item: object, limit: int) -> bool:
    if isinstance(item, ToolResult):
        return sum(len(part.text) for part in item.content) > limit
    if isinstance(item, Text | Reasoning):
        return len(item.text) > MAX_REPLY_TEXT
    if isinstance(item, ToolCall):
        return item.raw_args is not None and len(item.raw_args) > MAX_REPLY_ARGS
    return False


class MilestoneRecord(msgspec.Struct, frozen=True):
    """One milestone of a plan run: `status` pending | running | passed | failed |
    cancelled; `attempts` the turns it took over all runs."""

    name: str
    position: int
    status: str
    attempts: int


class PlanRunInfo(msgspec.Struct, frozen=True):
    """One run of a plan file in a workspace (`codecoder exec --plan`); a `--continue`
    goes on with the same run. `status`: running | passed | failed | cancelled (running
    also when the process was killed mid-plan)."""

    id: str
    session_id: str
    cwd: str
    plan_path: str
    digest: str
    status: str
    created_at: float
    updated_at: float
    milestones: tuple[MilestoneRecord, ...] = ()

    @property
    def passed(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.milestones if m.status == "passed")


PLAN_RUN_COLUMNS = "id, session_id, cwd, plan_path, digest, status, created_at, updated_at"
