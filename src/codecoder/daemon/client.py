"""The daemon's client: what `codecoder sessions`, `codecoder --attach` and the terminal
client use to talk to a running daemon (the only part of daemon/ the CLI imports).

`DaemonClient` is a blocking JSON-RPC caller over the socket. `RemoteAgent` drives one
session through it and looks, to the terminal client, like the kernel's AgentHandle:
`send`, `cancel`, `next_event`, `shutdown` (which detaches: the session goes on). It
turns ACP updates back into kernel events (agent_message_chunk → NewToken, tool_call →
ToolStarted, a permission request → ConfirmRequest with a reply oneshot whose answer
goes back as the response), so one renderer serves both.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder import __version__, paths
from codecoder.daemon.acp import PERMISSION_OPTIONS
from codecoder.daemon.remote_events import (
    ModeChanged,
    Prompted,
    RemoteEvent,
    RequestResolved,
    TurnRunning,
)
from codecoder.daemon.rpc import PROTOCOL_VERSION, Connection, RpcError
from codecoder.kernel.events import (
    AgentEvent,
    AskUser,
    Compacted,
    ConfirmReply,
    ConfirmRequest,
    Done,
    DoneReason,
    Error,
    NewReasoning,
    NewToken,
    StatusUpdate,
    Steered,
    Subagent,
    TodoItem,
    TodoUpdated,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    Usage,
)
from codecoder.kernel.messages import Message, Reasoning, Text, ToolCall, ToolResult
from codecoder.kernel.oneshot import Oneshot

if TYPE_CHECKING:
    from codecoder.app.options import AgentOptions

_STOP = {"end_turn": "completed", "cancelled": "cancelled", "max_turn_requests": "max_rounds"}
_TODO_STATUS = {"pending": "pending", "in_progress": "in_progress", "completed": "done"}
_REPLAYED = (
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
)


class DaemonUnavailable(Exception):
    """No daemon answers on the socket."""


def running_daemon(path: Path | None = None) -> Path | None:
    """The socket of a running daemon, or None (a socket file of a dead one is not)."""
    target = path or paths.daemon_socket()
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(str(target))
    except OSError:
        return None
    finally:
        probe.close()
    return target


class DaemonClient:
    def __init__(self, path: Path | None = None, *, timeout: float = 5.0) -> None:
        target = path or paths.daemon_socket()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(str(target))
            sock.settimeout(None)
        except OSError as exc:
            sock.close()
            raise DaemonUnavailable(f"no daemon at {target}: {exc.strerror or exc}") from exc
        self._notifications: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self.conn = Connection.over_socket(sock, self, name="daemon")
        self.conn.start()

    # --- rpc.Handler: what the daemon sends us ---------------------------------------

    def on_request(self, conn: Connection, request_id: Any, method: str, params: Any) -> None:
        self._notifications.put(("__request__", (request_id, method, params)))

    def on_notification(self, conn: Connection, method: str, params: Any) -> None:
        self._notifications.put((method, params))

    def on_close(self, conn: Connection) -> None:
        self._notifications.put(("__closed__", None))

    # --- calls ---------------------------------------------------------------------------

    def call(self, method: str, params: Any, timeout: float | None = 30.0) -> Any:
        done = threading.Event()
        box: list[Any] = []

        def answered(result: Any, error: RpcError | None) -> None:
            box.append((result, error))
            done.set()

        if self.conn.request(method, params, answered) is None:
            if self.conn.last_word is not None:  # turned away, and told why
                raise self.conn.last_word
            raise DaemonUnavailable("the connection to the daemon is closed")
        if not done.wait(timeout):
            raise TimeoutError(f"{method}: no answer within {timeout} s")
        result, error = box[0]
        if error is not None:
            raise error
        return result

    def call_async(self, method: str, params: Any, on_answer: Any) -> None:
        if self.conn.request(method, params, on_answer) is None:
            raise DaemonUnavailable("the connection to the daemon is closed")

    def call_queued(self, method: str, params: Any) -> None:
        """Send a request whose answer comes out of `next_message` as ("__answer__",
        (result, error)), after every message the daemon sent before it."""

        def answered(result: Any, error: RpcError | None) -> None:
            self._notifications.put(("__answer__", (result, error)))

        self.call_async(method, params, answered)

    def initialize(self) -> dict[str, Any]:
        capabilities = {"_meta": {"codecoder": {"askUser": True}}}
        info = {"name": "codecoder", "title": who_am_i(), "version": __version__}
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": capabilities,
            "clientInfo": info,
        }
        return self.call("initialize", params)

    def next_message(self, timeout: float | None = None) -> tuple[str, Any]:
        try:
            return self._notifications.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"nothing from the daemon within {timeout} s") from None

    def close(self) -> None:
        self.conn.close()
        self.conn.join(2)

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RemoteAgent:
    """One daemon session, seen through the AgentHandle's surface."""

    def __init__(
        self, client: DaemonClient, session_id: str, workspace: Path, *, replayed: bool = False
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.workspace = workspace
        self._events: queue.SimpleQueue[RemoteEvent | None] = queue.SimpleQueue()
        self._names: dict[str, tuple[str, dict[str, Any]]] = {}
        self._tails: dict[str, str] = {}
        self._early: list[tuple[str, Any]] = []
        self._asked = 0
        """Our prompts not answered yet: while one is, the end of another client's turn
        is not our Done (ours follows)."""
        self._asked_lock = threading.Lock()
        self.history: list[Message] = self._take_history() if replayed else []
        """The conversation the daemon replayed on attach or load (the stored messages,
        then the running turn's updates so far), for the client to show before the prompt."""
        self._pump = threading.Thread(target=self._read, name="remote-events", daemon=True)
        self._pump.start()

    @classmethod
    def open(
        cls,
        client: DaemonClient,
        workspace: Path,
        session_id: str | None = None,
        *,
        options: AgentOptions | None = None,
    ) -> RemoteAgent:
        """A new session in `workspace` (with `options`' model, script and approval
        mode), or `session_id`: attached when live, else loaded from the store."""
        client.initialize()
        if session_id is None:
            params: dict[str, Any] = {"cwd": str(workspace), "mcpServers": []}
            if options is not None:
                params["_meta"] = {"codecoder": _session_meta(options)}
            result = client.call("session/new", params)
            return cls(client, str(result["sessionId"]), workspace)
        try:
            result = client.call("_codecoder/session/attach", {"sessionId": session_id})
            session_id = str(result["sessionId"])
        except RpcError:
            load = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
            client.call("session/load", load)
        return cls(client, session_id, workspace, replayed=True)

    def _take_history(self) -> list[Message]:
        """The replay is queued before the answer to attach or load: take it, up to the
        first message that is not an update (a question of the running turn), which the
        event pump then handles first."""
        updates: list[dict[str, Any]] = []
        while True:
            try:
                method, params = self.client.next_message(timeout=0)
            except TimeoutError:
                break
            if self._early or method != "session/update" or not isinstance(params, dict):
                self._early.append((method, params))
            elif isinstance(params.get("update"), dict):
                updates.append(params["update"])
        return replayed_messages(updates)

    # --- the AgentHandle surface -----------------------------------------------------------

    def send(self, text: str) -> None:
        params = {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]}
        with self._asked_lock:
            self._asked += 1
        try:
            self.client.call_queued("session/prompt", params)  # its Done after its updates
        except Exception:
            with self._asked_lock:
                self._asked -= 1
            raise

    def cancel(self) -> None:
        self.client.conn.notify("session/cancel", {"sessionId": self.session_id})

    def steer(self, text: str) -> bool:
        """`_codecoder/steer`; True when a turn was running to take it."""
        params = {"sessionId": self.session_id, "text": text}
        return bool(self.client.call("_codecoder/steer", params).get("running"))

    def undo(self, **options: Any) -> dict[str, Any]:
        """`_codecoder/undo` (options in its camelCase: turn, redo, dryRun, force,
        withHistory); the daemon's answer."""
        result: dict[str, Any] = self.client.call(
            "_codecoder/undo", {"sessionId": self.session_id, **options}
        )
        return result

    def next_event(self, timeout: float | None = None) -> RemoteEvent | None:
        try:
            return self._events.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no event within {timeout} s") from None

    def set_mode(self, mode: str) -> None:
        """ACP's session/set_mode: the approval mode, at once (the running turn too)."""
        self.client.call("session/set_mode", {"sessionId": self.session_id, "modeId": mode})

    def shutdown(self, timeout: float | None = 10.0) -> None:
        """Detach: the session goes on in the daemon."""
        with contextlib.suppress(RpcError, TimeoutError, DaemonUnavailable):
            self.client.call("_codecoder/session/detach", {"sessionId": self.session_id}, 5.0)
        self.client.close()
        self._pump.join(timeout)

    # --- ACP → kernel events ---------------------------------------------------------------------

    def _prompt_answered(self, result: Any, error: RpcError | None) -> None:
        with self._asked_lock:
            self._asked = max(self._asked - 1, 0)
        if error is not None:
            self._events.put(Error("daemon", error.message))
            self._events.put(Done(cancelled=False, reason="error"))
            return
        stop = result.get("stopReason") if isinstance(result, dict) else None
        reason: DoneReason = _STOP.get(str(stop), "completed")  # type: ignore[assignment]
        self._events.put(Done(cancelled=reason == "cancelled", reason=reason))

    def _read(self) -> None:
        early, self._early = self._early, []
        while True:
            method, params = early.pop(0) if early else self.client.next_message()
            if method == "__closed__":
                self._events.put(None)
                return
            if method == "__request__":
                self._question(*params)
            elif method == "__answer__":
                self._prompt_answered(*params)
            elif method == "session/update" and isinstance(params, dict):
                for event in self._translate(params.get("update")):
                    self._events.put(event)
            elif isinstance(params, dict):
                event = self._extension(method, params)
                if event is not None:
                    self._events.put(event)

    def _extension(self, method: str, params: dict[str, Any]) -> RemoteEvent | None:
        """Our `_codecoder/…` notifications (docs/acp.md) as kernel events (a status
        `error` is not one: the prompt's JSON-RPC error brings the Error)."""
        from codecoder.kernel import codec

        try:
            if method == "_codecoder/status":
                return msgspec.convert(params, StatusUpdate)
            if method == "_codecoder/usage":
                return msgspec.convert(params, Usage)
            if method == "_codecoder/compacted":
                return msgspec.convert(params, Compacted)
            if method == "_codecoder/subagent":
                inner = codec.convert(params.get("event"), AgentEvent)  # type: ignore[arg-type]
                return Subagent(str(params.get("agentId")), inner)
            if method == "_codecoder/request_resolved":
                return RequestResolved(str(params.get("toolCallId", "")))
            if method == "_codecoder/steered":
                by = "hook" if params.get("by") == "hook" else "user"
                text, next_turn = str(params.get("text", "")), params.get("nextTurn") is True
                client = params.get("client")
                if by == "user" and isinstance(client, str) and client:  # another's steer
                    return Prompted(text, client, "next_turn" if next_turn else "joined")
                return Steered(text, next_turn, by)
            if method == "_codecoder/turn":
                return self._turn(params)
        except (msgspec.ValidationError, TypeError):
            return None
        return None

    def _turn(self, params: dict[str, Any]) -> RemoteEvent | None:
        """`_codecoder/turn`: a turn we did not prompt runs, or ended (its Done, unless a
        prompt of ours waits: the answer to it is our Done)."""
        if params.get("state") == "running":
            return TurnRunning()
        with self._asked_lock:
            if self._asked:
                return None
        reason: DoneReason = _STOP.get(str(params.get("stopReason")), "completed")  # type: ignore[assignment]
        return Done(cancelled=reason == "cancelled", reason=reason)

    def _translate(self, update: Any) -> list[RemoteEvent]:
        if not isinstance(update, dict):
            return []
        kind = update.get("sessionUpdate")
        content = update.get("content")
        if kind == "user_message_chunk" and isinstance(content, dict):
            client = _sender(update)  # another client's prompt; else a steer, said apart
            return [Prompted(str(content.get("text", "")), client)] if client else []
        if kind in ("agent_message_chunk", "agent_thought_chunk") and isinstance(content, dict):
            text = str(content.get("text", ""))
            return [NewToken(text) if kind == "agent_message_chunk" else NewReasoning(text)]
        call_id = str(update.get("toolCallId", ""))
        if kind == "tool_call":
            raw = update.get("rawInput")
            args: dict[str, Any] = raw if isinstance(raw, dict) else {}
            name = _tool_name(update)
            self._names[call_id] = (name, args)
            return [ToolStarted(call_id, name, args)]
        if kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
            name, _ = self._names.pop(call_id, ("tool", {}))
            self._tails.pop(call_id, None)
            text = _content_text(update.get("content"))
            status = "success" if update["status"] == "completed" else "error"
            result = ToolResult(call_id, (Text(text),), status)
            return [ToolFinished(call_id, name, result=result)]
        if kind == "tool_call_update" and call_id in self._names and "content" in update:
            tail = _content_text(update.get("content"))
            chunk = _new_output(self._tails.get(call_id, ""), tail)
            self._tails[call_id] = tail
            return [ToolOutput(call_id, chunk)] if chunk else []
        if kind == "plan" and isinstance(update.get("entries"), list):
            return [TodoUpdated(tuple(_todo(e) for e in update["entries"] if isinstance(e, dict)))]
        if kind == "current_mode_update":
            return [ModeChanged(str(update.get("currentModeId", "")))]
        return []

    def _question(self, request_id: Any, method: str, params: Any) -> None:
        if not isinstance(params, dict):
            return
        if method == "_codecoder/ask_user":
            options = tuple(str(o) for o in params.get("options") or ())
            answer: Oneshot[str] = Oneshot()
            self._events.put(AskUser(str(params.get("question", "")), options, answer))
            threading.Thread(
                target=self._relay_answer, args=(request_id, answer), daemon=True
            ).start()
            return
        if method == "session/request_permission":
            raw = params.get("toolCall")
            call_fields: dict[str, Any] = raw if isinstance(raw, dict) else {}
            args = call_fields.get("rawInput")
            call = ToolCall(
                id=str(call_fields.get("toolCallId", "")),
                name=_tool_name(call_fields),
                args=args if isinstance(args, dict) else {},
            )
            reply: Oneshot[ConfirmReply] = Oneshot()
            self._events.put(ConfirmRequest(call, str(call_fields.get("title", "")), reply))
            threading.Thread(
                target=self._relay_decision, args=(request_id, reply), daemon=True
            ).start()
            return
        self.client.conn.error(request_id, -32601, f"this client does not handle {method}")

    def _relay_answer(self, request_id: Any, answer: Oneshot[str]) -> None:
        try:
            text = answer.recv(timeout=3600)
        except TimeoutError:
            text = "(no answer)"
        self.client.conn.respond(request_id, {"answer": text})

    def _relay_decision(self, request_id: Any, reply: Oneshot[ConfirmReply]) -> None:
        message: str | None = None
        try:
            answer = reply.recv(timeout=3600)
            decision: str | None = answer.decision
            message = answer.message
        except TimeoutError:
            decision = None
        known = {option["optionId"] for option in PERMISSION_OPTIONS}
        outcome: dict[str, Any] = (
            {"outcome": "selected", "optionId": decision}
            if decision in known
            else {"outcome": "cancelled"}
        )
        answer_fields: dict[str, Any] = {"outcome": outcome}
        if message and decision in ("deny", "deny_session"):
            answer_fields["_meta"] = {"codecoder": {"message": message}}  # said to the model
        self.client.conn.respond(request_id, answer_fields)


def who_am_i() -> str:
    """How the other clients of a session name this one: the terminal it runs in."""
    for fd in (0, 1):
        with contextlib.suppress(OSError):
            name = os.ttyname(fd)
            return "terminal " + name.removeprefix("/dev/")
    return f"codecoder (pid {os.getpid()})"


def _sender(update: dict[str, Any]) -> str:
    """Who sent a live user_message_chunk (`_meta.codecoder.client`); "" for one without."""
    meta = update.get("_meta")
    ours = meta.get("codecoder") if isinstance(meta, dict) else None
    client = ours.get("client") if isinstance(ours, dict) else None
    return client if isinstance(client, str) else ""


def _session_meta(options: AgentOptions) -> dict[str, Any]:
    """What `session/new` takes in `_meta.codecoder` (docs/acp.md)."""
    meta: dict[str, Any] = {"approval": options.approval, "maxRounds": options.max_rounds}
    if options.model:
        meta["model"] = options.model
    if options.script:
        meta["script"] = os.path.abspath(options.script)
    if options.sandbox:
        meta["sandbox"] = options.sandbox
    return meta


def _tool_name(call: dict[str, Any]) -> str:
    """The kernel's tool name of an ACP tool call (from its kind and input)."""
    raw = call.get("rawInput")
    args = raw if isinstance(raw, dict) else {}
    kind = call.get("kind")
    if "command" in args:
        return "run_command"
    if kind == "edit":
        return "edit_file" if "old_text" in args else "write_file"
    if kind == "read":
        return "read_file"
    if kind == "search":
        return "grep"
    return str(kind or "tool")


def _content_text(content: Any) -> str:
    parts: list[str] = []
    for item in content if isinstance(content, list) else []:
        inner = item.get("content") if isinstance(item, dict) else None
        if isinstance(inner, dict) and isinstance(inner.get("text"), str):
            parts.append(inner["text"])
    return "\n".join(parts)


def _todo(entry: dict[str, Any]) -> TodoItem:
    status = _TODO_STATUS.get(str(entry.get("status")), "pending")
    return TodoItem(str(entry.get("content", "")), status)  # type: ignore[arg-type]


def _new_output(old: str, new: str) -> str:
    """What a command printed since the last update: the daemon sends the last
    OUTPUT_TAIL characters each time (old + chunk, cut at the front)."""
    if new.startswith(old):
        return new[len(old) :]
    probe = new[: min(len(new), 64)]
    start = old.find(probe, 1)
    while start != -1:  # where the new tail begins inside the old one
        overlap = len(old) - start
        if new.startswith(old[start:]):
            return new[overlap:]
        start = old.find(probe, start + 1)
    return new


def replayed_messages(updates: list[dict[str, Any]]) -> list[Message]:
    """The session/update payloads of a replay (daemon/acp.py history_updates) as
    messages: user and agent chunks, reasoning, tool calls and their results."""
    messages: list[Message] = []
    role = ""
    items: list[Any] = []
    names: dict[str, str] = {}

    def close() -> None:
        if items:
            messages.append(Message(len(messages) + 1, role, tuple(items)))  # type: ignore[arg-type]
            items.clear()

    for update in updates:
        kind = update.get("sessionUpdate")
        content = update.get("content")
        text = str(content.get("text", "")) if isinstance(content, dict) else ""
        wanted = {
            "user_message_chunk": "user",
            "agent_message_chunk": "assistant",
            "agent_thought_chunk": "assistant",
            "tool_call": "assistant",
        }.get(str(kind), "tool")
        if kind == "tool_call_update" and update.get("status") not in ("completed", "failed"):
            continue
        if kind not in _REPLAYED:
            continue
        if wanted != role:
            close()
            role = wanted
        call_id = str(update.get("toolCallId", ""))
        if kind == "tool_call":
            raw = update.get("rawInput")
            names[call_id] = _tool_name(update)
            items.append(ToolCall(call_id, names[call_id], raw if isinstance(raw, dict) else {}))
        elif kind == "tool_call_update":
            status = "success" if update.get("status") == "completed" else "error"
            result_text = _content_text(update.get("content"))
            items.append(ToolResult(call_id, (Text(result_text),), status))
        elif kind == "agent_thought_chunk":
            items.append(Reasoning(text))
        elif items and isinstance(items[-1], Text):
            items[-1] = Text(items[-1].text + text)
        else:
            items.append(Text(text))
    close()
    return messages
