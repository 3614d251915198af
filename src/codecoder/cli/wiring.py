"""The edge: where concrete providers, tools, policies and the store meet an AgentLoop.

Only the CLI (and later the daemon) wires; the kernel knows none of these (invariant 7).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codecoder.config import ConfigError, read_toml
from codecoder.context.prompt import PromptBuilder
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.ports import PermissionPolicy, ProviderClient, Tool
from codecoder.kernel.trace import Tracer
from codecoder.permissions.chain import RulePolicy
from codecoder.permissions.modes import ApprovalMode, filter_tools
from codecoder.tools.process import ProcessManager


class WiringError(Exception):
    """A usage or configuration problem found while wiring (exit code 2)."""


@dataclass
class AgentSetup:
    loop: AgentLoop
    session_id: str
    manager: ProcessManager
    tracer: Tracer | None = None
    first_turn: int = 0
    closers: list[Callable[[], None]] = field(default_factory=list)

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
) -> list[Tool]:
    """The main agent's toolbox: files, search, commands, questions, checklist, skills
    and sub-agents."""
    from codecoder.cli.children import SubagentFactory, SubagentSettings
    from codecoder.context.profiles import load_profiles
    from codecoder.tools.ask import AskUserTool
    from codecoder.tools.files import EditFile, ListDir, ReadFile, WriteFile
    from codecoder.tools.search import Glob, Grep
    from codecoder.tools.shell import RunCommand
    from codecoder.tools.skills import SkillTool
    from codecoder.tools.todo import TodoWriteTool

    tools: list[Tool] = [
        ReadFile(),
        WriteFile(),
        EditFile(),
        ListDir(),
        Glob(),
        Grep(),
        RunCommand(manager),
        AskUserTool(),
        TodoWriteTool(),
        SkillTool(),
    ]
    settings = SubagentSettings.from_config(_table(user_config, "subagents"))
    factory = SubagentFactory(
        provider, workspace, manager, settings, profiles=load_profiles(workspace), policy=policy
    )
    agent = factory.agent_tool()
    if agent is not None:
        tools.append(agent)
    return tools


def _table(config: dict[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key)
    return value if isinstance(value, dict) else {}


def build_provider(options: Any) -> ProviderClient:
    if options.script:
        from codecoder.providers.scripted import ScriptedProvider, ScriptError, load_script

        if options.model:
            raise WiringError("--script and --model exclude each other")
        try:
            return ScriptedProvider(load_script(options.script))
        except ScriptError as exc:
            raise WiringError(str(exc)) from exc
    raise WiringError("no model: pass -m PROVIDER/MODEL or --script FILE")


def build_agent(options: Any, workspace: Path, *, interactive: bool) -> AgentSetup:
    """The agent of one `exec` run."""
    if options.max_rounds < 1:
        raise WiringError("--max-rounds must be at least 1")
    provider = build_provider(options)
    policy = _policy(workspace, options.approval)
    manager = ProcessManager()
    tracer = Tracer(options.trace) if options.trace else None
    tools = default_tools(workspace, provider, manager, _user_config(), policy)
    loop = AgentLoop(
        provider,
        filter_tools(tools, options.approval),
        workspace,
        policy=policy,
        prompt=PromptBuilder(workspace),
        max_rounds=options.max_rounds,
        tracer=tracer,
    )
    return AgentSetup(loop=loop, session_id=uuid.uuid4().hex[:16], manager=manager, tracer=tracer)


def _policy(workspace: Path, mode: ApprovalMode) -> RulePolicy:
    try:
        return RulePolicy.load(workspace, mode)
    except ConfigError as exc:
        raise WiringError(str(exc)) from exc


def _user_config() -> dict[str, Any]:
    from codecoder import paths

    try:
        return read_toml(paths.config_dir() / "config.toml")
    except ConfigError as exc:
        raise WiringError(str(exc)) from exc


def demo_agent(provider: ProviderClient, workspace: Path) -> AgentSetup:
    manager = ProcessManager()
    policy = _policy(workspace, "full-auto")
    tools = default_tools(workspace, provider, manager, {}, policy)
    loop = AgentLoop(provider, tools, workspace, policy=policy, prompt=PromptBuilder(workspace))
    return AgentSetup(loop=loop, session_id=uuid.uuid4().hex[:16], manager=manager)
