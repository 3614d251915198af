"""AgentLoop: the turn loop on its own thread (seed §3.4, §3.7).

One thread takes commands, builds each request, streams the reply (read on a reader
thread per request, so a silent server never holds the loop), runs tool calls one after
another and loops until the model stops calling tools. Cancellation is a CancelToken
flipped by the command side; the loop checks it at safe points and its callback wakes
the loop wherever it waits (the stream queue, a reply oneshot, a running command).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder.kernel.cancel import Cancelled, CancelToken
from codecoder.kernel.channel import EventChannel
from codecoder.kernel.commands import Compact, ProcessMessage, Shutdown
from codecoder.kernel.events import (
    AgentEvent,
    AgentState,
    Compacted,
    ConfirmReply,
    ConfirmRequest,
    Done,
    DoneReason,
    Error,
    NewReasoning,
    NewToken,
    NoticeSource,
    StatusUpdate,
    Steered,
    ToolError,
    ToolFinished,
    ToolStarted,
    Usage,
)
from codecoder.kernel.handle import CLOSED, AgentHandle, Envelope
from codecoder.kernel.journal import CANCELLED, END, LIVE, Journal, Start, StreamSource
from codecoder.kernel.messages import (
    Message,
    Text,
    ToolCall,
    ToolResult,
    tool_result,
    user_message,
)
from codecoder.kernel.oneshot import Oneshot
from codecoder.kernel.ports import (
    CompactedView,
    CompactionSink,
    Compactor,
    DraftSink,
    HistorySink,
    HistoryUnavailable,
    PermissionPolicy,
    PromptGate,
    PromptSource,
    ProviderClient,
    ProviderError,
    ProviderRequest,
    ReasoningDelta,
    ReasoningDone,
    Stop,
    StopGate,
    StreamEvent,
    TextDelta,
    Tool,
    ToolCallDone,
    ToolContext,
    ToolFailure,
    ToolSource,
    ToolSpec,
)
from codecoder.kernel.reply import ReplyBuilder, capped

if TYPE_CHECKING:
    from codecoder.kernel.trace import RequestDigest, Tracer

DEFAULT_SYSTEM_PROMPT = "You are CodeCoder, a coding agent. Use the tools to do the task."

_COALESCE = 512

DRAFT_EVERY = 0.25
"""Seconds between drafts of a streaming reply (DraftSink), what a crash loses of it at
most: 4 writes a second per streaming session, one clock read per burst of tokens."""
DRAFT_RATE = 1 << 16
"""Bytes a second that drafts may write at most: each draft rewrites the whole reply
(its text and the calls it finished), so past 16 KiB they come further apart (a reply of
1 M characters streamed for a minute wrote 120 MB to the store's log at 4 a second;
bounded, at most ~4 MB)."""
_NEVER = float("inf")


class StaticPrompt:
    """A fixed system prompt (tests, sub-agents with a profile's instructions)."""

    def __init__(self, text: str) -> None:
        self._text = text

    def system_prompt(self) -> str:
        return self._text


class AgentLoop:
    """Construct with the concrete provider, tools and policies (the edge wires them),
    then `start()` for a handle. `messages` seeds the history (a resumed session) and
    `next_id` the id its next message takes."""

    def __init__(
        self,
        provider: ProviderClient,
        tools: Iterable[Tool],
        workspace: Path,
        *,
        policy: PermissionPolicy | None = None,
        history: HistorySink | None = None,
        prompt: PromptSource | None = None,
        max_rounds: int = 100,
        tracer: Tracer | None = None,
        messages: Sequence[Message] = (),
        first_turn: int = 0,
        next_id: int = 1,
        name: str = "agent",
        compactor: Compactor | None = None,
        tool_source: ToolSource | None = None,
        journal: Journal | None = None,
        stop_gate: StopGate | None = None,
        prompt_gate: PromptGate | None = None,
    ) -> None:
        self._provider = provider
        self._tools = {tool.name: tool for tool in tools}
        self._fixed = self._tools
        self._source = tool_source
        self._offered: Sequence[Tool] = ()
        self._specs = tuple(
            ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
            for t in self._tools.values()
        )
        self.workspace = workspace
        self._policy = policy
        self._history = history
        self._drafts = history if isinstance(history, DraftSink) else None
        self._prompt = prompt or StaticPrompt(DEFAULT_SYSTEM_PROMPT)
        self.max_rounds = max_rounds
        self._tracer = tracer
        self._digest: RequestDigest | None = None
        if tracer is not None:
            from codecoder.kernel.trace import RequestDigest

            self._digest = RequestDigest()
        self._compactor = compactor
        self._journal = journal or LIVE
        self._stop_gate = stop_gate
        self._prompt_gate = prompt_gate
        self._usage: Usage | None = None
        self._state: AgentState = "idle"
        self._messages: list[Message] = list(messages)
        # a resumed view may lack the store's last ids (compacted, or dropped by repair)
        self._next_id = max(next_id, max((m.id for m in self._messages), default=0) + 1)
        self.turn = first_turn
        self.name = name
        self._commands: SimpleQueue[Envelope] = SimpleQueue()
        self._events = EventChannel()
        self._closing = threading.Event()
        self._readers: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._run, name=f"{name}-loop", daemon=True)
        self._handle = AgentHandle(
            self._commands,
            self._events,
            self._thread,
            on_shutdown=self._closing.set,
            turn=lambda: self.turn,
            first_turn=first_turn,
            name=name,
            tracer=tracer,
        )

    @property
    def messages(self) -> tuple[Message, ...]:
        """The history the model sees (read it only between turns)."""
        return tuple(self._messages)

    def rename(self, name: str) -> None:
        """Give the loop the name its lines and threads show (a sub-agent's id); only
        before `start`."""
        assert not self._thread.is_alive(), "rename a loop before it starts"
        self.name = name
        self._thread.name = f"{name}-loop"
        self._handle.name = name

    def start(self) -> AgentHandle:
        self._journal.started(
            Start(
                tools=tuple(self._fixed),
                first_turn=self.turn,
                next_id=self._next_id,
                max_rounds=self.max_rounds,
                view=tuple(m.id if m.id > 0 else m for m in self._messages),
                policy=self._policy is not None,
                compactor=self._compactor is not None,
                source=self._source is not None,
                stop_gate=self._stop_gate is not None,
                prompt_gate=self._prompt_gate is not None,
            )
        )
        self._thread.start()
        return self._handle

    def join_readers(self, timeout: float = 5.0) -> None:
        """Wait for provider reader threads that outlived their turn (tests, shutdown)."""
        for reader in self._readers:
            reader.join(timeout)
        self._readers = [r for r in self._readers if r.is_alive()]

    # --- the thread ------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                envelope = self._commands.get()
                command = envelope.command
                if isinstance(command, Shutdown):
                    break
                if isinstance(command, ProcessMessage) and envelope.token is not None:
                    self._turn(command.message, envelope.token, envelope.turn)
                elif isinstance(command, Compact) and envelope.token is not None:
                    self._compact_on_demand(envelope.token)
        finally:
            self.join_readers(timeout=1.0)
            self._events.put(CLOSED)

    def _emit(self, event: AgentEvent) -> None:
        if self._journal.watches_events:
            self._journal.emitted(event)
        if self._tracer is None:
            self._events.put(event)
        else:
            self._tracer.line("event", self.name, self.turn, event, self._events.put)

    def _tool_emit(self, token: CancelToken, event: AgentEvent) -> None:
        """A running tool's events: its live output waits while the client lags."""
        self._events.wait_room(event, token)
        self._emit(event)

    def _status(self, state: AgentState, detail: str = "") -> None:
        self._state = state
        self._emit(StatusUpdate(state, detail))

    def _notice(self, source: NoticeSource, detail: str) -> None:
        self._emit(StatusUpdate(self._state, detail, source))

    def _commit(self, message: Message) -> Message:
        """Give the message its id, make it part of history and durable (invariant 6)."""
        message = msgspec.structs.replace(message, id=self._next_id)
        self._next_id += 1
        self._messages.append(message)
        if self._history is not None:
            self._journal.committing()
            self._history.append(message)
        return message

    # --- a turn ----------------------------------------------------------------------

    def _turn(self, message: Message, token: CancelToken, turn: int) -> None:
        self.turn = turn
        reason: DoneReason = "completed"
        try:
            self._journal.turn(turn, self._commit(message).id)
            reason = self._gate_prompt(token) or self._rounds(token)
        except Cancelled:
            reason = "shutdown" if token.reason == "shutdown" else "cancelled"
        except ProviderError as exc:
            self._emit(Error(kind=exc.kind, message=exc.message))
            reason = "error"
        except HistoryUnavailable as exc:  # nothing more can be kept: no point going on
            self._emit(Error(kind="store", message=str(exc)))
            reason = "error"
        except Exception as exc:
            self._note_crash(exc)
            self._emit(Error(kind="internal", message=f"internal error: {exc!r}"))
            reason = "error"
        if reason == "cancelled" and self._journal.closing(self._closing.is_set()):
            reason = "shutdown"
        self._status("idle")
        self._show_notices()
        self._late_steers(token)
        done = Done(cancelled=reason in ("cancelled", "shutdown"), reason=reason)
        self._emit(done)
        with contextlib.suppress(HistoryUnavailable):  # the entries wait for the next write
            self._journal.ended(turn, done)

    def _rounds(self, token: CancelToken) -> DoneReason:
        retried = False
        rounds = 0
        while rounds < self.max_rounds:
            self._journal.check(token)
            self._apply(self._journal.ready(self._compactor))
            self._take_steers()
            try:
                calls = self._stream_reply(token)
            except ProviderError as exc:
                if exc.kind != "context_length" or retried or self._compactor is None:
                    raise
                retried = True  # compact and retry once
                self._status("compacting", "the context is too long")
                view = self._journal.compact_now(self._compactor, self._messages, token)
                if not self._apply(view):
                    raise
                continue
            rounds += 1
            if not calls:
                more = self._stop(token)
                if more is None:
                    return "completed"
                self._commit(user_message(more))
                self._emit(Steered(more, by="hook"))
                continue
            self._run_tools(calls, token)
        self._journal.check(token)
        limit = f"{self.max_rounds} round{'' if self.max_rounds == 1 else 's'}"
        self._emit(Error(kind="max_rounds", message=f"stopped after {limit}"))
        return "max_rounds"

    # --- steering --------------------------------------------------------------------

    def _take_steers(self) -> None:
        """At a round boundary: what the user steered with joins the turn, in history."""
        steers = self._journal.steers(self._handle.take_steers())
        if steers:
            text = "\n\n".join(m.text for m in steers)
            self._commit(user_message(text))
            self._emit(Steered(text))

    def _late_steers(self, token: CancelToken) -> None:
        """The turn is over: steers it did not take are the next turn's message."""
        late = self._journal.steers(self._handle.turn_finished(token), next_turn=True)
        if late:
            self._emit(Steered("\n\n".join(m.text for m in late), next_turn=True))

    def _gate_prompt(self, token: CancelToken) -> DoneReason | None:
        """The prompt gate, before the first request: its context joins the turn as a
        user message (Steered by hook); a block ends the turn ("error") unasked."""
        if self._prompt_gate is None:
            return None
        verdict = self._journal.prompt(self._prompt_gate, self._messages, token)
        if verdict.context:
            self._commit(user_message(verdict.context))
            self._emit(Steered(verdict.context, by="hook"))
        if verdict.blocked is not None:
            self._emit(Error(kind="blocked", message=verdict.blocked))
            return "error"
        return None

    def _stop(self, token: CancelToken) -> str | None:
        if self._stop_gate is None:
            return None
        return self._journal.stop(self._stop_gate, self._messages, token)

    # --- compaction ------------------------------------------------------------------

    def _apply(self, view: CompactedView | None) -> bool:
        """Swap the model's view to summary + tail (only ever between rounds)."""
        if view is None or not any(m.id == view.first_kept_id for m in self._messages):
            return False  # none, or prepared for a view a newer compaction has replaced
        kept = [m for m in self._messages if m.id >= view.first_kept_id]
        self._messages = [view.summary, *kept]
        if isinstance(self._history, CompactionSink):
            self._history.record_compaction(view)
        if self._tracer is not None:
            data = {"first_kept_id": view.first_kept_id, "summary": view.summary}
            self._tracer.line("compaction", self.name, self.turn, data)
        self._emit(Compacted(before_tokens=view.before_tokens, after_tokens=view.after_tokens))
        return True

    def _compact_on_demand(self, token: CancelToken) -> None:
        """`/compact`: answered by Compacted, or a StatusUpdate saying why not."""
        self._journal.compact_command()
        try:
            if self._compactor is None:
                self._notice("compact", "compaction is not configured")
                return
            self._status("compacting", "on request")
            view = self._journal.compact_now(self._compactor, self._messages, token)
            applied = self._apply(view)
            self._status("idle")
            if not applied:
                self._notice("compact", "nothing to compact")
        except Cancelled:
            self._status("idle")
            self._notice("compact", "cancelled")
        finally:
            self._late_steers(token)
            self._journal.ended(self.turn, None)

    def _request(self) -> ProviderRequest:
        system = self._prompt.system_prompt()
        self._take_up_tools()  # last: a source may start its own work when first asked
        return ProviderRequest(system=system, messages=tuple(self._messages), tools=self._specs)

    def _take_up_tools(self) -> None:
        """The source's tools join the fixed ones (a fixed tool keeps its name) when the
        source offers something new; its pending notices are shown first."""
        if self._source is None:
            return
        self._show_notices()
        offered = self._source.tools()
        if offered is self._offered:
            return
        self._offered = offered
        tools = dict(self._fixed)
        for tool in offered:
            tools.setdefault(tool.name, tool)
        self._tools = tools
        self._specs = tuple(
            ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
            for t in tools.values()
        )

    def _show_notices(self) -> None:
        if self._source is not None:
            for notice in self._source.notices():
                self._emit(msgspec.structs.replace(notice, status=self._state))

    # --- streaming -------------------------------------------------------------------

    def _stream_reply(self, token: CancelToken) -> list[ToolCall]:
        """Stream one reply into history; return its tool calls. A cancel or a failure
        mid-stream keeps what arrived as an interrupted message, then raises."""
        request = self._request()
        self._status("thinking")
        if self._tracer is not None:
            assert self._digest is not None
            self._tracer.request(self.name, self.turn, request, self._digest)
        stream = self._journal.stream(lambda: self._read(request, token), token)
        builder = ReplyBuilder()
        calls: list[ToolCall] = []
        self._usage = None
        try:
            self._pump(stream, token, builder, calls)
        except BaseException:
            self._keep(builder, interrupted=True)
            self._abandon(calls)
            raise
        finally:
            stream.close()
        self._keep(builder, interrupted=False)
        if self._compactor is not None:
            self._compactor.observe(self._messages, self._usage)
        return calls

    def _read(self, request: ProviderRequest, token: CancelToken) -> StreamSource:
        """The live reply: read on a reader thread of its own into a queue."""
        stream = _LiveStream(token)
        reader = threading.Thread(
            target=_read_stream,
            args=(self._provider, request, token, stream.queue),
            name=f"{self.name}-reader-{self.turn}",
            daemon=True,
        )
        self._readers = [r for r in self._readers if r.is_alive()]
        self._readers.append(reader)
        reader.start()
        return stream

    def _trace_stream(self, tracer: Tracer, item: object) -> None:
        """A stream item as the loop took it (an exception by its repr; the end, which
        the provider's `stop` already shows, not at all)."""
        if isinstance(item, BaseException):
            tracer.line("stream", self.name, self.turn, {"type": "exception", "repr": repr(item)})
        elif item is not END:
            tracer.line("stream", self.name, self.turn, item)

    def _keep(self, builder: ReplyBuilder, *, interrupted: bool) -> None:
        message = builder.build(0, interrupted=interrupted)
        self._journal.stream_kept(self._next_id if message is not None else 0)
        if message is not None:
            self._commit(message)

    def _pump(
        self,
        stream: StreamSource,
        token: CancelToken,
        builder: ReplyBuilder,
        calls: list[ToolCall],
    ) -> None:
        journal = self._journal
        records = journal.records
        tracer = self._tracer
        due = time.monotonic() + DRAFT_EVERY if self._drafts is not None else _NEVER
        pending: object = None
        while True:
            item = pending if pending is not None else stream.get()
            pending = None
            if item is CANCELLED or token.is_cancelled():
                if records:
                    journal.took(CANCELLED, token)
                raise Cancelled(token.reason)
            if records and not isinstance(item, TextDelta):
                journal.took(item, token)
            if tracer is not None and not isinstance(item, TextDelta):
                self._trace_stream(tracer, item)
            if item is END:
                return
            if isinstance(item, TextDelta):
                # Coalesce what has already arrived: one event for a burst of tokens.
                parts = [item.text]
                while len(parts) < _COALESCE and not stream.empty():
                    nxt = stream.get()
                    if not isinstance(nxt, TextDelta):
                        pending = nxt
                        break
                    parts.append(nxt.text)
                text = parts[0] if len(parts) == 1 else "".join(parts)
                if records:
                    journal.took_text(len(text))
                if tracer is not None:
                    data = {"type": "text_delta", "chunks": parts}
                    tracer.line("stream", self.name, self.turn, data)
                builder.text(text)
                if self._state != "streaming":
                    self._status("streaming")
                self._emit(NewToken(text))
            elif isinstance(item, BaseException):
                raise item
            else:
                self._fold(item, builder, calls)  # type: ignore[arg-type]
            due = self._draft(builder, due)

    def _draft(self, builder: ReplyBuilder, due: float) -> float:
        """Hand the reply so far to the DraftSink once `due` has passed; the next due."""
        now = time.monotonic()
        if now < due or self._drafts is None:
            return due
        draft = builder.draft(self._next_id)
        if draft is None:
            return now + DRAFT_EVERY
        self._drafts.draft(draft)
        size = len(msgspec.json.encode(draft.items))  # a finished call's arguments too
        return now + max(DRAFT_EVERY, size / DRAFT_RATE)

    def _fold(self, event: StreamEvent, builder: ReplyBuilder, calls: list[ToolCall]) -> None:
        if isinstance(event, ReasoningDelta):
            builder.reasoning(event.text)
            if self._state != "streaming":
                self._status("streaming")
            self._emit(NewReasoning(event.text))
        elif isinstance(event, ReasoningDone):
            builder.reasoning_done(event.token)
        elif isinstance(event, ToolCallDone):
            if self._state != "streaming":
                self._status("streaming")
            calls.append(builder.tool_call(event.id, event.name, event.raw_args))
        elif isinstance(event, Usage):
            self._usage = event
            self._emit(event)
        elif isinstance(event, StatusUpdate):  # the provider retries
            self._state = event.status
            self._emit(event)
        elif isinstance(event, Stop) and event.reason == "max_tokens":
            self._notice("max_tokens", "the reply hit the output token limit")

    # --- tools -----------------------------------------------------------------------

    def _run_tools(self, calls: list[ToolCall], token: CancelToken) -> None:
        """Run calls one after another; every call gets ToolStarted, a committed result
        and then ToolFinished, even when the turn was cancelled before it ran."""
        for call in calls:
            if self._journal.cancelled(token):
                self._emit(ToolStarted(id=call.id, name=call.name, args=call.args))
                finished = ToolFinished(call.id, call.name, result=_cancelled(call))
            else:
                finished = self._execute(call, token)
            self._finish(finished)

    def _abandon(self, calls: list[ToolCall]) -> None:
        """Calls of a reply cut short (cancel, broken stream) never run, but each still
        gets its ToolStarted, ToolFinished and a cancelled result (invariants 2 and 3)."""
        for call in calls:
            self._emit(ToolStarted(id=call.id, name=call.name, args=call.args))
            self._finish(ToolFinished(call.id, call.name, result=_cancelled(call)))

    def _finish(self, finished: ToolFinished) -> None:
        """Commit the result, then announce it: a client that saw a call finish finds
        its result in the store after a crash (a resume would call it cancelled)."""
        try:
            self._commit(Message(id=0, role="tool", items=(_result_for_model(finished),)))
        finally:  # a store that failed ends the turn, but the call still finishes
            self._emit(finished)

    def _execute(self, call: ToolCall, token: CancelToken) -> ToolFinished:
        """Check the call's arguments, announce it (ToolStarted carries the arguments as
        checked: a client shows `path`, not the `file_path` the model sent), ask, run."""
        tool = self._tools.get(call.name)
        try:
            try:
                if tool is None:
                    known = ", ".join(sorted(self._tools)) or "none"
                    raise ToolFailure("unknown_tool", f"unknown tool {call.name!r}; tools: {known}")
                if call.raw_args is not None:
                    raise ToolFailure(
                        "invalid_args", f"arguments are not a JSON object: {call.raw_args[:200]!r}"
                    )
                args = self._journal.validate(tool, call)
                if args is not call.args:  # the journal compared them (same_args)
                    call = msgspec.structs.replace(call, args=args)
            finally:
                self._emit(ToolStarted(id=call.id, name=call.name, args=call.args))
            self._authorise(tool, call, token)
            self._status("running_tool", call.name)
            ctx = ToolContext(
                call_id=call.id,
                cancel=token,
                workspace=self.workspace,
                emit=functools.partial(self._tool_emit, token),
                replied=self._trace_reply if self._tracer is not None else None,
            )
            result = self._journal.run_tool(tool, call, ctx, self._next_id)
        except ToolFailure as failure:
            return ToolFinished(call.id, call.name, error=failure.error)
        except Cancelled:
            return ToolFinished(call.id, call.name, result=_cancelled(call))
        except Exception as exc:
            self._note_crash(exc)
            error = ToolError(kind="crashed", message=f"{call.name} crashed: {exc!r}")
            return ToolFinished(call.id, call.name, error=error)
        if result.tool_call_id != call.id:
            result = msgspec.structs.replace(result, tool_call_id=call.id)
        return ToolFinished(call.id, call.name, result=result)

    def _authorise(self, tool: Tool, call: ToolCall, token: CancelToken) -> None:
        """Ask the policy; on "ask", put the question to the user through a reply oneshot
        and block on it (and on the turn's token): the answer never uses the command
        channel (seed §3.8)."""
        if self._policy is None:
            return
        decision = self._journal.decide(self._policy, tool, call)
        if self._tracer is not None:
            data = {"tool_call_id": call.id, **msgspec.structs.asdict(decision)}
            self._tracer.line("decision", self.name, self.turn, data)
        if decision.verdict == "allow":
            return
        if decision.verdict == "deny":
            raise ToolFailure("denied", decision.reason or f"{call.name} is not allowed")
        reply: Oneshot[ConfirmReply] = Oneshot()
        self._status("waiting_for_approval", call.name)
        self._emit(ConfirmRequest(tool_call=call, reason=decision.reason, reply=reply))
        answer = self._journal.answer(reply, token)
        self._trace_reply(reply, answer)
        if answer.decision in ("allow_session", "allow_project"):
            scope = "session" if answer.decision == "allow_session" else "project"
            error = self._journal.remember(self._policy, tool, call, scope)
            if error is not None:
                self._notice("permissions", f"could not save the rule: {error}")
        elif answer.decision in ("deny", "deny_session"):
            if answer.decision == "deny_session":
                self._journal.forbid(self._policy, tool, call)
            message = "the user denied this call" if answer.by_person else "not allowed"
            if answer.message:
                message += f": {answer.message}"
            raise ToolFailure("denied", message)

    def _trace_reply(self, reply: Oneshot[Any], answer: object) -> None:
        if self._tracer is not None:
            data = {"request_id": reply.request_id, "answer": answer, "by": reply.by}
            self._tracer.line("reply", self.name, self.turn, data)

    def _note_crash(self, exc: BaseException) -> None:
        if self._tracer is not None:
            detail = "".join(traceback.format_exception(exc))
            self._tracer.note(self.name, self.turn, "traceback", detail)


def _read_stream(
    provider: ProviderClient,
    request: ProviderRequest,
    token: CancelToken,
    out: SimpleQueue[object],
) -> None:
    """The reader thread: provider events, capped (a few MB whatever is sent), into the
    loop's queue. The loop never waits for it; on cancel the CancelToken wakes it."""
    try:
        for event in capped(provider.stream(request, token)):
            if token.is_cancelled():
                return
            out.put(event)
        out.put(END)
    except BaseException as exc:
        out.put(exc)


class _LiveStream:
    """A reply read on a reader thread into `queue`; a cancel puts CANCELLED on it, so a
    silent server never holds the loop."""

    def __init__(self, token: CancelToken) -> None:
        self.queue: SimpleQueue[object] = SimpleQueue()
        self._unregister = token.on_cancel(lambda: self.queue.put(CANCELLED))

    def get(self) -> object:
        return self.queue.get()

    def empty(self) -> bool:
        return self.queue.empty()

    def close(self) -> None:
        self._unregister()


def _cancelled(call: ToolCall) -> ToolResult:
    return tool_result(call.id, "cancelled before it finished", status="cancelled")


def _result_for_model(finished: ToolFinished) -> ToolResult:
    """What history keeps: a ToolError becomes an error result the model can read."""
    if finished.result is not None:
        return finished.result
    error = finished.error
    text = f"error ({error.kind}): {error.message}" if error is not None else "error"
    return ToolResult(tool_call_id=finished.id, content=(Text(text),), status="error")
