"""Building an agent: provider, tools, policy, store, prompt and compactor wired into an
AgentLoop (the package docstring says who uses it)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder import paths
from codecoder.app.offered import OfferedTools
from codecoder.app.options import AgentOptions
from codecoder.config import ConfigError, Layers, read_toml
from codecoder.context.compaction import ThreadedCompactor, context_window
from codecoder.context.prompt import ProjectContext, PromptBuilder
from codecoder.context.session import SessionFacts
from codecoder.kernel.cancel import CancelToken
from codecoder.kernel.events import StatusUpdate
from codecoder.kernel.journal import Journal
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.ports import (
    PermissionPolicy,
    ProviderClient,
    ProviderError,
    ProviderRequest,
    StreamEvent,
    Tool,
)
from codecoder.kernel.trace import Tracer
from codecoder.permissions.chain import RulePolicy
from codecoder.permissions.modes import ApprovalMode
from codecoder.tools.environment import ChildEnvironment
from codecoder.tools.process import ProcessManager

if TYPE_CHECKING:
    from codecoder.checkpoints.record import Checkpoints
    from codecoder.hooks.bridge import HookGates
    from codecoder.kernel.ports import ToolSource
    from codecoder.mcp.config import Selection
    from codecoder.mcp.manager import McpManager
    from codecoder.sandbox.runtime import Sandbox
    from codecoder.sessions import SessionLog, SessionStore
    from codecoder.tools.ssrf import Guard


class WiringError(Exception):
    """A usage or configuration problem found while wiring (exit code 2)."""


class AgentSetup(msgspec.Struct):
    loop: AgentLoop
    session_id: str
    manager: ProcessManager
    tracer: Tracer | None = None
    first_turn: int = 0
    log: SessionLog | None = None
    closers: list[Callable[[], object]] = msgspec.field(default_factory=list)
    policy: RulePolicy | None = None
    sandbox: Sandbox | None = None
    """How commands are confined; plan gates ask it too (`sandbox.confine`)."""
    checkpoints: Checkpoints | None = None
    """What each turn changed (checkpoints/); an undo in this process settles it first."""

    def kill_processes(self) -> None:
        self.manager.kill_all()

    def close(self) -> None:
        for close in reversed(self.closers):
            close()
        if self.tracer is not None:
            self.tracer.close()


def default_tools(
    workspace: Path,
    provider: ProviderClient,
    manager: ProcessManager,
    user_config: dict[str, Any],
    policy: PermissionPolicy,
    *,
    sandbox: Sandbox | None = None,
    tracer: Tracer | None = None,
    wrap: Callable[[list[Tool]], list[Tool]] | None = None,
    project: ProjectContext | None = None,
) -> list[Tool]:
    """The main agent's toolbox: files, search, commands, questions, checklist, skills
    (where there are any) and sub-agents; `sandbox` confines the commands and grep's
    children, `tracer` gets the sub-agents' lines, `wrap` goes around every tool, the
    sub-agents' too (checkpoints, hooks: app/control.py), and sub-agents are told of
    the `project` (its environment, AGENTS.md, CONTEXT.md)."""
    from codecoder.app.children import SubagentFactory, SubagentSettings
    from codecoder.context.files import project_levels
    from codecoder.context.profiles import load_profiles
    from codecoder.context.skills import has_skills
    from codecoder.tools.ask import AskUserTool
    from codecoder.tools.files import EditFile, ListDir, ReadFile, WriteFile
    from codecoder.tools.ledger import ReadLedger
    from codecoder.tools.search import Glob, Grep
    from codecoder.tools.shell import RunCommand
    from codecoder.tools.skills import SkillTool
    from codecoder.tools.todo import TodoWriteTool

    reads = ReadLedger()  # what this session read, so that writes do not clobber the unseen
    tools: list[Tool] = [
        ReadFile(reads),
        WriteFile(reads),
        EditFile(reads, workspace),
        ListDir(),
        Glob(),
        Grep(sandbox=sandbox),
        RunCommand(manager, sandbox),
        AskUserTool(),
        TodoWriteTool(),
    ]
    if has_skills(project_levels(workspace)):
        tools.append(SkillTool())
    tools.append(web_fetch(user_config))
    settings = SubagentSettings.from_config(_table(user_config, "subagents"))
    factory = SubagentFactory(
        provider,
        workspace,
        manager,
        settings,
        profiles=load_profiles(workspace),
        policy=policy,
        sandbox=sandbox,
        tracer=tracer,
        wrap=wrap,
        project=project,
    )
    agent = factory.agent_tool()
    if agent is not None:
        tools.append(agent)
    return wrap(tools) if wrap is not None else tools


def web_fetch(user_config: dict[str, Any]) -> Tool:
    """web_fetch with the guard of `[web] allow_private` (the user's config only: a
    repository must not open the user's network); its HTTP machinery loads at its first
    call."""
    from codecoder.tools.web import WebFetch

    return WebFetch(_web_guard(user_config))


def _web_guard(user_config: dict[str, Any]) -> Guard | None:
    """The guard for `[web] allow_private` (None without exceptions: the default guard);
    WiringError for an entry it cannot read."""
    entries = _table(user_config, "web").get("allow_private") or []
    if not entries:
        return None
    from codecoder.tools.ssrf import Guard

    try:
        return Guard(entries)
    except ValueError as exc:
        raise WiringError(f"[web] allow_private: {exc}") from exc


def _mcp_servers(
    workspace: Path, user_config: dict[str, Any], trusted: bool, mode: ApprovalMode
) -> Selection | None:
    """The session's MCP servers (docs/mcp.md): `[mcp.servers.*]` of the user's config,
    and of the project's once the folder is trusted; None when there are none, and then
    nothing of the MCP client is imported. Read-only mode offers no server's tools: what
    they do is not known."""
    project: dict[str, Any] = {}
    if trusted:
        folder = paths.project_dir(workspace)
        try:
            project = Layers(
                user={},
                project=read_toml(folder / "config.toml"),
                project_local=read_toml(folder / "config.local.toml"),
            ).merged()
        except ConfigError as exc:
            raise WiringError(str(exc)) from exc
    if mode == "read-only" or not (_table(user_config, "mcp") or _table(project, "mcp")):
        return None
    from codecoder.mcp.config import select

    try:
        return select(workspace, user_config, project)
    except ConfigError as exc:
        raise WiringError(str(exc)) from exc


def _start_mcp(selection: Selection | None, sandbox: Sandbox) -> McpManager | None:
    """The servers start in the background once the session's first request is out (the
    loop's provider goes through `McpManager.gate`): their start-up never competes with
    building and sending it, and the first turn never waits for them. A project's stdio
    servers run in the session's `sandbox` (docs/mcp.md), closed after them."""
    if selection is None:
        return None
    from codecoder.mcp.manager import McpManager

    manager = McpManager(selection, sandbox=sandbox)
    manager.start(now=False)
    return manager


def _table(config: dict[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key)
    return value if isinstance(value, dict) else {}


SCRIPTED = "scripted"
"""The model name a session run on `--script` records."""


def build_provider(
    options: AgentOptions, user_config: dict[str, Any], session_model: str | None = None
) -> tuple[ProviderClient, str]:
    """The provider and the model's name: `--script` means the scripted provider;
    otherwise `--model`, else the model a resumed session ran with (`session_model`),
    else the config's default model, through the registry."""
    if options.script:
        from codecoder.providers.scripted import ScriptedProvider, ScriptError, load_script

        if options.model:
            raise WiringError("--script and --model exclude each other")
        try:
            return ScriptedProvider(load_script(options.script)), SCRIPTED
        except ScriptError as exc:
            raise WiringError(str(exc)) from exc
    from codecoder.providers.registry import resolve

    spec = options.model or session_model
    if spec == SCRIPTED:
        raise WiringError(
            "this session ran on a script: give --script FILE, or -m PROVIDER/MODEL "
            "to go on with a model"
        )
    try:
        client = resolve(spec, user_config)
    except ProviderError as exc:
        hint = _model_hint(spec, user_config) if spec else None
        raise WiringError(exc.message + (f"; did you mean {hint}?" if hint else "")) from exc
    return client, f"{client.provider}/{client.model}"


def _model_hint(spec: str, config: dict[str, Any]) -> str | None:
    """A known `provider/model` close to a spec that names no model or an unknown
    provider (`gpt-5` → `openai/gpt-5`, `opneai/gpt-5` → `openai/gpt-5`, `nope/gpt-5` →
    `openai/gpt-5`). Only a real provider is suggested, and only when it is clearly what
    was meant (a known model, or a near spelling of the provider): `nope/x` gets no
    suggestion, not `openai/x`; the error lists the known providers anyway."""
    import difflib

    from codecoder.providers.available import known_models
    from codecoder.providers.registry import all_providers

    try:
        providers = all_providers(config)
        known = known_models(config)
    except Exception:  # a broken [providers] table has its own message
        return None
    provider, slash, model = spec.strip().partition("/")
    if not slash:
        by_model = {k.partition("/")[2]: k for k in reversed(known)}
        close = difflib.get_close_matches(provider, list(by_model), n=1, cutoff=0.6)
        return by_model[close[0]] if close else None
    if provider in providers or not model:
        return None
    with_model = {
        p: k for k in known for p, _, m in [k.partition("/")] if m == model and p in providers
    }
    if with_model:  # the model is known: under the provider spelled most like the one given
        close = difflib.get_close_matches(provider, list(with_model), n=1, cutoff=0.0)
        return with_model[close[0]] if close else next(iter(with_model.values()))
    close = difflib.get_close_matches(provider, list(providers), n=1, cutoff=0.8)
    return f"{close[0]}/{model}" if close else None


def build_agent(options: AgentOptions, workspace: Path) -> AgentSetup:
    """The agent of one `exec` run, its session opened (new, continued or resumed)."""
    from codecoder.app import control
    from codecoder.sessions import SessionError, SessionStore

    if options.max_rounds < 1:
        raise WiringError("--max-rounds must be at least 1")
    user_config = _user_config()
    store = SessionStore()
    try:
        messages: list[Any] = []
        session_id = _pick_session(store, options, workspace)
        info = store.get(session_id) if session_id is not None else None
        provider, model = build_provider(options, user_config, info.model if info else None)
        compactor = _compactor(provider, model, user_config)  # config checked before a session
        if info is not None and options.cwd is None:
            recorded = Path(info.cwd)  # a resumed session runs where it began
            workspace = recorded if recorded.is_dir() else workspace
        policy = _policy(workspace, options.approval)
        sandbox = build_sandbox(options, user_config, policy)
        tracer = _tracer(options.trace, options.trace_bodies)
        _web_guard(user_config)  # a bad [web] entry stops us before a session is made
        servers = _mcp_servers(workspace, user_config, policy.trusted, options.approval)
        hook_set = control.hook_set(workspace, user_config, policy.trusted)
        if session_id is None:
            session_id = store.create(workspace, model)
        log = control.TurnLog(store, session_id)
        if info is not None:
            messages = log.resume()
        first_turn = log.info().turns
        next_id = (store.last_message_id(session_id) or 0) + 1
    except (SessionError, WiringError, control.ControlError) as exc:
        store.close()
        raise WiringError(str(exc)) from exc
    manager = ProcessManager(environment=_child_environment(user_config))
    mcp = _start_mcp(servers, sandbox)
    hooks = control.hook_runner(hook_set, manager, workspace, session_id, sandbox)
    kept = control.checkpoints(store, session_id, workspace, log, user_config)
    wrap = control.tool_wrapper(kept, hooks)
    offered, prompt = session_toolbox(
        workspace,
        provider,
        manager,
        user_config,
        policy,
        sandbox=sandbox,
        attended=options.attended,
        tracer=tracer,
        wrap=wrap,
    )
    journal = _journal(log, user_config)
    source: ToolSource | None = mcp
    gates: HookGates | None = None
    if hooks is not None:
        from codecoder.hooks.bridge import HookGates, HookNotices

        source, gates = HookNotices(hooks, mcp), HookGates(hooks, resumed=info is not None)
    if policy.held_back is not None:
        source = StartNotices([StatusUpdate("idle", policy.held_back, "permissions")], source)
    offered.inner = kept.with_notices(source)
    loop = AgentLoop(
        provider if mcp is None else mcp.gate(provider),
        [],
        workspace,
        policy=policy,
        history=log,
        prompt=prompt,
        max_rounds=options.max_rounds,
        tracer=tracer,
        messages=messages,
        first_turn=first_turn,
        next_id=next_id,
        compactor=compactor,
        tool_source=journal.source(offered),
        journal=journal,
        prompt_gate=gates if control.prompt_hooks(hooks) else None,
        stop_gate=gates if hooks is not None and hooks.has("stop") else None,
    )
    log.turn = kept.turn = lambda: loop.turn
    setup = AgentSetup(
        loop=loop,
        session_id=session_id,
        manager=manager,
        tracer=tracer,
        first_turn=first_turn,
        log=log,
        closers=[sandbox.close, _closer(provider), store.close, compactor.close, manager.close],
        policy=policy,
        sandbox=sandbox,
    )
    if mcp is not None:
        setup.closers.append(mcp.close)  # closed first: servers still starting are killed
    setup.checkpoints = kept
    setup.closers.append(kept.close)  # before the store closes: a last snapshot is kept
    if hooks is not None:
        hooks.turn = lambda: loop.turn
        if hooks.has("pre_compact"):
            from codecoder.hooks.bridge import CompactionGate

            compactor.before = gate = CompactionGate(hooks)
            setup.closers.append(gate.close)  # first: a hook still running is killed
    return setup


class StartNotices:
    """A ToolSource whose tools are `inner`'s (none without one) and whose notices add
    `lines` known when the session was built (project allow rules not applied), once."""

    def __init__(self, lines: list[StatusUpdate], inner: ToolSource | None) -> None:
        self._lines = lines
        self.inner = inner

    def tools(self) -> Sequence[Tool]:
        return self.inner.tools() if self.inner is not None else ()

    def notices(self) -> Sequence[StatusUpdate]:
        found = list(self.inner.notices()) if self.inner is not None else []
        found += self._lines  # the loop says them in the state it is in
        self._lines = []
        return found


def _journal(log: SessionLog, config: dict[str, Any]) -> Journal:
    """Every session records what a replay needs (`[record] enabled = false`: nothing)."""
    if _table(config, "record").get("enabled", True) is False:
        return Journal()
    from codecoder.kernel.journal import Recorder
    from codecoder.sessions.records import cap_result

    return Recorder(log, stored=cap_result)


def _tracer(path: str | None, bodies: bool) -> Tracer | None:
    if not path:
        return None
    try:
        return Tracer(path, bodies=bodies)
    except OSError as exc:
        raise WiringError(f"cannot write the trace {path}: {exc.strerror}") from exc


def _closer(provider: ProviderClient) -> Callable[[], object]:
    close = getattr(provider, "close", None)
    return close if callable(close) else (lambda: None)


def _pick_session(store: SessionStore, options: AgentOptions, workspace: Path) -> str | None:
    """The session to continue: `--resume ID`, `--continue` (this workspace's latest),
    or None for a new one."""
    if options.resume is not None:  # "" too: an id that matches nothing, not a new session
        return store.resolve(options.resume)
    if options.continue_:
        latest = store.latest_for(workspace)
        if latest is None:
            raise WiringError(f"no session to continue in {workspace}")
        return latest.id
    return None


def _compactor(provider: ProviderClient, model: str, config: dict[str, Any]) -> ThreadedCompactor:
    """`[compaction] threshold` (0 to 1, default 0.8) of the model's context window."""
    table = _table(config, "compaction")
    threshold = table.get("threshold", 0.8)
    if not isinstance(threshold, int | float) or not 0 < threshold <= 1:
        raise WiringError("[compaction] threshold must be a number between 0 and 1")
    window = context_window(model, config)
    return ThreadedCompactor(provider, window=window, threshold=float(threshold))


def _policy(workspace: Path, mode: ApprovalMode) -> RulePolicy:
    try:
        return RulePolicy.load(workspace, mode)
    except ConfigError as exc:
        raise WiringError(str(exc)) from exc


def build_sandbox(
    options: AgentOptions, user_config: dict[str, Any], policy: RulePolicy
) -> Sandbox:
    """The sandbox of commands (docs/sandbox.md): `--sandbox`, else `[sandbox]` of the
    user's config (never a project's), else by the approval mode. A sandbox asked for
    where bwrap cannot run stops the run (WiringError): it is never silently dropped.
    `codecoder mcp list` makes one too, to start the project's servers as a session
    would. Where nobody can approve a command outside it (nobody `attended`, or
    never-ask), its failure hints say so instead of suggesting it."""
    from codecoder.sandbox import SandboxUnavailable
    from codecoder.sandbox.runtime import Sandbox

    mode, network, allow = options.sandbox, False, ()
    max_processes: int | None = None
    source = "--sandbox"
    if user_config:  # config_schema is loaded once a config file was read
        from codecoder import paths
        from codecoder.config_schema import SandboxTable, section

        table = section(user_config, "sandbox", SandboxTable)
        if mode is None and table.mode is not None:
            mode, source = table.mode, f"[sandbox] mode in {paths.config_dir() / 'config.toml'}"
        network, allow = table.network, tuple(table.network_allow)
        max_processes = table.max_processes
    network_for = None
    if allow:
        from codecoder import paths
        from codecoder.permissions.network import NetworkAllow

        try:
            network_for = NetworkAllow(allow, str(paths.config_dir() / "config.toml"), policy.scope)
        except ConfigError as exc:
            raise WiringError(str(exc)) from exc
    from codecoder.permissions.writes import reads_repository, writes_nothing

    sandbox = Sandbox(
        mode,
        approval=lambda: policy.mode,
        network=network,
        network_for=network_for,
        reads_only=writes_nothing,
        reads_repository=reads_repository,
        roots=policy.scope.roots,
        escalation=lambda: options.attended and policy.mode != "never-ask",
        max_processes=max_processes,
    )
    try:
        sandbox.check()
    except SandboxUnavailable as exc:
        raise WiringError(
            f"the sandbox ({source}: {mode}) cannot run: {exc}; use --sandbox off to run "
            "commands without it"
        ) from exc
    return sandbox


def _user_config() -> dict[str, Any]:
    from codecoder import paths

    try:
        return read_toml(paths.config_dir() / "config.toml")
    except ConfigError as exc:
        raise WiringError(str(exc)) from exc


def _child_environment(user_config: dict[str, Any]) -> ChildEnvironment:
    """What commands see (docs/permissions.md): `[shell] env_keep / env_drop` of the
    user's config (never the project's), and the key variables of every configured
    provider scrubbed, looked up at the first command."""
    keep: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    if user_config:  # config_schema is loaded once a config file was read
        from codecoder.config_schema import shell_settings

        shell = shell_settings(user_config)
        keep, drop = shell.env_keep, shell.env_drop

    def key_names() -> set[str]:
        from codecoder.providers.registry import all_providers

        try:
            providers = all_providers(user_config).values()
        except ProviderError:  # a broken [providers] table: the name rule still applies
            return set()
        return {n for p in providers for n in (p.api_key_env, p.auth_token_env) if n}

    return ChildEnvironment(keep=keep, drop=drop, secret_names=key_names)


def session_toolbox(
    workspace: Path,
    provider: ProviderClient,
    manager: ProcessManager,
    user_config: dict[str, Any],
    policy: RulePolicy,
    *,
    sandbox: Sandbox | None,
    attended: bool,
    tracer: Tracer | None = None,
    wrap: Callable[[list[Tool]], list[Tool]] | None = None,
) -> tuple[OfferedTools, PromptBuilder]:
    """The tools the model is offered and the prompt that goes with them. Of the main
    agent's toolbox (default_tools), those a call of which could run in the approval mode
    as it is at each request (app/offered.py); the prompt names only those, and its last
    section follows the mode and the sandbox too."""
    project = ProjectContext(workspace)
    every = default_tools(
        workspace,
        provider,
        manager,
        user_config,
        policy,
        sandbox=sandbox,
        tracer=tracer,
        wrap=wrap,
        project=project,
    )
    offered = OfferedTools(every, policy, attended=attended)

    def facts() -> SessionFacts:
        tools = offered.names()
        if sandbox is None:
            return SessionFacts(policy.mode, attended, tools=tools)
        return SessionFacts(
            policy.mode, attended, sandbox.mode(), sandbox.network_state(), tools=tools
        )

    return offered, PromptBuilder(workspace, project=project, session=facts)


def preview_prompt(workspace: Path, mode: ApprovalMode) -> tuple[str, tuple[str, ...]]:
    """The system prompt a session in `workspace` would get in `mode` from a client a
    person answers (never-ask: nobody is asked), and its warnings (`codecoder prompt`):
    built as build_agent builds it, from the same config, rules and sandbox, with no
    session made and no model asked."""
    user_config = _user_config()
    policy = _policy(workspace, mode)
    sandbox = build_sandbox(AgentOptions(approval=mode), user_config, policy)
    manager = ProcessManager()
    try:
        _, prompt = session_toolbox(
            workspace, _NoModel(), manager, user_config, policy, sandbox=sandbox, attended=True
        )
        return prompt.system_prompt(), prompt.warnings
    finally:
        manager.close()
        sandbox.close()


class _NoModel:
    """The provider of a toolbox that is only shown (`preview_prompt`): its sub-agents
    never run."""

    def stream(self, request: ProviderRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        raise ProviderError("config", "no model: this toolbox is only shown")


def demo_agent(provider: ProviderClient, workspace: Path) -> AgentSetup:
    manager = ProcessManager()
    policy = _policy(workspace, "full-auto")
    offered, prompt = session_toolbox(
        workspace, provider, manager, {}, policy, sandbox=None, attended=True
    )
    loop = AgentLoop(provider, [], workspace, policy=policy, prompt=prompt, tool_source=offered)
    session = os.urandom(8).hex()
    return AgentSetup(loop=loop, session_id=session, manager=manager, closers=[manager.close])
