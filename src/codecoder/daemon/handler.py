"""The ACP handler: one set of methods for every connection, over the daemon's socket
and over stdio (`codecoder acp`), and the hub of live sessions they share.

Requests are handled on the connection's reader thread and never wait for a turn: a
`session/prompt` is queued on its session and answered when its turn is done, by the
session's broadcaster. Extensions live under `_codecoder/` (docs/acp.md).

Nothing of a session is imported before the first session/new or session/load (the
agent's wiring, the kernel, msgspec, the protocol mapping): an editor that starts
`codecoder acp` waits for the answer to `initialize` (docs/benchmarks.md, "Daemon").
"""

from __future__ import annotations

import errno
import os
import resource
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from codecoder import __version__
from codecoder.approval import MODES, ApprovalMode
from codecoder.daemon.rpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    PROTOCOL_VERSION,
    RESOURCE_NOT_FOUND,
    SERVER_ERROR,
    Connection,
    RpcError,
)
from codecoder.sandbox import MODES as SANDBOX_MODES
from codecoder.sandbox import SandboxMode

if TYPE_CHECKING:
    from codecoder.app.options import AgentOptions
    from codecoder.daemon.session import LiveSession


_Unload = tuple[str, "LiveSession | None", "Callable[[], object] | None"]
"""A session the unloader closes: its id, the live session (None: nothing loaded), and
the answer of a session/close waiting for it."""


ID_PREFIX = 4
"""The shortest id prefix that names a session (sessions/store.py MIN_PREFIX, not imported:
the store is loaded with the first session)."""


class UnloadPolicy(NamedTuple):
    """When the hub unloads an idle session (no client attached, no turn running or
    queued): `[daemon] idle_unload` and `max_idle` (docs/config.md says why these)."""

    idle: float = 600.0
    """Seconds an idle session stays loaded."""
    max_idle: int = 16
    """Idle sessions kept loaded at most; past it the one idle longest goes at once."""


class Hub:
    """The live sessions of one process, by id, and the thread that unloads idle ones.

    A live session holds SQLite handles, two threads, and its commands', hooks' and MCP
    servers' processes; a daemon that kept every session it ever ran ran out of files
    at the 163rd. So an idle session is closed once it has been idle `unload.idle`
    seconds, or at once when more than `unload.max_idle` are idle. The hub keeps the
    options it was built with (its model, approval mode, cwd), so a client attaching
    later gets it back as it was, loaded anew from the store: unloading is never seen,
    except as the time a load takes. `session/close` unloads at once.
    """

    def __init__(
        self,
        defaults: AgentOptions | Callable[[], AgentOptions],
        *,
        answer_timeout: float = 300.0,
        unload: UnloadPolicy | Callable[[], UnloadPolicy] = UnloadPolicy,
    ) -> None:
        self._defaults = defaults
        self._unload = unload
        self.answer_timeout = answer_timeout
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._sessions: dict[str, LiveSession] = {}
        self._options: dict[str, AgentOptions] = {}
        """What each session of this process was built with, its mode as it is now; an
        unloaded session's stay here until it is loaded again or closed."""
        self._closes: list[tuple[str, Callable[[], object]]] = []
        """session/close requests for the unloader: the session's id and the answer."""
        self._unloading: dict[str, threading.Event] = {}
        self._unloader: threading.Thread | None = None
        self._closing = False

    @property
    def defaults(self) -> AgentOptions:
        """The options of new sessions. Given as a function, they are made at the first
        session: AgentOptions loads msgspec and the permission modes' module."""
        if callable(self._defaults):
            self._defaults = self._defaults()
        return self._defaults

    @property
    def unload(self) -> UnloadPolicy:
        """Made at the first session, like `defaults` (it reads the user's config)."""
        if callable(self._unload):
            self._unload = self._unload()
        return self._unload

    def new(self, cwd: str, overrides: dict[str, Any] | None = None) -> LiveSession:
        """A new session in `cwd`; `overrides` replace the daemon's defaults for it
        (model, script, approval, max_rounds: `_meta.codecoder` of session/new)."""
        import msgspec

        return self._start(msgspec.structs.replace(self.defaults, cwd=cwd, **(overrides or {})))

    def load(self, session_id: str, cwd: str | None) -> LiveSession:
        """A live session, else one this process unloaded (as it was built), else the
        stored session with the defaults."""
        import msgspec

        session_id = self.resolve(session_id)
        live = self.find(session_id)
        if live is not None:
            _same_folder(session_id, str(live.workspace), cwd)
            return live
        self._wait_unloaded(session_id)
        options = self._unloaded(session_id)
        if options is not None and options.cwd is not None:
            _same_folder(session_id, options.cwd, cwd)
        elif options is None:
            _same_folder(session_id, self._stored_cwd(session_id), cwd)
            options = msgspec.structs.replace(self.defaults, cwd=cwd, resume=session_id)
        return self._start(options)

    @staticmethod
    def _stored_cwd(session_id: str) -> str | None:
        from codecoder.sessions import SessionError, SessionStore

        try:
            with SessionStore() as store:
                return store.get(session_id).cwd
        except SessionError:  # none stored by that id: the load says so itself
            return None

    def attach(
        self, conn: Connection, session_id: Any, *, ask_user: bool, replay: bool, load: bool
    ) -> LiveSession:
        """Subscribe `conn` to a live session, or, with `load`, also to one this process
        unloaded. A session retired while we looked is waited for and loaded again."""
        if not isinstance(session_id, str):
            raise RpcError(INVALID_PARAMS, "`sessionId` must be a string")
        session_id = self.resolve(session_id)
        for _ in range(3):
            live = self.find(session_id)
            if live is None and load and self._unloaded(session_id) is not None:
                live = self.load(session_id, None)
            if live is None:
                raise RpcError(RESOURCE_NOT_FOUND, f"no live session {session_id!r}")
            if live.attach(conn, ask_user=ask_user, replay=replay):
                return live
            self._wait_unloaded(live.id)
        raise RpcError(SERVER_ERROR, f"the session {session_id!r} is being unloaded: try again")

    def resolve(self, ref: str) -> str:
        """The id a client's `sessionId` names: a session's of this process, else the one
        stored session whose id starts with it (ID_PREFIX characters at least, unique
        among all stored sessions, as the command line takes it: sessions/store.py).
        RESOURCE_NOT_FOUND says which sessions an ambiguous prefix matches."""
        with self._lock:
            if ref in self._sessions or ref in self._options:
                return ref
        from codecoder import paths

        if not paths.sessions_db().exists():
            return ref
        from codecoder.sessions import SessionError, SessionStore

        try:
            with SessionStore() as store:
                return store.resolve(ref)
        except LookupError as exc:  # no such id, or an ambiguous prefix
            raise RpcError(RESOURCE_NOT_FOUND, str(exc)) from exc
        except SessionError as exc:  # the store itself: its message says which and why
            raise RpcError(SERVER_ERROR, str(exc)) from exc

    def find(self, session_id: str) -> LiveSession | None:
        """A live session by id, or by a prefix of ID_PREFIX characters or more that
        names one of them."""
        with self._lock:
            if session_id in self._sessions:
                return self._sessions[session_id]
            if len(session_id) < ID_PREFIX:
                return None
            found = [s for key, s in self._sessions.items() if key.startswith(session_id)]
        return found[0] if len(found) == 1 else None

    def get(self, session_id: Any) -> LiveSession:
        if not isinstance(session_id, str):
            raise RpcError(INVALID_PARAMS, "`sessionId` must be a string")
        live = self.find(session_id)
        if live is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"no live session {session_id!r}")
        return live

    def sessions(self) -> list[LiveSession]:
        with self._lock:
            return list(self._sessions.values())

    def set_mode(self, session_id: Any, mode: ApprovalMode) -> None:
        """Switch a live session's mode, or the one an unloaded session comes back in."""
        import msgspec

        live = self.find(session_id) if isinstance(session_id, str) else None
        with self._lock:
            key = live.id if live is not None else self._unloaded_key(session_id)
            if key is not None:
                self._options[key] = msgspec.structs.replace(self._options[key], approval=mode)
        if live is not None:
            live.set_mode(mode)
        elif key is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"no live session {session_id!r}")

    def close_session(self, session_id: str, answer: Callable[[], object]) -> None:
        """ACP `session/close` of a session its client has left: with no other client
        attached, cancel its turn, end it and forget it; `answer` is called (on the
        unloader thread) once its state is committed and its resources freed."""
        live = self.find(session_id)
        with self._lock:
            key = live.id if live is not None else self._unloaded_key(session_id)
            if key is None:
                raise RpcError(RESOURCE_NOT_FOUND, f"no live session {session_id!r}")
            self._closes.append((key, answer))
            self._start_unloader()
            self._wake.notify()
        if live is not None and not live.clients:
            live.cancel()  # at once, as session/cancel: the unloader may be busy

    def _start(self, options: AgentOptions) -> LiveSession:
        from pathlib import Path

        import msgspec

        from codecoder.app.wiring import WiringError, build_agent
        from codecoder.config import ConfigError
        from codecoder.daemon.session import LiveSession

        workspace = Path(options.cwd or ".").expanduser()
        if not workspace.is_absolute() or not workspace.is_dir():
            raise RpcError(
                INVALID_PARAMS, f"`cwd` must be an existing absolute folder: {workspace}"
            )
        with self._lock:
            if self._closing:
                raise RpcError(SERVER_ERROR, "the agent is shutting down")
        try:
            self.unload  # noqa: B018 (read: the config's errors come before a session's)
            setup = build_agent(options, workspace.resolve())
        except (WiringError, ConfigError) as exc:
            raise RpcError(SERVER_ERROR, str(exc)) from exc
        with self._lock:
            existing = self._sessions.get(setup.session_id)
            if existing is not None:  # loaded twice at once: keep the first
                setup.close()
                return existing
            live = LiveSession(
                setup,
                answer_timeout=self.answer_timeout,
                on_end=self._ended,
                on_idle=self._idle,
            )
            self._sessions[live.id] = live
            self._options[live.id] = msgspec.structs.replace(
                options, cwd=str(live.workspace), resume=live.id, continue_=False
            )
            self._start_unloader()
        return live

    def _ended(self, live: LiveSession) -> None:
        with self._lock:
            if self._sessions.get(live.id) is live:
                del self._sessions[live.id]

    def _idle(self, live: LiveSession) -> None:
        with self._lock:
            self._wake.notify()

    def _unloaded(self, session_id: str) -> AgentOptions | None:
        with self._lock:
            key = self._unloaded_key(session_id)
            return self._options[key] if key is not None else None

    def _unloaded_key(self, session_id: str) -> str | None:
        """Under the lock: the id of an unloaded session `session_id` names (the id or a
        prefix of ID_PREFIX characters or more of one)."""
        if session_id in self._options and session_id not in self._sessions:
            return session_id
        if len(session_id) < ID_PREFIX:
            return None
        found = [
            key for key in self._options if key.startswith(session_id) and key not in self._sessions
        ]
        return found[0] if len(found) == 1 else None

    def _wait_unloaded(self, session_id: str) -> None:
        """Let an unload of the session under way finish: its store is then settled."""
        with self._lock:
            events = [e for key, e in self._unloading.items() if key.startswith(session_id)]
        for event in events:
            event.wait(30)

    # --- the unloader ------------------------------------------------------------------

    def _start_unloader(self) -> None:
        """Under the lock: the unloader thread, from the first session on."""
        if self._unloader is None and not self._closing:
            self._unloader = threading.Thread(target=self._unload_loop, name="unload", daemon=True)
            self._unloader.start()

    def _unload_loop(self) -> None:
        """Wait for the next session due (a timed wait on the condition the sessions'
        idle notices wake), retire it under the hub's lock, close it outside it."""
        while True:
            with self._lock:
                due, wait = self._due()
                while not due and not self._closing:
                    self._wake.wait(wait)
                    due, wait = self._due()
                if not due:
                    return
            for session_id, live, answer in due:
                try:
                    if live is not None:
                        live.close()
                finally:
                    with self._lock:
                        done = self._unloading.pop(session_id, None)
                    if done is not None:
                        done.set()
                    if answer is not None:
                        answer()

    def _due(self) -> tuple[list[_Unload], float | None]:
        """Under the lock: the sessions to close now, retired and out of `_sessions`,
        and how long to wait for the next one."""
        due: list[_Unload] = []
        for session_id, answer in self._closes:
            live = self._sessions.get(session_id)
            if live is None or live.retire(running=True):
                self._options.pop(session_id, None)  # closed: forgotten
                due.append(self._retired(session_id, live, answer))
            else:  # another client attached meanwhile: it goes on for them
                due.append((session_id, None, answer))
        self._closes.clear()
        if self._closing:
            return due, None
        policy = self.unload
        idle = [(live.idle_since, live) for live in self._sessions.values()]
        idle = sorted(((t, live) for t, live in idle if t is not None), key=lambda p: p[0])
        now = time.monotonic()
        for rank, (since, live) in enumerate(idle):
            if len(idle) - rank <= policy.max_idle and since + policy.idle > now:
                return due, since + policy.idle - now
            if live.retire():
                due.append(self._retired(live.id, live, None))
        return due, None

    def _retired(
        self, session_id: str, live: LiveSession | None, answer: Callable[[], object] | None
    ) -> _Unload:
        """Under the lock: a retired session out of service, its unload under way."""
        if live is not None:
            del self._sessions[session_id]
            self._unloading[session_id] = threading.Event()
        return session_id, live, answer

    def close(self, timeout: float = 10.0) -> None:
        """Cancel every turn and end every session, its state committed."""
        with self._lock:
            self._closing = True
            sessions = list(self._sessions.values())
            self._wake.notify()
            unloader = self._unloader
        for live in sessions:
            live.cancel()
        for live in sessions:
            live.close(timeout)
        if unloader is not None:
            unloader.join(timeout)


class _Client:
    """What the handler knows of one connection."""

    def __init__(self) -> None:
        self.initialized = False
        self.ask_user = False
        self.sessions: set[str] = set()
        self.label = ""
        """Who this client is, as the other clients of a session are told (its
        clientInfo's title, else its name)."""


Method = Callable[["AcpHandler", Connection, Any], Any]
_LATER = object()
"""A method's result when it answers later (session/prompt)."""


class AcpHandler:
    """Implements rpc.Handler for ACP v1 and the `_codecoder/` extensions."""

    def __init__(
        self,
        hub: Hub,
        *,
        on_shutdown: Callable[[], object] = lambda: None,
        name: str = "codecoder",
        socket: str | None = None,
    ) -> None:
        self.hub = hub
        self._on_shutdown = on_shutdown
        self._name = name
        self._socket = socket
        """The daemon's socket, for `_codecoder/daemon/status` (None: `codecoder acp`)."""
        self._started = time.time()
        self._lock = threading.Lock()
        self._clients: dict[Connection, _Client] = {}

    # --- rpc.Handler ---------------------------------------------------------------------

    def on_request(self, conn: Connection, request_id: Any, method: str, params: Any) -> None:
        handler = _METHODS.get(method)
        if handler is None:
            conn.error(request_id, METHOD_NOT_FOUND, f"unknown method {method!r}")
            return
        try:
            result = handler(self, conn, _Params(params, request_id))
        except Exception as exc:  # a bug must cost one request, not the connection
            if _out_of_files():  # whatever failed for it: the store, a pipe, a thread
                conn.error(request_id, SERVER_ERROR, out_of_files_message())
            elif isinstance(exc, RpcError):
                conn.error(request_id, exc.code, exc.message, exc.data)
            else:
                conn.error(request_id, INTERNAL_ERROR, f"internal error: {exc!r}")
            return
        if result is not _LATER:
            conn.respond(request_id, result)

    def on_notification(self, conn: Connection, method: str, params: Any) -> None:
        """Only `session/cancel`; a notification has no answer, so a bad one is dropped."""
        if method != "session/cancel" or not isinstance(params, dict):
            return
        session_id = params.get("sessionId")
        live = self.hub.find(session_id) if isinstance(session_id, str) else None
        if live is not None:
            live.cancel()

    def on_close(self, conn: Connection) -> None:
        with self._lock:
            client = self._clients.pop(conn, None)
        for session_id in client.sessions if client is not None else ():
            live = self.hub.find(session_id)
            if live is not None:
                live.detach(conn)

    def client(self, conn: Connection) -> _Client:
        with self._lock:
            return self._clients.setdefault(conn, _Client())

    # --- methods -----------------------------------------------------------------------------

    def initialize(self, conn: Connection, params: _Params) -> dict[str, Any]:
        version = params.get("protocolVersion")
        if not isinstance(version, int) or isinstance(version, bool):
            raise RpcError(INVALID_PARAMS, "`protocolVersion` must be an integer")
        client = self.client(conn)
        client.initialized = True
        capabilities = params.get("clientCapabilities")
        meta = capabilities.get("_meta") if isinstance(capabilities, dict) else None
        ours = meta.get("codecoder") if isinstance(meta, dict) else None
        client.ask_user = isinstance(ours, dict) and ours.get("askUser") is True
        client.label = _label(params.get("clientInfo"))
        return {
            "protocolVersion": PROTOCOL_VERSION,  # the one we speak, whatever was asked
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "sessionCapabilities": {"close": {}},
            },
            "agentInfo": {"name": self._name, "title": "CodeCoder", "version": __version__},
            "authMethods": [],
        }

    def new_session(self, conn: Connection, params: _Params) -> dict[str, Any]:
        live = self.hub.new(params.text("cwd"), _session_overrides(params.get("_meta")))
        self._attach(conn, live.id, replay=False)
        return {"sessionId": live.id, "modes": _modes(live)}

    def load_session(self, conn: Connection, params: _Params) -> dict[str, Any]:
        loaded = self.hub.load(params.text("sessionId"), params.optional_text("cwd"))
        live = self._attach(conn, loaded.id, replay=True)
        return {"modes": _modes(live)}

    def attach(self, conn: Connection, params: _Params) -> dict[str, Any]:
        live = self._attach(conn, params.get("sessionId"), replay=True)
        return {"sessionId": live.id, "modes": _modes(live)}

    def detach(self, conn: Connection, params: _Params) -> dict[str, Any]:
        live = self.hub.get(params.get("sessionId"))
        live.detach(conn)
        self.client(conn).sessions.discard(live.id)
        return {}

    def close_session(self, conn: Connection, params: _Params) -> object:
        """ACP `session/close`: the client is done with the session. It is detached; with
        no other client attached, its turn is cancelled and it is unloaded, and the
        answer comes once it is (docs/acp.md)."""
        session_id = params.text("sessionId")
        live = self.hub.find(session_id)
        if live is not None:
            live.detach(conn)
            self.client(conn).sessions.discard(live.id)
        request_id = params.request_id
        self.hub.close_session(session_id, lambda: conn.respond(request_id, {}))
        return _LATER

    def prompt(self, conn: Connection, params: _Params) -> object:
        live = self.hub.get(params.get("sessionId"))
        if not live.attached(conn):
            raise RpcError(SERVER_ERROR, "attach to the session first (session/load)")
        from codecoder.daemon import acp  # loaded with the session already

        try:
            text = acp.prompt_text(params.get("prompt"), live.workspace)
        except ValueError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc
        live.prompt(conn, params.request_id, text, self.client(conn).label)
        return _LATER

    def steer(self, conn: Connection, params: _Params) -> dict[str, Any]:
        """`_codecoder/steer`: the text joins the running turn at its next round boundary
        (or is the next turn's message if the turn ends first); with no turn running it
        runs as one. `running` says which."""
        live = self.hub.get(params.get("sessionId"))
        if not live.attached(conn):
            raise RpcError(SERVER_ERROR, "attach to the session first (session/load)")
        return {"running": live.steer(conn, params.text("text"), self.client(conn).label)}

    def undo(self, conn: Connection, params: _Params) -> dict[str, Any]:
        """`_codecoder/undo`: put back the files a turn of the session changed (or, with
        `redo`, what an undo took away); refused, with the files, where one changed since."""
        live = self.hub.get(params.get("sessionId"))
        if not live.attached(conn):
            raise RpcError(SERVER_ERROR, "attach to the session first (session/load)")
        turn = params.get("turn")
        if turn is not None and (not isinstance(turn, int) or isinstance(turn, bool)):
            raise RpcError(INVALID_PARAMS, "`turn` must be an integer")
        flags = {}
        for key, name in (("redo", "redo"), ("dryRun", "dry_run"), ("force", "force"),
                          ("withHistory", "with_history")):  # fmt: skip
            value = params.get(key)
            if value is not None and not isinstance(value, bool):
                raise RpcError(INVALID_PARAMS, f"`{key}` must be true or false")
            flags[name] = bool(value)
        if flags["redo"] and flags["with_history"]:
            raise RpcError(INVALID_PARAMS, "`withHistory` rewinds with an undo, not a redo")
        return live.undo(turn=turn, **flags)

    def set_mode(self, conn: Connection, params: _Params) -> dict[str, Any]:
        mode = params.get("modeId")
        if mode not in MODES:
            raise RpcError(INVALID_PARAMS, f"`modeId` must be one of {', '.join(MODES)}")
        self.hub.set_mode(params.get("sessionId"), _mode(mode))
        return {}

    def list_sessions(self, conn: Connection, params: _Params) -> dict[str, Any]:
        return {"sessions": self._sessions(), "pid": os.getpid()}

    def status(self, conn: Connection, params: _Params) -> dict[str, Any]:
        """`_codecoder/daemon/status`: what `codecoder daemon status` shows, asked of the
        process itself, since only it knows its sessions and who is attached."""
        with self._lock:
            connections = len(self._clients)
        return {
            "pid": os.getpid(),
            "version": __version__,
            "socket": self._socket,
            "startedAt": round(self._started, 3),
            "uptime": round(time.time() - self._started, 3),
            "connections": connections,
            "sessions": self._sessions(),
        }

    def _sessions(self) -> list[dict[str, Any]]:
        return [
            {
                "sessionId": live.id,
                "cwd": str(live.workspace),
                "mode": live.mode,
                "running": live.running,
                "clients": live.clients,
            }
            for live in self.hub.sessions()
        ]

    def shutdown(self, conn: Connection, params: _Params) -> dict[str, Any]:
        threading.Thread(target=self._on_shutdown, name="shutdown", daemon=True).start()
        return {}

    def _attach(self, conn: Connection, session_id: Any, *, replay: bool) -> LiveSession:
        client = self.client(conn)
        live = self.hub.attach(conn, session_id, ask_user=client.ask_user, replay=replay, load=True)
        client.sessions.add(live.id)
        return live


class _Params:
    """A request's params, checked as they are read (INVALID_PARAMS otherwise)."""

    def __init__(self, params: Any, request_id: Any) -> None:
        if params is not None and not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "`params` must be an object")
        self._params: dict[str, Any] = params or {}
        self.request_id = request_id

    def get(self, key: str) -> Any:
        return self._params.get(key)

    def text(self, key: str) -> str:
        value = self._params.get(key)
        if not isinstance(value, str) or not value:
            raise RpcError(INVALID_PARAMS, f"`{key}` must be a non-empty string")
        return value

    def optional_text(self, key: str) -> str | None:
        value = self._params.get(key)
        return value if isinstance(value, str) and value else None


LABEL_LENGTH = 80
"""Characters of a client's label kept (it is shown on every prompt it sends)."""


def _label(info: Any) -> str:
    """A client's name for the others (ACP's `clientInfo`: `title`, else `name`)."""
    if not isinstance(info, dict):
        return ""
    for key in ("title", "name"):
        value = info.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:LABEL_LENGTH]
    return ""


def _session_overrides(meta: Any) -> dict[str, Any]:
    """`_meta.codecoder` of session/new: `model`, `script`, `approval`, `maxRounds`,
    `sandbox`."""
    ours = meta.get("codecoder") if isinstance(meta, dict) else None
    if not isinstance(ours, dict):
        return {}
    found: dict[str, Any] = {}
    for key, field in (("model", "model"), ("script", "script")):
        if key in ours:
            if not isinstance(ours[key], str):
                raise RpcError(INVALID_PARAMS, f"`_meta.codecoder.{key}` must be a string")
            found[field] = ours[key]
    if "approval" in ours:
        found["approval"] = _mode(ours["approval"] if isinstance(ours["approval"], str) else "")
    if "sandbox" in ours:
        found["sandbox"] = _sandbox_mode(ours["sandbox"])
    rounds = ours.get("maxRounds")
    if rounds is not None:
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
            raise RpcError(INVALID_PARAMS, "`_meta.codecoder.maxRounds` must be a positive integer")
        found["max_rounds"] = rounds
    return found


def out_of_files_message() -> str:
    """What a client is told when the process can open no more files."""
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return (
        f"the agent has run out of open files (its limit is {limit}): close sessions you "
        "are done with (session/close), or raise the limit (ulimit -n) and restart it"
    )


FILE_HEADROOM = 16
"""Files a session needs to load, about twice over (its store's three, its pipes…)."""


def _out_of_files() -> bool:
    """Whether the process is (nearly) out of files, asked when a request failed: for
    want of a file it fails in many ways (SQLite's "unable to open database file", a
    pipe's or a thread's OSError), and what it opened before is closed again by the
    time its error is worded, so the process is asked rather than the error."""
    try:
        open_now = len(os.listdir("/proc/self/fd"))
    except FileNotFoundError:  # no /proc: not Linux, nothing to tell
        return False
    except OSError as exc:
        return exc.errno in (errno.EMFILE, errno.ENFILE)
    return open_now + FILE_HEADROOM > resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _sandbox_mode(value: Any) -> SandboxMode:
    for mode in SANDBOX_MODES:
        if value == mode:
            return mode
    raise RpcError(
        INVALID_PARAMS, f"`_meta.codecoder.sandbox` must be one of {', '.join(SANDBOX_MODES)}"
    )


def _modes(live: LiveSession) -> dict[str, Any]:
    from codecoder.daemon import acp  # loaded with the session already

    return acp.mode_state(live.mode)


def _mode(text: str) -> ApprovalMode:
    for mode in MODES:
        if text == mode:
            return mode
    raise RpcError(INVALID_PARAMS, f"unknown mode {text!r}")


_METHODS: dict[str, Method] = {
    "initialize": AcpHandler.initialize,
    "session/new": AcpHandler.new_session,
    "session/load": AcpHandler.load_session,
    "session/prompt": AcpHandler.prompt,
    "session/set_mode": AcpHandler.set_mode,
    "session/close": AcpHandler.close_session,
    "_codecoder/sessions/list": AcpHandler.list_sessions,
    "_codecoder/daemon/status": AcpHandler.status,
    "_codecoder/session/attach": AcpHandler.attach,
    "_codecoder/session/detach": AcpHandler.detach,
    "_codecoder/shutdown": AcpHandler.shutdown,
    "_codecoder/steer": AcpHandler.steer,
    "_codecoder/undo": AcpHandler.undo,
}


def _same_folder(session_id: str, stored: str | None, cwd: str | None) -> None:
    """A session runs in its own folder: an editor in folder A that loads folder B's
    session (a short prefix may name any folder's) would run it on A's files while its
    history speaks of B's. Refused, naming the folder to load it from."""
    if stored is None or cwd is None:
        return
    if os.path.realpath(stored) != os.path.realpath(cwd):
        raise RpcError(
            INVALID_PARAMS,
            f"session {session_id[:8]} belongs to {stored}, not {cwd}: load it with that cwd",
        )
