"""The session the client drives: an agent in this process (`LocalBackend`, built by
app/wiring.py) or a session of the running daemon (`RemoteBackend`, through
daemon/client.py's RemoteAgent). Both hand out the same handle surface (send, cancel,
next_event, shutdown); what only one of them can do raises `Unavailable` with a plain
sentence saying so.

Switching model or session builds a new backend (slow: on a worker thread) and closes
the old one; the in-process agent is rebuilt on the same session, so the conversation
goes on with the new model.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from codecoder.app.options import AgentOptions

if TYPE_CHECKING:
    from codecoder.app.wiring import AgentSetup
    from codecoder.approval import ApprovalMode
    from codecoder.daemon.client import DaemonClient, RemoteAgent
    from codecoder.daemon.remote_events import RemoteEvent
    from codecoder.kernel.events import Usage
    from codecoder.kernel.messages import Message
    from codecoder.permissions.chain import RulePolicy


class Unavailable(Exception):
    """This session cannot do that (said to the user as it is)."""


class StartFailed(Exception):
    """The session could not be opened (a usage or configuration problem)."""


class Handle(Protocol):
    def send(self, text: str) -> None: ...

    def steer(self, text: str) -> object: ...

    def cancel(self) -> None: ...

    def next_event(self, timeout: float | None = None) -> RemoteEvent | None: ...

    def shutdown(self, timeout: float | None = 10.0) -> None: ...


class Backend(Protocol):
    handle: Handle
    session_id: str
    workspace: Path
    model: str
    mode: ApprovalMode
    remote: bool
    options: AgentOptions

    @property
    def policy(self) -> RulePolicy | None: ...

    def history(self) -> list[Message]: ...

    def begin_turn(self) -> None: ...

    def add_usage(self, usage: Usage) -> None: ...

    def set_mode(self, mode: ApprovalMode) -> None: ...

    def compact(self) -> None: ...

    def undo(self, **options: Any) -> dict[str, Any]: ...

    def with_model(self, spec: str) -> Backend: ...

    def fresh(self) -> Backend: ...

    def resumed(self, ref: str) -> Backend: ...

    def close(self) -> None: ...


class LocalBackend:
    """An agent in this process, on the session store."""

    remote = False

    def __init__(self, setup: AgentSetup, options: AgentOptions, workspace: Path) -> None:
        self.setup = setup
        self.options = options
        self.workspace = workspace
        self.session_id = setup.session_id
        self.mode: ApprovalMode = options.approval
        self.resumed_session = options.resume is not None or options.continue_
        info = setup.log.info() if setup.log is not None else None
        if options.script:
            self.model = "scripted"
        else:
            self.model = options.model or (info.model if info is not None else "?")
        self.handle: Handle = setup.loop.start()

    @classmethod
    def open(cls, options: AgentOptions, workspace: Path) -> LocalBackend:
        from codecoder.app.wiring import WiringError, build_agent

        try:
            setup = build_agent(options, workspace)
        except WiringError as exc:
            raise StartFailed(str(exc)) from exc
        workspace = setup.loop.workspace  # a resumed session runs where it began
        return cls(setup, options, workspace)

    @property
    def policy(self) -> RulePolicy | None:
        return self.setup.policy

    def history(self) -> list[Message]:
        from codecoder.sessions import SessionStore

        with SessionStore() as store:
            return store.load_messages(self.session_id)

    def begin_turn(self) -> None:
        if self.setup.log is not None:
            self.setup.log.begin_turn()

    def add_usage(self, usage: Usage) -> None:
        if self.setup.log is not None:
            self.setup.log.add_usage(usage)

    def set_mode(self, mode: ApprovalMode) -> None:
        if self.setup.policy is None:
            raise Unavailable("this session has no permission policy to switch")
        self.setup.policy.mode = mode  # as ACP's session/set_mode does: mid-turn too
        self.mode = mode

    def compact(self) -> None:
        assert hasattr(self.handle, "compact")
        self.handle.compact()  # type: ignore[attr-defined]

    def undo(self, **options: Any) -> dict[str, Any]:
        """/undo, /redo (cli/tui/control.py): as `_codecoder/undo` answers; UndoError
        when there is nothing to undo."""
        from codecoder.checkpoints.restore import undo_session

        if self.setup.log is None:
            raise Unavailable("this session keeps no checkpoints")
        if self.setup.checkpoints is not None:
            self.setup.checkpoints.settle()  # the last command's snapshot, if still taken
        store = self.setup.log.store
        return undo_session(store, self.workspace, self.session_id, **options).to_wire()

    def with_model(self, spec: str) -> Backend:
        options = msgspec.structs.replace(
            self.options,
            model=spec,
            script=None,
            resume=self.session_id,
            continue_=False,
            approval=self.mode,
            cwd=str(self.workspace),
        )
        backend = LocalBackend.open(options, self.workspace)
        self._carry(backend)
        return backend

    def fresh(self) -> Backend:
        options = msgspec.structs.replace(
            self.options,
            resume=None,
            continue_=False,
            approval=self.mode,
            model=None if self.options.script else self.model,
            cwd=str(self.workspace),
        )
        return LocalBackend.open(options, self.workspace)

    def resumed(self, ref: str) -> Backend:
        options = msgspec.structs.replace(
            self.options, resume=ref, continue_=False, approval=self.mode, model=None, cwd=None
        )
        if self.options.script:
            options = msgspec.structs.replace(options, model=None)
        return LocalBackend.open(options, self.workspace)

    def _carry(self, backend: LocalBackend) -> None:
        """What the user answered for this session goes on holding after a model switch."""
        old, new = self.setup.policy, backend.setup.policy
        if old is not None and new is not None:
            new.adopt_answers(old)

    def close(self) -> None:
        try:
            self.handle.shutdown()  # the running command's tree is killed first
        finally:
            self.setup.close()


class RemoteBackend:
    """A session of the running daemon; it goes on when the client leaves."""

    remote = True
    policy = None

    def __init__(self, agent: RemoteAgent, options: AgentOptions, workspace: Path) -> None:
        self.agent = agent
        self.handle: Handle = agent
        self.options = options
        self.workspace = workspace
        self.session_id = agent.session_id
        self.mode: ApprovalMode = options.approval
        self.model = _stored_model(agent.session_id) or options.model or "(the daemon's)"
        self.resumed_session = bool(agent.history)

    @classmethod
    def open(
        cls, options: AgentOptions, workspace: Path, session: str | None, client: Any = None
    ) -> RemoteBackend:
        from codecoder.daemon.client import DaemonClient, DaemonUnavailable, RemoteAgent, RpcError

        try:
            connection: DaemonClient = client or DaemonClient()
        except DaemonUnavailable as exc:
            raise StartFailed(f"{exc} (start one with `codecoder daemon --detach`)") from exc
        try:
            agent = RemoteAgent.open(connection, workspace, session, options=options)
        except (RpcError, TimeoutError, DaemonUnavailable, ValueError) as exc:
            connection.close()
            raise StartFailed(str(exc)) from exc
        return cls(agent, options, workspace)

    def history(self) -> list[Message]:
        return list(self.agent.history)

    def begin_turn(self) -> None:
        return None  # the daemon keeps the session's log

    def add_usage(self, usage: Usage) -> None:
        return None

    def set_mode(self, mode: ApprovalMode) -> None:
        self.agent.set_mode(mode)
        self.mode = mode

    def undo(self, **options: Any) -> dict[str, Any]:
        names = {"dry_run": "dryRun", "with_history": "withHistory"}
        return self.agent.undo(**{names.get(k, k): v for k, v in options.items()})

    def compact(self) -> None:
        raise Unavailable(
            "/compact is not available on a daemon session (the daemon has no request for "
            "it yet); it compacts by itself near the context limit"
        )

    def with_model(self, spec: str) -> Backend:
        raise Unavailable(
            "a daemon session keeps the model it was started with: leave and run "
            f"`codecoder -m {spec}` (a new session), or `codecoder --no-daemon --resume "
            f"{self.session_id[:8]} -m {spec}` to go on with this one in this process"
        )

    def fresh(self) -> Backend:
        options = msgspec.structs.replace(self.options, resume=None, continue_=False)
        return RemoteBackend.open(options, self.workspace, None)

    def resumed(self, ref: str) -> Backend:
        from codecoder.sessions import SessionError, SessionStore

        try:
            with SessionStore() as store:
                session = store.resolve(ref)
        except SessionError as exc:
            raise StartFailed(str(exc)) from exc
        return RemoteBackend.open(self.options, self.workspace, session)

    def close(self) -> None:
        self.agent.shutdown()  # detach: the session goes on in the daemon


def _stored_model(session_id: str) -> str | None:
    from codecoder.sessions import SessionError, SessionStore

    try:
        with SessionStore() as store:
            return store.get(session_id).model
    except SessionError:
        return None


def open_backend(
    options: AgentOptions, workspace: Path, *, attach: str | None, daemon: DaemonClient | None
) -> Backend:
    """The session to drive: on the daemon when `daemon` is a connection to it (a new
    session, `attach`, or --continue / --resume loaded there), else in this process."""
    if daemon is None:
        return LocalBackend.open(options, workspace)
    session = attach or options.resume
    if session is None and options.continue_:
        session = _latest_stored(workspace)
    if attach == "" and session is None:
        session = _latest_live(daemon, workspace)
    return RemoteBackend.open(options, workspace, session, daemon)


def _latest_stored(workspace: Path) -> str:
    from codecoder.sessions import SessionStore

    with SessionStore() as store:
        latest = store.latest_for(workspace)
    if latest is None:
        raise StartFailed(f"no session to continue in {workspace}")
    return latest.id


def _latest_live(client: DaemonClient, workspace: Path) -> str:
    client.initialize()
    live = client.call("_codecoder/sessions/list", {})["sessions"]
    here = [s for s in live if s.get("cwd") == str(workspace)]
    if not here:
        raise StartFailed(f"the daemon has no live session in {workspace}")
    return str(here[-1]["sessionId"])
