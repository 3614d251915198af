"""The protocols the kernel needs, and the values that cross them (DESIGN.md §4, §5).

Providers implement ProviderClient; tools implement Tool; permissions implement
PermissionPolicy; the session store implements HistorySink; prompt assembly implements
PromptSource. The kernel imports none of those implementations (invariant 7).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import (
    AgentEvent,
    AskUser,
    StatusUpdate,
    ToolError,
    ToolErrorKind,
    ToolOutput,
    Usage,
)
from codecoder.kernel.messages import Message, ToolCall, ToolResult
from codecoder.kernel.oneshot import Oneshot

# --- provider side -------------------------------------------------------------------


class TextDelta(msgspec.Struct, frozen=True, tag="text_delta", tag_field="type"):
    text: str


class ReasoningDelta(msgspec.Struct, frozen=True, tag="reasoning_delta", tag_field="type"):
    text: str


class ReasoningDone(msgspec.Struct, frozen=True, tag="reasoning_done", tag_field="type"):
    """Closes the current reasoning block; `token` is the opaque proof to send back."""

    token: str | None = None


class ToolCallDone(msgspec.Struct, frozen=True, tag="tool_call_done", tag_field="type"):
    """A complete tool call; `raw_args` is the model's argument text, parsed by the kernel."""

    id: str
    name: str
    raw_args: str


class Stop(msgspec.Struct, frozen=True, tag="stop", tag_field="type"):
    """The reply ended normally (`end_turn`, `tool_use`, `max_tokens`, …)."""

    reason: str


StreamEvent = (
    TextDelta | ReasoningDelta | ReasoningDone | ToolCallDone | Usage | StatusUpdate | Stop
)
"""What a provider yields. Usage and StatusUpdate (a retry, a wait) are passed on to the
client as they are; the rest is folded into the assistant message by the loop."""

RequestPurpose = Literal["turn", "compaction"]


class ToolSpec(msgspec.Struct, frozen=True):
    name: str
    description: str
    parameters: dict[str, Any]


class ProviderRequest(msgspec.Struct, frozen=True):
    """Everything a provider needs for one model call; wire formats are the adapter's."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    purpose: RequestPurpose = "turn"


ProviderErrorKind = Literal[
    "auth",
    "rate_limit",
    "overloaded",
    "server",
    "network",
    "bad_response",
    "context_length",
    "bad_request",
    "script_exhausted",
    "config",
    "reply_too_long",
]


class ProviderError(Exception):
    """The one error type a provider raises. `message` is one line fit for the user;
    `retryable` says whether nothing of the reply reached us and a retry may help."""

    def __init__(self, kind: ProviderErrorKind, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.kind: ProviderErrorKind = kind
        self.message = message
        self.retryable = retryable


@runtime_checkable
class ProviderClient(Protocol):
    """Streams one model reply. Must return promptly once `cancel` flips (close the
    connection from the cancel callback); raises ProviderError on failure."""

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]: ...


# --- tool side -----------------------------------------------------------------------

Risk = Literal["read", "write", "execute", "network"]


class ToolFailure(Exception):
    """Raised by a tool that could not run; becomes ToolFinished{error}."""

    def __init__(self, kind: ToolErrorKind, message: str) -> None:
        super().__init__(message)
        self.error = ToolError(kind=kind, message=message)


class ToolContext(msgspec.Struct):
    """What a running tool may use: its call id, the turn's CancelToken, the workspace,
    a sink for live events (ToolOutput, nested sub-agent events) and the question path."""

    call_id: str
    cancel: CancelToken
    workspace: Path
    emit: Callable[[AgentEvent], None]
    extra_roots: tuple[Path, ...] = ()
    replied: Callable[[Oneshot[Any], object], None] | None = None
    """Told each answer to a question the tool asked (the loop traces it)."""

    def output(self, chunk: str) -> None:
        self.emit(ToolOutput(id=self.call_id, chunk=chunk))

    def ask_user(self, question: str, options: tuple[str, ...] = ()) -> str:
        """Ask through the reply oneshot; raises Cancelled if the turn is cancelled."""
        reply: Oneshot[str] = Oneshot()
        self.emit(StatusUpdate("waiting_for_user"))
        self.emit(AskUser(question=question, options=options, reply=reply))
        answer = reply.recv(cancel=self.cancel)
        if self.replied is not None:
            self.replied(reply, answer)
        self.emit(StatusUpdate("running_tool"))
        return answer


@runtime_checkable
class Tool(Protocol):
    """A tool the model may call. `validate` turns what the model sent into the
    arguments `run` reads; `run` raises ToolFailure when it cannot run and returns a
    ToolResult when it ran."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def risk(self) -> Risk: ...
    @property
    def parameters(self) -> dict[str, Any]: ...

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments as `run` will read them (other agents' names for a field
        renamed, numbers given as text made numbers), or ToolFailure("invalid_args")
        saying what the tool takes. The loop calls it before the permission policy, so
        the policy judges what will run; it must not touch anything."""
        ...

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


@runtime_checkable
class ToolSource(Protocol):
    """Tools that arrive during a session (an MCP server's, once it has started), beside
    the fixed toolbox. The loop asks before each request, so a reply can call only what
    its request offered; neither method may block."""

    def tools(self) -> Sequence[Tool]:
        """The tools to offer now: the same object while nothing changed, so the loop
        rebuilds its specs only when this returns something new. Asked last while a
        request is built (after the system prompt)."""
        ...

    def notices(self) -> Sequence[StatusUpdate]:
        """Status lines not shown yet (a server that failed to start), each given once;
        the loop emits them before a request and before a turn's Done."""
        ...


# --- policy, history, prompt ---------------------------------------------------------

Verdict = Literal["allow", "ask", "deny"]


DecisionLevel = Literal["", "mode", "refusal", "session", "project", "user", "default"]
"""The level of the chain that decided: the approval mode itself, a "deny, this session"
answer, a session grant, a project or user rule, or the built-in default."""


class Decision(msgspec.Struct, frozen=True):
    """A policy's verdict on a call, with what the trace shows of why: the deciding `rule`
    as written (empty when no rule decided), its `level`, and the `parts` the call was
    read as (one line each, as questions show them: "edit_file: write /w/a.py")."""

    verdict: Verdict
    reason: str = ""
    rule: str = ""
    level: DecisionLevel = ""
    parts: tuple[str, ...] = ()


@runtime_checkable
class PermissionPolicy(Protocol):
    """Decides each tool call; `remember` records an "always" answer, `forbid` a "deny,
    this session" one."""

    def decide(self, tool: Tool, call: ToolCall) -> Decision: ...
    def remember(
        self, tool: Tool, call: ToolCall, scope: Literal["session", "project"]
    ) -> None: ...
    def forbid(self, tool: Tool, call: ToolCall) -> None: ...


@runtime_checkable
class HistorySink(Protocol):
    """Receives every completed message before the next provider request (invariant 6).

    Raises:
        HistoryUnavailable: the message cannot be kept (a full disk, a read-only store).
    """

    def append(self, message: Message) -> None: ...


class HistoryUnavailable(Exception):
    """A HistorySink (or the record beside it) cannot keep what it is given: the turn
    ends with an `Error` of kind `store` whose message is this exception's, one line fit
    for the user; what was committed before stays committed."""


@runtime_checkable
class DraftSink(Protocol):
    """A history sink that keeps the reply being streamed, so that a crash, which runs no
    cleanup, still leaves it as an interrupted message (invariant 6: what a crash loses
    is at most the message being streamed, and of that only its last moments). `draft`
    is called at most every DRAFT_EVERY seconds while a reply streams, each time with the
    whole reply so far under the id it will be appended with; that `append` replaces it."""

    def draft(self, message: Message) -> None: ...


@runtime_checkable
class PromptSource(Protocol):
    """The system prompt for the next request (assembled fresh or cached by the source)."""

    def system_prompt(self) -> str: ...


@runtime_checkable
class StopGate(Protocol):
    """Asked when the model ends a turn (a reply without tool calls): None lets it end;
    a text continues the turn with that text as the next user message (a `stop` hook
    that blocked, with its reason)."""

    def stop(self, view: Sequence[Message], cancel: CancelToken) -> str | None: ...


class PromptVerdict(msgspec.Struct, frozen=True):
    """A prompt gate's answer: `context` joins the turn as a user message after the
    prompt (empty: nothing); `blocked` ends the turn before any request, with that
    reason (None: the turn goes on)."""

    context: str = ""
    blocked: str | None = None


@runtime_checkable
class PromptGate(Protocol):
    """Asked when a turn begins, its message committed and last in `view`, before the
    first request (the `session_start` and `user_prompt` hooks)."""

    def prompt(self, view: Sequence[Message], cancel: CancelToken) -> PromptVerdict: ...


# --- compaction ----------------------------------------------------------------------


class CompactedView(msgspec.Struct, frozen=True):
    """A prepared compaction: the model's new view is `summary` followed by every message
    of the current view from `first_kept_id` on (tool pairs kept whole). Nothing is
    deleted: the store keeps the full history."""

    summary: Message
    first_kept_id: int
    before_tokens: int
    after_tokens: int


@runtime_checkable
class Compactor(Protocol):
    """Follows token use and prepares summaries off the agent thread. The loop swaps
    its view only at a round boundary, so a turn never sees its history change mid-way."""

    def observe(self, view: Sequence[Message], usage: Usage | None) -> None:
        """After each request: the view that was sent and what the provider reported."""
        ...

    def ready(self) -> CompactedView | None:
        """A prepared compaction to apply now, if one is waiting."""
        ...

    def compact_now(self, view: Sequence[Message], cancel: CancelToken) -> CompactedView | None:
        """Prepare a compaction and wait for it (`/compact`, or a context-length error);
        None when there is nothing old enough to summarise."""
        ...


@runtime_checkable
class CompactionSink(Protocol):
    """A history sink that also records compactions (so a resumed session starts from
    the compacted view)."""

    def record_compaction(self, view: CompactedView) -> None: ...
