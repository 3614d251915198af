"""Record and replay: every input of the loop that the loop does not decide itself.

Given the same inputs, the loop does the same thing: the same history, the same events.
Its inputs are what the provider streamed (as the pump took it: text that arrived in a
burst comes out as one NewToken, so the record keeps the chunks as taken, not as sent),
the tools' reading of the arguments, the policy's verdicts, people's answers, tool
results with the events the tools emitted, the compactions swapped in, and the moments
the loop found its CancelToken flipped. A journal sits at each of those points:

- `Journal` passes them through and keeps nothing (sub-agents, `[record] enabled = false`).
- `Recorder` passes them through and writes each down, as little as the history allows:
  text as chunk lengths (the words are in the assistant message), a tool call by its id
  (its arguments are in the message), a tool result by the id of the message holding it,
  an allowed call not at all. Each turn ends with a digest of its events, so a replay can
  tell whether it produced the same ones.
- `Replayer` answers every point from a record instead, on the loop thread, so the loop's
  own code runs the same way again: no provider, no person, no tool (unless `live` says
  which tools may run again, and their results are compared with the record's).

A record is a list of entries (tagged structs) in the order the loop consumed them; the
sink gets them as JSON with the message they precede, in the same transaction.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

from codecoder.kernel import codec
from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.kernel.channel import live_output
from codecoder.kernel.events import (
    AgentEvent,
    AskUser,
    ConfirmReply,
    ConfirmRequest,
    Done,
    DoneReason,
    NewReasoning,
    NewToken,
    StatusUpdate,
    Subagent,
    ToolError,
    ToolFinished,
    ToolOutput,
    Usage,
)
from codecoder.kernel.messages import (
    Message,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    same_args,
    user_message,
)
from codecoder.kernel.oneshot import Oneshot
from codecoder.kernel.ports import (
    CompactedView,
    Compactor,
    Decision,
    PermissionPolicy,
    PromptGate,
    PromptVerdict,
    ProviderError,
    ProviderErrorKind,
    ReasoningDelta,
    ReasoningDone,
    Stop,
    StopGate,
    TextDelta,
    Tool,
    ToolCallDone,
    ToolContext,
    ToolFailure,
    ToolSource,
    Verdict,
)

END = object()
"""The stream's normal end, as the loop's stream queue carries it."""
CANCELLED = object()
"""Put on the stream queue by the token's callback: the loop stops taking."""

OUTPUT_BUDGET = 256 * 1024
"""Characters of one call's live output the record keeps when they are not in its result
(the result is the history's); past it, only the chunks' lengths."""
OUTPUT_HOLD = 1024 * 1024
"""Characters of one call's live output a Recorder holds while the call runs: which of
them its result holds is known only at the end. Past it, or past OUTPUT_HOLD_CHUNKS
chunks, the rest is only counted (Unrecorded), so a command that prints 1 GB costs the
recorder what one that prints 1 MB does."""
OUTPUT_HOLD_CHUNKS = 16 * 1024
"""Chunks held at most (a line-at-a-time printer's chunks cost more than their text)."""

# --- entries ---------------------------------------------------------------------------


class _Entry(msgspec.Struct, frozen=True, tag_field="type", omit_defaults=True):
    """What entries share: a `type` tag, and defaults left out of the JSON."""


class Start(_Entry, frozen=True, tag="start"):
    """A loop came up: what a replay must build the same (its view: ids of stored
    messages, or the message itself when it is not one, like a compaction's summary)."""

    tools: tuple[str, ...]
    first_turn: int
    next_id: int
    max_rounds: int
    view: tuple[int | Message, ...]
    policy: bool
    compactor: bool
    source: bool
    stop_gate: bool = False
    prompt_gate: bool = False


class Turn(_Entry, frozen=True, tag="turn"):
    """A ProcessMessage was taken: turn `turn`, its message committed as `message`."""

    turn: int
    message: int


class CompactCommand(_Entry, frozen=True, tag="compact"):
    """A Compact command was taken."""


class ReasoningMark(_Entry, frozen=True, tag="reasoning_done"):
    """ReasoningDone; `token`: it carried one (the next token of the message's Reasoning)."""

    token: bool


class CallMark(_Entry, frozen=True, tag="tool_call_done"):
    """ToolCallDone; its name and arguments are the message's ToolCall with this id."""

    id: str


class Used(_Entry, frozen=True, tag="usage"):
    """Usage, in short."""

    i: int = 0
    o: int = 0
    c: int = 0
    r: int = 0
    cost: float | None = None


class Failed(_Entry, frozen=True, tag="failed"):
    kind: ProviderErrorKind
    message: str
    retryable: bool


class Crashed(_Entry, frozen=True, tag="crashed"):
    """An exception that was not a ProviderError, by its repr (what the user saw)."""

    repr: str


class Cancel(_Entry, frozen=True, tag="cancel"):
    """The loop found its token flipped, here."""

    reason: str


StreamItem = (
    int  # a text chunk of that many characters
    | list[int]  # [n]: a reasoning chunk
    | str  # "end"
    | ReasoningMark
    | CallMark
    | Used
    | StatusUpdate
    | Stop
    | Failed
    | Crashed
    | Cancel
)


class Stream(_Entry, frozen=True, tag="stream"):
    """One reply as the pump took it; `message`: the assistant message it built (0: none)."""

    message: int
    items: list[StreamItem]


class Ready(_Entry, frozen=True, tag="ready"):
    """A prepared compaction swapped in at a round boundary."""

    view: CompactedView


class CompactNow(_Entry, frozen=True, tag="compact_now"):
    view: CompactedView | None


class Checked(_Entry, frozen=True, tag="checked"):
    """A tool's validation of a call's arguments that changed them (`args`: what the
    loop went on with), refused them (`error`) or crashed (its repr); arguments taken
    as they were leave no entry."""

    call: str
    args: dict[str, Any] | None = None
    error: ToolError | None = None
    crashed: str | None = None


class Decided(_Entry, frozen=True, tag="decided"):
    """A verdict other than allow (allowed calls leave no entry); `crashed`: the policy
    raised, with its repr."""

    call: str
    verdict: Verdict
    reason: str
    crashed: str | None = None


class Answered(_Entry, frozen=True, tag="answered"):
    """A person's answer to a ConfirmRequest (`cancelled`: the turn was cancelled first)."""

    answer: ConfirmReply | None
    by: str
    cancelled: str | None = None


class NotRemembered(_Entry, frozen=True, tag="not_remembered"):
    error: str


class OutputRef(_Entry, frozen=True, tag="output_ref"):
    """A ToolOutput whose chunk is the next `n` characters of the call's stored result
    (`kept`: False when its text was past OUTPUT_BUDGET and is lost)."""

    n: int
    kept: bool = True


class Unrecorded(_Entry, frozen=True, tag="unrecorded"):
    """A run of `chunks` ToolOutput events of call `id`, `chars` characters in all, past
    OUTPUT_HOLD: neither their text nor their lengths are kept. `agents`: the sub-agents
    whose call printed them, outermost first. A replay emits one event in their place
    (`replayed`), and the recorder digests that event, not the run."""

    id: str
    chunks: int
    chars: int
    agents: tuple[str, ...] = ()

    def replayed(self) -> AgentEvent:
        note = f"[… {self.chars:,} characters in {self.chunks:,} chunks not recorded …]\n"
        event: AgentEvent = ToolOutput(self.id, note)
        for agent in reversed(self.agents):
            event = Subagent(agent, event)
        return event


Emitted = AgentEvent | OutputRef | Unrecorded


class ToolRan(_Entry, frozen=True, tag="tool"):
    """A tool ran: its result is message `result`'s, unless it failed (`error`) or
    crashed (`crashed`, the exception's repr); `events` it emitted, in order."""

    call: str
    result: int
    events: list[Emitted]
    error: ToolError | None = None
    crashed: str | None = None


class Offered(_Entry, frozen=True, tag="offered"):
    """The tool source offered a new set of tools (by name)."""

    tools: tuple[str, ...]


class Notices(_Entry, frozen=True, tag="notices"):
    """Status lines the tool source gave."""

    notices: tuple[StatusUpdate, ...]


class Steers(_Entry, frozen=True, tag="steers"):
    """Steers the loop took at a round boundary, or (`next_turn`) turned into the next
    turn's message when its turn ended first."""

    texts: tuple[str, ...]
    next_turn: bool = False


class Stopped(_Entry, frozen=True, tag="stopped"):
    """The stop gate's answer when the model ended the turn (None: let it end)."""

    more: str | None = None


class Prompted(_Entry, frozen=True, tag="prompted"):
    """The prompt gate's answer when the turn began."""

    context: str = ""
    blocked: str | None = None


class Closing(_Entry, frozen=True, tag="closing"):
    """The agent was shutting down when the cancelled turn ended."""


class End(_Entry, frozen=True, tag="end"):
    """A turn's Done: how many events the turn had, a digest of them all, and a 16-bit
    mark of each event but tokens (base64), to point at the first that differs."""

    turn: int
    reason: DoneReason
    events: int
    digest: str
    marks: str


Entry = (
    Start
    | Turn
    | CompactCommand
    | Stream
    | Ready
    | CompactNow
    | Checked
    | Decided
    | Answered
    | NotRemembered
    | ToolRan
    | Offered
    | Notices
    | Steers
    | Stopped
    | Prompted
    | Cancel
    | Closing
    | End
)

_entries = msgspec.json.Encoder(enc_hook=codec.enc_hook)


def encode_entries(entries: Sequence[Entry]) -> bytes:
    """One record row: JSON, deflated when that halves it (tool events, summaries)."""
    body = _entries.encode(entries)
    if len(body) > 1024:
        packed = zlib.compress(body, 6)
        if len(packed) * 2 < len(body):
            return packed
    return body


def decode_entries(body: bytes) -> list[Entry]:
    if body[:1] not in (b"[", b" "):
        body = zlib.decompress(body)
    return codec.decode(body, list[Entry])  # type: ignore[arg-type]


@runtime_checkable
class RecordSink(Protocol):
    """Where a Recorder's entries go (the session store). `record(body, now=False)` keeps
    them for the next message appended, to be written in its transaction; `now=True`
    writes them at once (a turn's end)."""

    def record(self, body: bytes, *, now: bool) -> None: ...


class StreamSource(Protocol):
    """What the pump takes a reply from (a queue filled by a reader thread, or a record)."""

    def get(self) -> object: ...
    def empty(self) -> bool: ...
    def close(self) -> None: ...


# --- the pass-through journal ----------------------------------------------------------


class Journal:
    """The live inputs, nothing kept. The loop calls the `took_*` hooks only when
    `records` is set, and `emitted` only when `watches_events` is."""

    records = False
    watches_events = False

    def started(self, start: Start) -> None:
        return None

    def turn(self, turn: int, message_id: int) -> None:
        return None

    def compact_command(self) -> None:
        return None

    def cancelled(self, token: CancelToken) -> bool:
        return token.is_cancelled()

    def check(self, token: CancelToken) -> None:
        if self.cancelled(token):
            raise Cancelled(token.reason)

    def ready(self, compactor: Compactor | None) -> CompactedView | None:
        return compactor.ready() if compactor is not None else None

    def compact_now(
        self, compactor: Compactor, view: Sequence[Message], token: CancelToken
    ) -> CompactedView | None:
        return compactor.compact_now(view, token)

    def stream(self, open_live: Callable[[], StreamSource], token: CancelToken) -> StreamSource:
        return open_live()

    def took_text(self, length: int) -> None:
        return None

    def took(self, item: object, token: CancelToken) -> None:
        """A stream item the pump acts on: an event, END, an exception or CANCELLED."""
        return None

    def stream_kept(self, message_id: int) -> None:
        return None

    def validate(self, tool: Tool, call: ToolCall) -> dict[str, Any]:
        """The checked arguments; `call.args` itself when the check left them as they
        were, value and type (`same_args`), so the loop compares by identity."""
        args = tool.validate(call.args)
        return call.args if same_args(args, call.args) else args

    def decide(self, policy: PermissionPolicy, tool: Tool, call: ToolCall) -> Decision:
        return policy.decide(tool, call)

    def answer(self, reply: Oneshot[ConfirmReply], token: CancelToken) -> ConfirmReply:
        return reply.recv(cancel=token)

    def remember(
        self,
        policy: PermissionPolicy,
        tool: Tool,
        call: ToolCall,
        scope: Literal["session", "project"],
    ) -> str | None:
        """None when the answer was remembered, else why not."""
        try:
            policy.remember(tool, call, scope)
        except Exception as exc:  # the user allowed this call; saving the rule failed
            return str(exc)
        return None

    def forbid(self, policy: PermissionPolicy, tool: Tool, call: ToolCall) -> None:
        policy.forbid(tool, call)

    def source(self, source: ToolSource) -> ToolSource:
        """`source` as the loop should see it (a Recorder writes down what it offers)."""
        return source

    def run_tool(self, tool: Tool, call: ToolCall, ctx: ToolContext, result_id: int) -> ToolResult:
        return tool.run(call.args, ctx)

    def closing(self, closing: bool) -> bool:
        return closing

    def steers(self, taken: list[Message], *, next_turn: bool = False) -> list[Message]:
        """Steers taken at a boundary (or, `next_turn`, left for the next turn)."""
        return taken

    def stop(self, gate: StopGate, view: Sequence[Message], token: CancelToken) -> str | None:
        return gate.stop(view, token)

    def prompt(
        self, gate: PromptGate, view: Sequence[Message], token: CancelToken
    ) -> PromptVerdict:
        return gate.prompt(view, token)

    def emitted(self, event: AgentEvent) -> None:
        return None

    def committing(self) -> None:
        """Before a message is appended to history."""
        return None

    def ended(self, turn: int, done: Done | None) -> None:
        """After a turn's Done (None: after a Compact command)."""
        return None


LIVE = Journal()


# --- the event digest ------------------------------------------------------------------


class EventDigest:
    """What a turn's events were, in a form a replay can compare: every event encoded
    (question ids by their order in the turn, results as the store keeps them) into one
    running CRC-32 (a check against change, not against an adversary; 2 us an event where
    BLAKE2 took 4), and a 16-bit mark per event that is not a token."""

    def __init__(self, stored: Callable[[ToolResult], ToolResult], *, keep: bool = False) -> None:
        self._stored = stored
        self._keep = keep
        """Keep `events` (a replay names the first that differs; a recorder never looks)."""
        self.reset()

    def reset(self) -> None:
        self._crc = 0
        self.count = 0
        self._marks = bytearray()
        self._questions: dict[str, str] = {}
        self.events: list[AgentEvent] = []

    def add(self, event: AgentEvent) -> None:
        body = codec.encode(self._stable(event))
        self._crc = zlib.crc32(body, self._crc)
        self.count += 1
        if not isinstance(event, NewToken | NewReasoning):
            self._marks += (zlib.crc32(body) & 0xFFFF).to_bytes(2, "little")
            if self._keep:
                self.events.append(event)

    def end(self, turn: int, reason: DoneReason) -> End:
        import base64

        marks = base64.b64encode(bytes(self._marks)).decode()
        return End(turn, reason, self.count, f"{self._crc:08x}", marks)

    def _stable(self, event: AgentEvent) -> AgentEvent:
        if isinstance(event, ConfirmRequest | AskUser):
            ids = self._questions
            stable = ids.setdefault(event.reply.request_id, f"q{len(ids) + 1}")
            return msgspec.structs.replace(event, reply=Oneshot(stable))  # type: ignore[arg-type]
        if isinstance(event, ToolFinished) and event.result is not None:
            return msgspec.structs.replace(event, result=self._stored(event.result))
        if isinstance(event, ToolOutput):
            return ToolOutput(event.id, str(len(event.chunk)))  # its text may be lost
        if isinstance(event, Subagent):
            return Subagent(event.agent_id, self._stable(event.event))
        return event


def first_difference(recorded: End, replayed: End, events: Sequence[AgentEvent]) -> str:
    """Where two turns' events part, in one line (`events`: the replay's, tokens left
    out, in order)."""
    import base64

    if recorded.digest == replayed.digest:
        return ""
    ours = base64.b64decode(replayed.marks)
    theirs = base64.b64decode(recorded.marks)
    for index in range(0, min(len(ours), len(theirs)), 2):
        if ours[index : index + 2] != theirs[index : index + 2]:
            event = events[index // 2]
            return f"turn {replayed.turn}: {describe(event)} differs from the record's event"
    if len(ours) != len(theirs):
        return (
            f"turn {replayed.turn}: {len(ours) // 2} events besides tokens, "
            f"the record has {len(theirs) // 2}"
        )
    return f"turn {replayed.turn}: the streamed text differs ({replayed.events} events)"


def describe(event: AgentEvent) -> str:
    name = type(event).__name__
    if isinstance(event, Subagent):
        return f"{describe(event.event)} of sub-agent {event.agent_id}"
    ident = getattr(event, "id", None)
    tool = getattr(event, "name", None)
    if ident is not None and tool is not None:
        return f"{name} {ident} ({tool})"
    return name if ident is None else f"{name} {ident}"


# --- recording -------------------------------------------------------------------------


class _ToolRecording:
    """The events one call emitted, its output held up to OUTPUT_HOLD and then counted
    into Unrecorded runs as it arrives: what the recorder keeps of a call stays bounded
    however much it prints."""

    __slots__ = ("call", "chunks", "events", "full", "held", "run")

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.events: list[Emitted] = []
        self.held = 0
        self.chunks = 0
        self.full = False
        self.run: Unrecorded | None = None

    def take(self, event: AgentEvent) -> list[AgentEvent]:
        """Keep `event`; return what the digest sees for it: nothing while it joins a run
        of unrecorded output, the run's replayed event first when it ends one."""
        output = live_output(event)
        if output is not None:
            agents, chunk = output
            self.full = self.full or (
                self.held + len(chunk.chunk) > OUTPUT_HOLD or self.chunks >= OUTPUT_HOLD_CHUNKS
            )
            if self.full:
                run = self.run
                if run is not None and (run.id, run.agents) == (chunk.id, agents):
                    self.run = Unrecorded(
                        chunk.id, run.chunks + 1, run.chars + len(chunk.chunk), agents
                    )
                    return []
                ended = self.end_run()
                self.run = Unrecorded(chunk.id, 1, len(chunk.chunk), agents)
                return ended
            self.held += len(chunk.chunk)
            self.chunks += 1
        ended = self.end_run()
        self.events.append(event)
        return [*ended, event]

    def end_run(self) -> list[AgentEvent]:
        """Close the run being counted: its entry kept, its replayed event to digest."""
        run, self.run = self.run, None
        if run is None:
            return []
        self.events.append(run)
        return [run.replayed()]


class Recorder(Journal):
    """The live inputs, written down. `stored` gives a ToolResult as the store keeps it
    (capped), so that what the record points at is what a replay will find."""

    records = True
    watches_events = True

    def __init__(
        self, sink: RecordSink, stored: Callable[[ToolResult], ToolResult] = lambda r: r
    ) -> None:
        self._sink = sink
        self._stored = stored
        self._pending: list[Entry] = []
        self._items: list[StreamItem] | None = None
        self._tool: _ToolRecording | None = None
        self._lock = threading.Lock()
        self._digest = EventDigest(stored)
        self._seen_cancel = False

    def started(self, start: Start) -> None:
        self._pending.append(start)

    def turn(self, turn: int, message_id: int) -> None:
        self._pending.append(Turn(turn, message_id))

    def compact_command(self) -> None:
        self._pending.append(CompactCommand())

    def cancelled(self, token: CancelToken) -> bool:
        if not token.is_cancelled():
            return False
        self._note_cancel(token.reason)
        return True

    def _note_cancel(self, reason: str) -> None:
        if not self._seen_cancel:
            self._seen_cancel = True
            self._pending.append(Cancel(reason))

    def ready(self, compactor: Compactor | None) -> CompactedView | None:
        view = super().ready(compactor)
        if view is not None:
            self._pending.append(Ready(view))
        return view

    def compact_now(
        self, compactor: Compactor, view: Sequence[Message], token: CancelToken
    ) -> CompactedView | None:
        try:
            prepared = compactor.compact_now(view, token)
        except Cancelled as exc:
            self._note_cancel(str(exc) or token.reason)
            raise
        self._pending.append(CompactNow(prepared))
        return prepared

    def stream(self, open_live: Callable[[], StreamSource], token: CancelToken) -> StreamSource:
        self._items = []
        return open_live()

    def took_text(self, length: int) -> None:
        if self._items is not None:
            self._items.append(length)

    def took(self, item: object, token: CancelToken) -> None:
        items = self._items
        if items is None:
            return
        if item is END:
            items.append("end")
        elif item is CANCELLED or token.is_cancelled():
            self._seen_cancel = True
            items.append(Cancel(token.reason))
        elif isinstance(item, ReasoningDelta):
            items.append([len(item.text)])
        elif isinstance(item, ReasoningDone):
            items.append(ReasoningMark(item.token is not None))
        elif isinstance(item, ToolCallDone):
            items.append(CallMark(item.id))
        elif isinstance(item, Usage):
            u = item
            items.append(
                Used(u.input_tokens, u.output_tokens, u.cached_tokens, u.reasoning_tokens, u.cost)
            )
        elif isinstance(item, StatusUpdate | Stop):
            items.append(item)
        elif isinstance(item, ProviderError):
            items.append(Failed(item.kind, item.message, item.retryable))
        elif isinstance(item, BaseException):
            items.append(Crashed(repr(item)))

    def stream_kept(self, message_id: int) -> None:
        if self._items is not None:
            self._pending.append(Stream(message_id, self._items))
            self._items = None

    def validate(self, tool: Tool, call: ToolCall) -> dict[str, Any]:
        try:
            args = tool.validate(call.args)
        except ToolFailure as failure:
            self._pending.append(Checked(call.id, error=failure.error))
            raise
        except Exception as exc:
            self._pending.append(Checked(call.id, crashed=repr(exc)))
            raise
        if same_args(args, call.args):
            return call.args
        self._pending.append(Checked(call.id, args=args))
        return args

    def decide(self, policy: PermissionPolicy, tool: Tool, call: ToolCall) -> Decision:
        try:
            decision = policy.decide(tool, call)
        except Exception as exc:
            self._pending.append(Decided(call.id, "deny", "", crashed=repr(exc)))
            raise
        if decision.verdict != "allow":
            self._pending.append(Decided(call.id, decision.verdict, decision.reason))
        return decision

    def answer(self, reply: Oneshot[ConfirmReply], token: CancelToken) -> ConfirmReply:
        try:
            answer = reply.recv(cancel=token)
        except Cancelled:
            self._seen_cancel = True
            self._pending.append(Answered(None, "", cancelled=token.reason))
            raise
        self._pending.append(Answered(answer, reply.by))
        return answer

    def remember(
        self,
        policy: PermissionPolicy,
        tool: Tool,
        call: ToolCall,
        scope: Literal["session", "project"],
    ) -> str | None:
        error = super().remember(policy, tool, call, scope)
        if error is not None:
            self._pending.append(NotRemembered(error))
        return error

    def run_tool(self, tool: Tool, call: ToolCall, ctx: ToolContext, result_id: int) -> ToolResult:
        recording = _ToolRecording(call)
        with self._lock:
            self._tool = recording
        error: ToolError | None = None
        crashed: str | None = None
        result: ToolResult | None = None
        try:
            result = tool.run(call.args, ctx)
            return result
        except ToolFailure as failure:
            error = failure.error
            raise
        except Cancelled:
            raise
        except Exception as exc:
            crashed = repr(exc)
            raise
        finally:
            with self._lock:
                self._tool = None
                for event in recording.end_run():
                    self._digest.add(event)
            text = self._stored(result).text if result is not None else ""
            events = _output_refs(recording.events, call.id, text)
            self._pending.append(ToolRan(call.id, result_id, events, error, crashed))

    def source(self, source: ToolSource) -> ToolSource:
        return _RecordedSource(source, self._pending)

    def closing(self, closing: bool) -> bool:
        if closing:
            self._pending.append(Closing())
        return closing

    def steers(self, taken: list[Message], *, next_turn: bool = False) -> list[Message]:
        if taken:
            self._pending.append(Steers(tuple(m.text for m in taken), next_turn))
        return taken

    def stop(self, gate: StopGate, view: Sequence[Message], token: CancelToken) -> str | None:
        try:
            more = gate.stop(view, token)
        except Cancelled:
            self._note_cancel(token.reason)
            raise
        self._pending.append(Stopped(more))
        return more

    def prompt(
        self, gate: PromptGate, view: Sequence[Message], token: CancelToken
    ) -> PromptVerdict:
        try:
            verdict = gate.prompt(view, token)
        except Cancelled:
            self._note_cancel(token.reason)
            raise
        self._pending.append(Prompted(verdict.context, verdict.blocked))
        return verdict

    def emitted(self, event: AgentEvent) -> None:
        with self._lock:
            if self._tool is None:
                self._digest.add(event)
                return
            for kept in self._tool.take(event):
                self._digest.add(kept)

    def committing(self) -> None:
        if self._pending:
            self._sink.record(encode_entries(self._pending), now=False)
            self._pending.clear()

    def ended(self, turn: int, done: Done | None) -> None:
        with self._lock:
            if done is not None:
                self._pending.append(self._digest.end(turn, done.reason))
            self._digest.reset()
        self._seen_cancel = False
        if self._pending:
            self._sink.record(encode_entries(self._pending), now=True)
            self._pending.clear()


class _RecordedSource:
    def __init__(self, source: ToolSource, pending: list[Entry]) -> None:
        self._source = source
        self._pending = pending
        self._last: Sequence[Tool] | None = None

    def tools(self) -> Sequence[Tool]:
        offered = self._source.tools()
        if offered is not self._last:
            self._last = offered
            self._pending.append(Offered(tuple(tool.name for tool in offered)))
        return offered

    def notices(self) -> Sequence[StatusUpdate]:
        notices = tuple(self._source.notices())
        if notices:
            self._pending.append(Notices(notices))
        return notices


def _output_refs(events: Sequence[Emitted], call_id: str, text: str) -> list[Emitted]:
    """The events a tool emitted, its live output by reference to its result where the
    result holds it (a command's output usually does, up to the status line)."""
    kept: list[Emitted] = []
    position = 0
    literal = 0
    for event in events:
        if not isinstance(event, ToolOutput) or event.id != call_id:
            kept.append(event)
        elif text.startswith(event.chunk, position):
            kept.append(OutputRef(len(event.chunk)))
            position += len(event.chunk)
        elif literal + len(event.chunk) <= OUTPUT_BUDGET:
            kept.append(event)
            literal += len(event.chunk)
            position = len(text) + 1  # once off the result, stay off it
        else:
            kept.append(OutputRef(len(event.chunk), kept=False))
            position = len(text) + 1
    return kept


# --- replaying -------------------------------------------------------------------------


class ReplayMismatch(Exception):
    """The loop asked for an input the record does not have at this point: the code that
    replays is not the code that recorded, or the record is damaged."""


class LiveTools(msgspec.Struct):
    """Tools a replay runs again (`--live-tools`): `may_run` says which calls."""

    tools: Mapping[str, Tool]
    may_run: Callable[[Tool, ToolCall], bool]


class Divergence(msgspec.Struct, frozen=True):
    """A call whose live result differs from its recorded one."""

    call_id: str
    tool: str
    recorded: str
    live: str


class _ReplayedCrash(Exception):
    """Stands for an exception of the recorded run: its repr is the recorded one."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __repr__(self) -> str:
        return self.text


class Replayer(Journal):
    """Answers the loop from one loop's entries (those after its Start). `messages`: the
    recorded session's messages by id, which hold the text, calls and results the
    record points at. Checks each turn's events against the record's digest."""

    watches_events = True

    def __init__(
        self,
        entries: Sequence[Entry],
        messages: Mapping[int, Message],
        *,
        live: LiveTools | None = None,
    ) -> None:
        self._entries = list(entries)
        self._at = 0
        self._messages = messages
        self._live = live
        self._digest = EventDigest(lambda r: r, keep=True)  # results: the store's already
        self.differences: list[str] = []
        """One line per turn whose events differ from the record's."""
        self.mismatch = ""
        """The first point where the loop wanted what the record does not have."""
        self.divergence: Divergence | None = None
        self.not_rerun: list[str] = []
        """Calls `live` did not let run again (their recorded results were used)."""

    # --- reading the record ---

    def _peek(self) -> Entry | None:
        return self._entries[self._at] if self._at < len(self._entries) else None

    def _take(self, kind: type[Any], what: str) -> Any:
        entry = self._peek()
        if not isinstance(entry, kind):
            found = type(entry).__name__ if entry is not None else "the end of the record"
            raise self._mismatch(f"the loop wanted {what}; the record has {found}")
        self._at += 1
        return entry

    def _mismatch(self, text: str) -> ReplayMismatch:
        """The exception to raise; the first one is kept (the loop turns what it raises
        into a failed call or turn, which the replay then goes on from)."""
        self.mismatch = self.mismatch or text
        return ReplayMismatch(text)

    def _take_if(self, kind: type[Any]) -> Any:
        entry = self._peek()
        if isinstance(entry, kind):
            self._at += 1
            return entry
        return None

    @property
    def finished(self) -> bool:
        return self._at >= len(self._entries)

    # --- the points ---

    def turn(self, turn: int, message_id: int) -> None:
        entry: Turn = self._take(Turn, f"turn {turn}")
        if (entry.turn, entry.message) != (turn, message_id):
            raise self._mismatch(
                f"turn {turn} began with message {message_id}; the record's turn "
                f"{entry.turn} with message {entry.message}"
            )

    def compact_command(self) -> None:
        self._take(CompactCommand, "a compact command")

    def cancelled(self, token: CancelToken) -> bool:
        entry = self._take_if(Cancel)
        if entry is not None:
            token.cancel(entry.reason)
        return token.is_cancelled()

    def ready(self, compactor: Compactor | None) -> CompactedView | None:
        entry = self._take_if(Ready)
        return entry.view if entry is not None else None

    def compact_now(
        self, compactor: Compactor, view: Sequence[Message], token: CancelToken
    ) -> CompactedView | None:
        entry = self._take_if(Cancel)
        if entry is not None:
            token.cancel(entry.reason)
            raise Cancelled(entry.reason)
        return self._take(CompactNow, "a compaction").view

    def stream(self, open_live: Callable[[], StreamSource], token: CancelToken) -> StreamSource:
        entry: Stream = self._take(Stream, "a model reply")
        message = self._messages.get(entry.message) if entry.message else None
        return _RecordedStream(entry.items, message, token, self._mismatch)

    def validate(self, tool: Tool, call: ToolCall) -> dict[str, Any]:
        entry = self._peek()
        if not isinstance(entry, Checked) or entry.call != call.id:
            return call.args
        self._at += 1
        if entry.crashed is not None:
            raise _ReplayedCrash(entry.crashed)
        if entry.error is not None:
            raise ToolFailure(entry.error.kind, entry.error.message)
        return entry.args if entry.args is not None else call.args

    def decide(self, policy: PermissionPolicy, tool: Tool, call: ToolCall) -> Decision:
        entry = self._peek()
        if isinstance(entry, Decided) and entry.call == call.id:
            self._at += 1
            if entry.crashed is not None:
                raise _ReplayedCrash(entry.crashed)
            return Decision(entry.verdict, entry.reason)
        return Decision("allow")

    def answer(self, reply: Oneshot[ConfirmReply], token: CancelToken) -> ConfirmReply:
        entry: Answered = self._take(Answered, "an answer to a question")
        if entry.cancelled is not None or entry.answer is None:
            token.cancel(entry.cancelled or "cancelled")
            raise Cancelled(token.reason)
        return entry.answer

    def remember(
        self,
        policy: PermissionPolicy,
        tool: Tool,
        call: ToolCall,
        scope: Literal["session", "project"],
    ) -> str | None:
        entry = self._take_if(NotRemembered)
        return entry.error if entry is not None else None

    def forbid(self, policy: PermissionPolicy, tool: Tool, call: ToolCall) -> None:
        return None

    def run_tool(self, tool: Tool, call: ToolCall, ctx: ToolContext, result_id: int) -> ToolResult:
        entry: ToolRan = self._take(ToolRan, f"the result of {call.id}")
        if entry.call != call.id:
            raise self._mismatch(f"the loop ran {call.id}; the record has {entry.call}")
        result = self._recorded_result(entry, call)
        text = result.text if result is not None else ""
        for event in _resolve_outputs(entry.events, call.id, text):
            ctx.emit(event)
        if self._live is not None:
            self._run_live(call, ctx, entry, result)
        if entry.crashed is not None:
            raise _ReplayedCrash(entry.crashed)
        if entry.error is not None:
            raise ToolFailure(entry.error.kind, entry.error.message)
        assert result is not None
        return result

    def _recorded_result(self, entry: ToolRan, call: ToolCall) -> ToolResult | None:
        if entry.error is not None or entry.crashed is not None:
            return None
        message = self._messages.get(entry.result)
        found = [r for r in message.tool_results if r.tool_call_id == call.id] if message else []
        if not found:
            raise self._mismatch(f"message {entry.result} holds no result for {call.id}")
        return found[0]

    def _run_live(
        self, call: ToolCall, ctx: ToolContext, entry: ToolRan, recorded: ToolResult | None
    ) -> None:
        """Run the call again where `live` allows; the first result that differs from the
        record's is the divergence. The replay goes on with the recorded result."""
        live = self._live
        assert live is not None
        tool = live.tools.get(call.name)
        if tool is None or not live.may_run(tool, call):
            self.not_rerun.append(f"{call.id} ({call.name})")
            return
        quiet = msgspec.structs.replace(ctx, emit=lambda event: None, replied=None)
        try:
            again = tool.run(call.args, quiet)
            now = f"{again.status}: {again.text}"
        except ToolFailure as failure:
            now = f"error ({failure.error.kind}): {failure.error.message}"
        except Exception as exc:
            now = f"crashed: {exc!r}"
        if recorded is not None:
            then = f"{recorded.status}: {recorded.text}"
        elif entry.error is not None:
            then = f"error ({entry.error.kind}): {entry.error.message}"
        else:
            then = f"crashed: {entry.crashed}"
        if now != then and self.divergence is None:
            self.divergence = Divergence(call.id, call.name, then, now)

    def replayed_source(self, make_tool: Callable[[str], Tool]) -> ToolSource:
        """A tool source that offers what the recorded one did, as `make_tool` builds it."""
        return _ReplayedSource(self, make_tool)

    def closing(self, closing: bool) -> bool:
        return self._take_if(Closing) is not None

    def steers(self, taken: list[Message], *, next_turn: bool = False) -> list[Message]:
        entry = self._peek()
        if isinstance(entry, Steers) and entry.next_turn == next_turn:
            self._at += 1
            return [user_message(text) for text in entry.texts]
        return []

    def stop(self, gate: StopGate, view: Sequence[Message], token: CancelToken) -> str | None:
        entry = self._take_if(Cancel)
        if entry is not None:
            token.cancel(entry.reason)
            raise Cancelled(entry.reason)
        return self._take(Stopped, "the stop gate's answer").more

    def prompt(
        self, gate: PromptGate, view: Sequence[Message], token: CancelToken
    ) -> PromptVerdict:
        entry = self._take_if(Cancel)
        if entry is not None:
            token.cancel(entry.reason)
            raise Cancelled(entry.reason)
        prompted: Prompted = self._take(Prompted, "the prompt gate's answer")
        return PromptVerdict(prompted.context, prompted.blocked)

    def emitted(self, event: AgentEvent) -> None:
        self._digest.add(event)

    def ended(self, turn: int, done: Done | None) -> None:
        if done is None:
            self._digest.reset()
            return
        replayed = self._digest.end(turn, done.reason)
        events = self._digest.events
        self._digest.reset()
        recorded: End = self._take(End, f"the end of turn {turn}")
        difference = first_difference(recorded, replayed, events)
        if difference:
            self.differences.append(difference)


class _ReplayedSource:
    def __init__(self, replayer: Replayer, make_tool: Callable[[str], Tool]) -> None:
        self._replayer = replayer
        self._make_tool = make_tool
        self._offered: tuple[Tool, ...] = ()

    def tools(self) -> Sequence[Tool]:
        entry = self._replayer._take_if(Offered)
        if entry is not None:
            self._offered = tuple(map(self._make_tool, entry.tools))
        return self._offered

    def notices(self) -> Sequence[StatusUpdate]:
        entry = self._replayer._take_if(Notices)
        return entry.notices if entry is not None else ()


def _resolve_outputs(events: list[Emitted], call_id: str, text: str) -> Iterator[AgentEvent]:
    position = 0
    for event in events:
        if isinstance(event, OutputRef):
            if event.kept:
                chunk = text[position : position + event.n]
                position += event.n
            else:
                chunk = "\ufffd" * event.n
            yield ToolOutput(call_id, chunk)
        elif isinstance(event, Unrecorded):
            yield event.replayed()
        else:
            yield event


class _RecordedStream:
    """A reply from the record, one item per take, on the loop thread. `empty()` is always
    true, so the pump never joins chunks the record keeps apart."""

    def __init__(
        self,
        items: list[StreamItem],
        message: Message | None,
        token: CancelToken,
        mismatch: Callable[[str], ReplayMismatch],
    ) -> None:
        self._items = iter(items)
        self._token = token
        self._mismatch = mismatch
        text = reasoning = ""
        self._tokens: list[str | None] = []
        self._calls: dict[str, ToolCall] = {}
        for item in message.items if message is not None else ():
            if isinstance(item, Text):
                text += item.text
            elif isinstance(item, Reasoning):
                reasoning += item.text
                if item.token is not None:
                    self._tokens.append(item.token)
            elif isinstance(item, ToolCall):
                self._calls[item.id] = item
        self._text = text
        self._reasoning = reasoning
        self._at_text = 0
        self._at_reasoning = 0
        self._at_token = 0

    def get(self) -> object:
        item = next(self._items, "end")
        if isinstance(item, int):
            chunk = self._text[self._at_text : self._at_text + item]
            self._at_text += item
            return TextDelta(chunk)
        if isinstance(item, list):
            chunk = self._reasoning[self._at_reasoning : self._at_reasoning + item[0]]
            self._at_reasoning += item[0]
            return ReasoningDelta(chunk)
        if isinstance(item, str):
            return END
        if isinstance(item, ReasoningMark):
            token = None
            if item.token and self._at_token < len(self._tokens):
                token = self._tokens[self._at_token]
                self._at_token += 1
            return ReasoningDone(token)
        if isinstance(item, CallMark):
            call = self._calls.get(item.id)
            if call is None:
                raise self._mismatch(f"the reply's message has no tool call {item.id}")
            raw = call.raw_args if call.raw_args is not None else codec.encode(call.args).decode()
            return ToolCallDone(item.id, call.name, raw)
        if isinstance(item, Used):
            return Usage(item.i, item.o, item.c, item.r, item.cost)
        if isinstance(item, Failed):
            return ProviderError(item.kind, item.message, retryable=item.retryable)
        if isinstance(item, Crashed):
            return _ReplayedCrash(item.repr)
        if isinstance(item, Cancel):
            self._token.cancel(item.reason)
            return CANCELLED
        return item  # StatusUpdate, Stop

    def empty(self) -> bool:
        return True

    def close(self) -> None:
        return None
