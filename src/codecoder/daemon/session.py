"""A session that outlives its clients: one agent, one broadcaster, any number of clients.

`AgentHandle` has one consumer; here it is the broadcaster thread. It reads each event
once, coalesces a burst of tokens into one chunk, turns the event into ACP updates
(acp.py), serialises each once, and appends the bytes to every attached client's
outbound buffer (rpc.Connection), which never blocks: the agent thread never waits for
a client, and a client that falls too far behind is dropped and may reattach.

Prompts from any client go to the agent in order (a prompt sent during a turn runs after
it), and each gets its answer when its turn's Done arrives. The other clients see a
prompt with its turn's first event: the agent commits the prompt before it emits
anything of the turn, so no client is shown a prompt that a crash could lose. They are
told who sent it (`_meta.codecoder.client`, the sender's clientInfo), that a turn they
did not prompt runs (`_codecoder/turn`, `running`) and how it ended (`done`): a terminal
client in another pane shows the whole conversation and stays busy while it runs. A
question (ConfirmRequest, AskUser) goes to every client; the first answer wins and the
others are told it was answered. With no client attached a question waits
`answer_timeout` seconds for one and is then denied, so a client killed mid-question
never wedges the session.

A client that attaches is first sent the session so far: the stored messages up to the
last finished turn (from the session store), then, when a turn runs, `_codecoder/turn`
`running` and that turn's frames, then the live stream, all under one lock, so it misses
and repeats nothing and can tell the finished conversation from the live turn.

A session with no client attached and no turn running or queued is idle: `on_idle` tells
the hub, which may retire it (`retire`) and close it (handler.Hub). A retired session
takes no client: `attach` says so and the hub loads it anew.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder.daemon import acp
from codecoder.daemon.rpc import RESOURCE_NOT_FOUND, SERVER_ERROR, Connection, RpcError
from codecoder.kernel.events import (
    AgentEvent,
    AskUser,
    Compacted,
    ConfirmReply,
    ConfirmRequest,
    Done,
    Error,
    NewToken,
    StatusUpdate,
    Steered,
    Subagent,
    ToolOutput,
    Usage,
)
from codecoder.kernel.handle import AgentClosed
from codecoder.permissions.modes import ApprovalMode

if TYPE_CHECKING:
    from codecoder.app.wiring import AgentSetup

MAX_TURN_BUFFER = 32 * 1024 * 1024
"""Frames of the running turn kept for clients that attach mid-turn (32 MiB); past it a
late client gets the stored messages only and picks up the stream from there."""
MAX_COALESCED = 64 * 1024
"""Tokens are joined into one chunk of at most this many characters."""
COALESCE_WINDOW = 0.01
"""A token waits at most this long (10 ms) for the ones behind it. A model that streams
one token at a time then makes at most ~100 frames a second per session, instead of one
per token for each client: 50 clients of a 5,000 tokens/s stream cost the process 23 s
of CPU, mostly writer threads, and slowed the agent's turn from 6 to 28 s by holding the
GIL (docs/benchmarks.md, "Daemon")."""

Question = ConfirmRequest | AskUser


class _Pending:
    """A question put to the clients; `asked` maps each client to its request id."""

    def __init__(self, event: Question, call_id: str) -> None:
        self.event = event
        self.call_id = call_id
        self.asked: dict[Connection, int] = {}
        self.answered = False


class LiveSession:
    def __init__(
        self,
        setup: AgentSetup,
        *,
        answer_timeout: float = 300.0,
        on_end: Callable[[LiveSession], None] = lambda session: None,
        on_idle: Callable[[LiveSession], None] = lambda session: None,
    ) -> None:
        self.setup = setup
        self.id = setup.session_id
        self.workspace: Path = setup.loop.workspace
        self.answer_timeout = answer_timeout
        self._on_end = on_end
        self._on_idle = on_idle
        self._calls = acp.ToolCalls(self.workspace)
        self._lock = threading.RLock()
        self._subscribers: dict[Connection, bool] = {}
        self._turn: list[bytes] = []
        self._turn_size = 0
        self._turn_complete = True
        """The buffer holds every frame of the running turn (not overflowed)."""
        self._tail_of: str | None = None
        """The call whose output tail is the buffer's last frame."""
        self._base = self._last_message_id()
        self._prompts: deque[tuple[Connection | None, Any]] = deque()
        """Who waits for each turn queued or running (None: a turn a steer made)."""
        self._echoes: dict[tuple[Connection | None, Any], tuple[bytes, Connection | None]] = {}
        """The user_message_chunk of each turn in `_prompts` not yet started, and who sent
        it (a steer that made a turn is keyed (None, None) but has a sender)."""
        self._steers: deque[tuple[str, Connection, str]] = deque(maxlen=64)
        """Steers sent during the running turn (text, sender, its label), to say who sent
        the text `Steered` announces."""
        self._started = False
        """The running turn has emitted an event (its prompt is committed)."""
        self._questions: dict[str, _Pending] = {}
        self._error: str | None = None
        self._timer: threading.Timer | None = None
        self._idle_since: float | None = None
        """Made for a client that attaches next: busy until it has left."""
        self._retired = False
        self._closing = False
        self.handle = setup.loop.start()
        self._thread = threading.Thread(
            target=self._broadcast, name=f"broadcast-{self.id[:8]}", daemon=True
        )
        self._thread.start()

    # --- what clients do ------------------------------------------------------------

    @property
    def mode(self) -> ApprovalMode:
        return self.setup.policy.mode if self.setup.policy is not None else "ask"

    @property
    def running(self) -> bool:
        with self._lock:
            return bool(self._prompts)

    @property
    def clients(self) -> int:
        with self._lock:
            return len(self._subscribers)

    @property
    def idle_since(self) -> float | None:
        """When the session last became idle (time.monotonic()); None while a client is
        attached or a turn runs or waits, and once retired."""
        with self._lock:
            return self._idle_since

    def attached(self, conn: Connection) -> bool:
        with self._lock:
            return conn in self._subscribers

    def attach(self, conn: Connection, *, ask_user: bool = False, replay: bool = True) -> bool:
        """Subscribe `conn`: the session so far (when `replay`), then everything live,
        and the questions still open. False when the session is retired (being
        unloaded): the hub then loads it again for `conn`."""
        with self._lock:
            if self._retired:
                return False
            self._idle_since = None
            if replay:
                for update in self._history():
                    conn.send_bytes(self._frame(update))
                if self._started and self._prompts:
                    conn.send_bytes(self._turn_frame("running"))
                if self._turn_complete:
                    for frame in self._turn:
                        conn.send_bytes(frame)
            self._subscribers[conn] = ask_user
            for pending in self._questions.values():
                self._ask(conn, pending)
            self._cancel_timer()
        return True

    def detach(self, conn: Connection) -> None:
        with self._lock:
            self._subscribers.pop(conn, None)
            if not self._subscribers and self._questions:
                self._arm_timer()
            idle = self._became_idle()
        if idle:
            self._on_idle(self)

    def retire(self, *, running: bool = False) -> bool:
        """Take the session out of service before it is closed: True when no client is
        attached and no turn runs or waits (or, with `running`, one may: session/close
        cancels it), and from then on no client can attach."""
        with self._lock:
            if self._retired or self._subscribers or (self._prompts and not running):
                return False
            self._retired = True
            self._idle_since = None
            return True

    def prompt(self, conn: Connection, request_id: Any, text: str, client: str = "") -> None:
        """Queue a prompt; its answer (`stopReason`) is sent when its turn is done. The
        other clients are shown it as sent by `client` (the sender's label)."""
        frame = self._frame(_echo(text, client))
        with self._lock:
            self._prompts.append((conn, request_id))
            self._echoes[(conn, request_id)] = (frame, conn)
            self._idle_since = None
        try:
            if self.setup.log is not None:
                self.setup.log.begin_turn()
            self.handle.send(text)
        except Exception as exc:  # no turn will answer it: the request's error does
            with self._lock:
                if (conn, request_id) in self._prompts:
                    self._prompts.remove((conn, request_id))
                self._echoes.pop((conn, request_id), None)
            if isinstance(exc, AgentClosed):
                raise RpcError(SERVER_ERROR, "the session has ended") from exc
            raise

    def steer(self, conn: Connection, text: str, client: str = "") -> bool:
        """Steer the running turn (`_codecoder/steer`); True when one runs. With none, the
        text runs as a turn at once, as the kernel does, with no request to answer at its
        end (the stream and `_codecoder/steered` say what happened). `client` labels
        the sender for the others."""
        frame = self._frame(_echo(text, client))
        with self._lock:
            running = bool(self._prompts)
            if running:
                self._steers.append((text, conn, client))
            else:
                self._prompts.append((None, None))  # its Done answers nobody
                self._echoes[(None, None)] = (frame, conn)
                self._idle_since = None
            try:
                if running:
                    self.handle.steer(text)
                else:
                    if self.setup.log is not None:
                        self.setup.log.begin_turn()
                    self.handle.send(text)
            except AgentClosed as exc:
                if not running and (None, None) in self._prompts:
                    self._prompts.remove((None, None))
                    self._echoes.pop((None, None), None)
                raise RpcError(SERVER_ERROR, "the session has ended") from exc
        return running

    def undo(self, **options: Any) -> dict[str, Any]:
        """`_codecoder/undo`: undo or redo a turn of this session (checkpoints/restore.py),
        never while a turn runs (its files are still changing)."""
        from codecoder.checkpoints.restore import UndoError, undo_session

        log = self.setup.log
        if log is None:
            raise RpcError(SERVER_ERROR, "this session keeps no checkpoints")
        if self.running:
            raise RpcError(SERVER_ERROR, "a turn is running: undo once it is done")
        if self.setup.checkpoints is not None:
            self.setup.checkpoints.settle()  # the last command's snapshot, if still taken
        try:
            report = undo_session(log.store, self.workspace, self.id, **options)
        except UndoError as exc:
            raise RpcError(RESOURCE_NOT_FOUND, str(exc)) from exc
        return report.to_wire()

    def cancel(self) -> None:
        with contextlib.suppress(AgentClosed):
            self.handle.cancel()

    def set_mode(self, mode: ApprovalMode) -> None:
        if self.setup.policy is None:
            raise RpcError(SERVER_ERROR, "this session has no permission policy to switch")
        self.setup.policy.mode = mode
        self._emit({"sessionUpdate": "current_mode_update", "currentModeId": mode})

    def close(self, timeout: float = 10.0) -> None:
        """Cancel the running turn, end the agent (its state committed) and release it."""
        self._closing = True
        with contextlib.suppress(AgentClosed):
            self.handle.shutdown(timeout)
        self._thread.join(timeout)
        self._cancel_timer()
        self.setup.close()

    # --- the broadcaster ----------------------------------------------------------------

    def _broadcast(self) -> None:
        waiting: AgentEvent | None = None
        while True:
            event = waiting if waiting is not None else self.handle.next_event()
            waiting = None
            if event is None:
                break
            if isinstance(event, NewToken):
                event, waiting = self._coalesce(event)
            elif isinstance(event, ToolOutput):
                event, waiting = self._coalesce_output(event)
            try:
                self._on_event(event)
            except Exception as exc:  # a client's trouble must not stop the stream
                self._status("error", f"broadcast failed: {exc!r}")
        with self._lock:
            left = list(self._prompts)
            self._prompts.clear()
        for conn, request_id in left:  # not answered by a Done: the agent ended first
            if conn is None:
                continue
            if self._closing:
                conn.respond(request_id, {"stopReason": "cancelled"})
            else:
                conn.error(request_id, SERVER_ERROR, "the agent stopped before the turn ended")
        self._on_end(self)

    def _coalesce(self, first: NewToken) -> tuple[NewToken, AgentEvent | None]:
        """Join the tokens that arrive behind `first` within COALESCE_WINDOW; the first
        other event ends the chunk at once and is kept."""
        parts = [first.text]
        size = len(first.text)
        deadline = time.monotonic() + COALESCE_WINDOW
        while size < MAX_COALESCED:
            try:
                event = self.handle.next_event(max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                break
            if not isinstance(event, NewToken):
                return NewToken("".join(parts)), event
            parts.append(event.text)
            size += len(event.text)
        return NewToken("".join(parts)), None

    def _coalesce_output(self, first: ToolOutput) -> tuple[ToolOutput, AgentEvent | None]:
        """Join the output of `first`'s call that arrives behind it within COALESCE_WINDOW,
        cut to the tail a client is shown (acp.OUTPUT_TAIL): a command's flood costs at
        most ~100 frames a second, each client's buffer holds no output twice, and the
        broadcaster drains the agent's queue faster than a command can fill it (one
        frame per 64 KiB read made 134 MB of frames per client for 1 GB of output)."""
        tail = first.chunk[-acp.OUTPUT_TAIL :]
        deadline = time.monotonic() + COALESCE_WINDOW
        while True:
            try:
                event = self.handle.next_event(max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                return ToolOutput(first.id, tail), None
            if not isinstance(event, ToolOutput) or event.id != first.id:
                return ToolOutput(first.id, tail), event
            tail = (tail + event.chunk)[-acp.OUTPUT_TAIL :]

    def _on_event(self, event: AgentEvent) -> None:
        if not self._started:
            self._turn_started()
        if isinstance(event, ConfirmRequest | AskUser):
            self._question(event)
        elif isinstance(event, Subagent):
            self._subagent(event)
        elif isinstance(event, Done):
            self._done(event)
        elif isinstance(event, Error):
            self._error = event.message
            self._status("error", event.message)
        elif isinstance(event, StatusUpdate):
            self._status(event.status, event.detail, event.notice)
        elif isinstance(event, Usage):
            if self.setup.log is not None:
                self.setup.log.add_usage(event)
            self._extension("_codecoder/usage", msgspec.to_builtins(event))
        elif isinstance(event, Compacted):
            self._extension("_codecoder/compacted", msgspec.to_builtins(event))
        elif isinstance(event, Steered):
            self._steered(event)
        elif isinstance(event, ToolOutput):
            for update in self._calls.updates(event):
                self._send(self._frame(update), tail_of=event.id)
        else:
            for update in self._calls.updates(event):
                self._emit(update)

    def _turn_started(self) -> None:
        """The first event of a turn: its prompt is committed, so the other clients may
        see it now (the one who sent it knows it)."""
        with self._lock:
            self._started = True
            if not self._prompts:
                return
            key = self._prompts[0]
            running = self._turn_frame("running")
            for other in self._subscribers:
                if other is not key[0]:
                    other.send_bytes(running)
            echo = self._echoes.pop(key, None)
            if echo is None:
                return
            frame, sender = echo
            self._keep(frame)
            for other in self._subscribers:
                if other is not sender:
                    other.send_bytes(frame)

    def _steered(self, event: Steered) -> None:
        """What became of a steer (or a hook's text): every client is told (the terminal
        client shows "joined the turn" or "for the next turn"); one that joined is also a
        user message of the stream. A steer too late for its turn runs as the next turn,
        whose Done then answers nobody."""
        if event.next_turn:
            with self._lock:
                self._prompts.append((None, None))
            if self.setup.log is not None:
                self.setup.log.begin_turn()
        params = {"sessionId": self.id, "text": event.text, "nextTurn": event.next_turn}
        params["by"] = event.by
        with self._lock:
            senders = self._senders(event) if event.by == "user" else []
            frames: dict[str, bytes] = {}

            def frame(labels: list[str]) -> bytes:
                """`_codecoder/steered`, with `client`: who sent it, but the receiver."""
                said = ", ".join(dict.fromkeys(labels))
                if said not in frames:
                    named = {**params, "client": said} if said else params
                    frames[said] = _notification("_codecoder/steered", named)
                return frames[said]

            self._keep(frame([label for _, label in senders]))
            for conn in self._subscribers:
                conn.send_bytes(frame([label for who, label in senders if who is not conn]))
        for update in self._calls.updates(event):
            self._emit(update)

    def _senders(self, event: Steered) -> list[tuple[Connection, str]]:
        """Under the lock: who sent the steers `event` announces (the kernel joins those
        taken at one boundary into one text), taken off the list."""
        found = [entry for entry in self._steers if entry[0] in event.text]
        for entry in found:
            self._steers.remove(entry)
        return [(conn, label) for _, conn, label in found if label]

    def _subagent(self, event: Subagent) -> None:
        inner = event.event
        if isinstance(inner, ConfirmRequest | AskUser):
            self._question(inner, nested=True)
            return
        self._extension(
            "_codecoder/subagent", {"agentId": event.agent_id, "event": msgspec.to_builtins(inner)}
        )

    def _done(self, event: Done) -> None:
        """Answer the turn's prompt, whatever else fails: its bookkeeping reads the
        store, which can fail (a full disk, no file left to open), and a prompt left
        unanswered would hang its client for good."""
        with self._lock:
            head = self._prompts.popleft() if self._prompts else None
            if self._started:  # the others are told it ended (the prompter is answered)
                done = self._turn_frame("done", acp.stop_reason(event.reason))
                for other in self._subscribers:
                    if head is None or other is not head[0]:
                        other.send_bytes(done)
            self._started = False
            self._steers.clear()
            error, self._error = self._error, None
            stale = list(self._questions.values())
            self._questions.clear()
            self._cancel_timer()
            self._turn.clear()
            self._turn_size = 0
            self._turn_complete = True
            self._tail_of = None
            try:
                self._base = self._last_message_id()
            except Exception as exc:
                self._turn_complete = False  # a later attach replays the store whole
                error = f"the turn ended, but the session store failed: {exc}"
            idle = self._became_idle()
        conn, request_id = head if head is not None else (None, None)
        if conn is not None:  # else none waiting, or a turn a steer made
            if error and (event.reason == "error" or not self._turn_complete):
                conn.error(request_id, SERVER_ERROR, error)
            else:
                conn.respond(request_id, {"stopReason": acp.stop_reason(event.reason)})
        for pending in stale:
            self._resolved(pending, None, "the turn ended")
        if idle:
            self._on_idle(self)

    def _became_idle(self) -> bool:
        """Under the lock: note the moment the session goes idle; True the first time."""
        if self._retired or self._subscribers or self._prompts or self._idle_since is not None:
            return False
        self._idle_since = time.monotonic()
        return True

    # --- questions ------------------------------------------------------------------------

    def _question(self, event: Question, *, nested: bool = False) -> None:
        """Put a question to every client. An AskUser is shown on the ask_user call that
        raised it (clients know that id; a sub-agent's is not shown, so it keeps its own)."""
        if isinstance(event, ConfirmRequest):
            call_id = event.tool_call.id
        else:
            running = None if nested else self._calls.running("ask_user")
            call_id = running or event.reply.request_id
        pending = _Pending(event, call_id)
        with self._lock:
            self._questions[event.reply.request_id] = pending
            for conn in list(self._subscribers):
                self._ask(conn, pending)
            if not self._subscribers:
                self._arm_timer()

    def _ask(self, conn: Connection, pending: _Pending) -> None:
        event = pending.event

        def answered(result: Any, error: RpcError | None) -> None:
            if error is None:
                self._answer(pending, _reply(event, result), conn)

        if isinstance(event, AskUser) and self._subscribers.get(conn):
            params: dict[str, Any] = {
                "sessionId": self.id,
                "toolCallId": pending.call_id,
                "question": event.question,
                "options": list(event.options),
            }
            method = "_codecoder/ask_user"
        elif isinstance(event, AskUser):
            call = {"toolCallId": pending.call_id, "title": event.question, "kind": "other"}
            options = acp.ask_options(event.options)
            params = {"sessionId": self.id, "toolCall": call, "options": options}
            method = "session/request_permission"
        else:
            call = acp.permission_call(event.tool_call, self.workspace)
            params = {"sessionId": self.id, "toolCall": call, "options": acp.PERMISSION_OPTIONS}
            method = "session/request_permission"
        request_id = conn.request(method, params, answered)
        if request_id is not None:
            pending.asked[conn] = request_id

    def _answer(self, pending: _Pending, reply: ConfirmReply | str, by: Connection | None) -> None:
        """The first answer wins; a later one (or one after the turn ended) is ignored."""
        with self._lock:
            if pending.answered:
                return
            pending.answered = True
            self._questions.pop(pending.event.reply.request_id, None)
        pending.event.reply.send(reply)  # type: ignore[arg-type]
        self._resolved(pending, by, "answered by another client")

    def _resolved(self, pending: _Pending, by: Connection | None, reason: str) -> None:
        """Tell every client asked but `by` that the question needs no answer any more."""
        params = {"sessionId": self.id, "toolCallId": pending.call_id, "reason": reason}
        for conn in pending.asked:
            if conn is not by:
                conn.notify("_codecoder/request_resolved", params)

    def _arm_timer(self) -> None:
        if self._timer is None:
            self._timer = threading.Timer(self.answer_timeout, self._nobody_answered)
            self._timer.daemon = True
            self._timer.start()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _nobody_answered(self) -> None:
        with self._lock:
            self._timer = None
            if self._subscribers:
                return
            waiting = list(self._questions.values())
        why = f"nobody was attached to answer within {self.answer_timeout:g} s"
        for pending in waiting:
            if isinstance(pending.event, ConfirmRequest):
                self._answer(pending, ConfirmReply("deny", why, by_person=False), None)
            else:
                self._answer(pending, f"({why})", None)

    # --- sending ----------------------------------------------------------------------------

    def _frame(self, update: dict[str, Any]) -> bytes:
        return _notification("session/update", {"sessionId": self.id, "update": update})

    def _turn_frame(self, state: str, stop_reason: str | None = None) -> bytes:
        """`_codecoder/turn`: a turn this client did not prompt is `running`, or `done`."""
        params: dict[str, Any] = {"sessionId": self.id, "state": state}
        if stop_reason is not None:
            params["stopReason"] = stop_reason
        return _notification("_codecoder/turn", params)

    def _emit(self, update: dict[str, Any]) -> None:
        self._send(self._frame(update))

    def _extension(self, method: str, params: dict[str, Any]) -> None:
        self._send(_notification(method, {"sessionId": self.id, **params}))

    def _status(self, status: str, detail: str, notice: str | None = None) -> None:
        params = {"status": status, "detail": detail}
        if notice is not None:
            params["notice"] = notice
        self._extension("_codecoder/status", params)

    def _send(self, frame: bytes, *, tail_of: str | None = None) -> None:
        """Keep `frame` for late clients and queue it for every attached one. An output
        tail of call `tail_of` replaces the call's tail still waiting in a client's queue
        (rpc.Connection): each carries the output so far, so a client that reads slowly
        gets the latest, not every one it was too slow for."""
        replaces = (self.id, tail_of) if tail_of is not None else None
        with self._lock:
            self._keep(frame, tail_of)
            for conn in self._subscribers:
                conn.send_bytes(frame, replaces=replaces)

    def _keep(self, frame: bytes, tail_of: str | None = None) -> None:
        """Keep `frame` for clients that attach mid-turn. A frame of call `tail_of`'s
        output tail replaces the one before it when nothing came between: the latest
        tail is all a late client needs, and a command that printed 1 GB made 140-270 MB
        of them (an 8 KiB tail for each of its 17,000-34,000 chunks)."""
        if not self._turn_complete:
            return
        if tail_of is not None and tail_of == self._tail_of:
            self._turn_size -= len(self._turn.pop())
        self._tail_of = tail_of
        if self._turn_size + len(frame) > MAX_TURN_BUFFER:
            self._turn_complete = False
            self._turn.clear()
            return
        self._turn.append(frame)
        self._turn_size += len(frame)

    def _history(self) -> list[dict[str, Any]]:
        """The stored messages up to the last finished turn (all of them when the turn
        buffer overflowed, so the stream picks up from the store)."""
        log = self.setup.log
        if log is None:
            return []
        messages = log.store.load_messages(self.id)
        if self._turn_complete and self._base is not None:
            messages = [m for m in messages if m.id <= self._base]
        elif self._turn_complete:
            messages = []
        return acp.history_updates(messages, self.workspace)

    def _last_message_id(self) -> int | None:
        log = self.setup.log
        return log.store.last_message_id(self.id) if log is not None else None


_encode = msgspec.json.Encoder().encode


def _notification(method: str, params: dict[str, Any]) -> bytes:
    """rpc.notification through msgspec (the bytes are the same): a session's updates are
    the daemon's traffic, serialised once each, and msgspec is ten times quicker at it
    than the json module rpc.py uses to keep `initialize` light."""
    return _encode({"jsonrpc": "2.0", "method": method, "params": params}) + b"\n"


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _echo(text: str, client: str) -> dict[str, Any]:
    """A prompt as the other clients are shown it: a user_message_chunk saying who sent it
    (`_meta.codecoder.client`; a replayed one has no `_meta`: clients tell them apart)."""
    return {
        "sessionUpdate": "user_message_chunk",
        "content": _text(text),
        "_meta": {"codecoder": {"client": client or "another client"}},
    }


def _option_id(result: Any) -> str | None:
    """The chosen option of a session/request_permission answer (None: cancelled)."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if isinstance(outcome, dict) and outcome.get("outcome") == "selected":
        option = outcome.get("optionId")
        return option if isinstance(option, str) else None
    return None


def _deny_message(result: Any) -> str | None:
    """`_meta.codecoder.message` of a permission answer: what the user tells the model
    along with a denial (docs/acp.md)."""
    meta = result.get("_meta") if isinstance(result, dict) else None
    ours = meta.get("codecoder") if isinstance(meta, dict) else None
    message = ours.get("message") if isinstance(ours, dict) else None
    return message.strip()[:4000] or None if isinstance(message, str) else None


def _reply(event: Question, result: Any) -> ConfirmReply | str:
    """A client's answer as the kernel's: a ConfirmReply, or the text of an AskUser."""
    if isinstance(event, ConfirmRequest):
        reply = acp.confirm_reply(_option_id(result))
        message = _deny_message(result)
        if message and reply.decision in ("deny", "deny_session"):
            return ConfirmReply(reply.decision, message)
        return reply
    if isinstance(result, dict) and isinstance(result.get("answer"), str):
        return result["answer"]
    return acp.ask_answer(_option_id(result), event.options)
