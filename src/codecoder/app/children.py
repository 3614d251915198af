"""Building sub-agents: the edge half of the `agent` tool (DESIGN.md invariant 5).

A child gets its own loop, history and channels, and a read-only toolbox: read_file,
list_dir, glob, grep; run_command only when the user's own config grants it
(`[subagents] run_command = true` in `$XDG_CONFIG_HOME/codecoder/config.toml`). A profile's
`tools` can only narrow that set. The `agent` tool itself is offered below the depth limit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder.context.profiles import AgentProfile, narrow_tools
from codecoder.context.prompt import ProjectContext
from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.ports import PermissionPolicy, ProviderClient, Tool, ToolFailure
from codecoder.kernel.subagents import ChildSpec
from codecoder.tools.agent import AgentTask, AgentTool
from codecoder.tools.process import ProcessManager

if TYPE_CHECKING:
    from codecoder.kernel.trace import Tracer
    from codecoder.sandbox.runtime import Sandbox

CHILD_PROMPT = """You are a sub-agent of CodeCoder, a coding agent. You were given one task by \
the main agent, which sees only your final message: make it a complete, self-contained \
answer (paths, line numbers, findings). You can read, list and search files but not change \
them. Calls that don't depend on each other (several reads or searches) can go in one \
reply. Nobody can answer questions: decide on your own. Work efficiently and stop as soon \
as you can answer. The project you work in is described below."""


class ChildPrompt:
    """A sub-agent's system prompt (kernel.ports.PromptSource): its instructions, then
    the parent's environment, AGENTS.md and CONTEXT.md (read once for the session:
    ProjectContext), so that it keeps the project's rules as its parent does."""

    def __init__(self, instructions: str, project: ProjectContext | None) -> None:
        self._instructions = instructions
        self._project = project
        self._prompt: str | None = None

    def system_prompt(self) -> str:
        if self._prompt is None:  # a child's loop asks from its one thread
            shared = self._project.for_subagent() if self._project is not None else ""
            self._prompt = "\n\n".join(part for part in (self._instructions, shared) if part)
        return self._prompt


class SubagentSettings(msgspec.Struct, frozen=True):
    """`[subagents]` of the user's config (project config cannot widen these)."""

    max_parallel: int = 4
    max_depth: int = 2
    run_command: bool = False
    max_rounds: int = 50

    @classmethod
    def from_config(cls, table: dict[str, Any]) -> SubagentSettings:
        defaults = cls()

        def number(key: str) -> int:
            value = table.get(key)
            valid = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            return value if valid else getattr(defaults, key)  # type: ignore[return-value]

        return cls(
            max_parallel=number("max_parallel"),
            max_depth=number("max_depth"),
            run_command=table.get("run_command") is True,
            max_rounds=number("max_rounds"),
        )


class SubagentFactory(msgspec.Struct):
    """Turns an `agent` tool task into a ChildSpec; one factory per depth level."""

    provider: ProviderClient
    workspace: Path
    manager: ProcessManager
    settings: SubagentSettings = msgspec.field(default_factory=SubagentSettings)
    profiles: Sequence[AgentProfile] = ()
    policy: PermissionPolicy | None = None
    depth: int = 0
    resolve_model: Callable[[str], ProviderClient] | None = None
    sandbox: Sandbox | None = None
    """The parent's sandbox: a sub-agent's commands and grep run in it too."""
    tracer: Tracer | None = None
    """The parent's `--trace`: a sub-agent's lines go there too, under its own name."""
    wrap: Callable[[list[Tool]], list[Tool]] | None = None
    """Put around a sub-agent's tools as around the parent's (hooks, checkpoints)."""
    project: ProjectContext | None = None
    """The parent's project sections, shown to a sub-agent too (ChildPrompt)."""

    def agent_tool(self) -> AgentTool | None:
        """The `agent` tool for a loop at this depth, or None at the depth limit."""
        if self.depth >= self.settings.max_depth:
            return None
        choices = [(p.name, p.description) for p in self.profiles]
        return AgentTool(self, profiles=choices, max_parallel=self.settings.max_parallel)

    def __call__(self, task: AgentTask) -> ChildSpec:
        profile = self._profile(task.profile)
        child = SubagentFactory(
            self.provider,
            self.workspace,
            self.manager,
            self.settings,
            self.profiles,
            self.policy,
            self.depth + 1,
            self.resolve_model,
            self.sandbox,
            self.tracer,
            self.wrap,
            self.project,
        )
        tools = child.toolbox(profile)
        instructions = CHILD_PROMPT
        if profile is not None and profile.instructions.strip():
            instructions += "\n\n" + profile.instructions.strip()
        loop = AgentLoop(
            self._provider_for(task, profile),
            tools,
            self.workspace,
            policy=self.policy,
            prompt=ChildPrompt(instructions, self.project),
            max_rounds=self.settings.max_rounds,
            name=f"sub{child.depth}",
            tracer=self.tracer,
        )
        return ChildSpec(task.task, loop, read_only=all(t.risk == "read" for t in tools))

    def toolbox(self, profile: AgentProfile | None) -> list[Tool]:
        from codecoder.tools.files import ListDir, ReadFile
        from codecoder.tools.search import Glob, Grep

        available: dict[str, Tool] = {
            "read_file": ReadFile(),
            "list_dir": ListDir(),
            "glob": Glob(),
            "grep": Grep(sandbox=self.sandbox),
        }
        if self.settings.run_command:
            from codecoder.tools.shell import RunCommand

            available["run_command"] = RunCommand(self.manager, self.sandbox)
        agent = self.agent_tool()
        if agent is not None:
            available["agent"] = agent
        granted = narrow_tools(list(available), profile.tools if profile else None)
        tools = [available[name] for name in granted]
        return self.wrap(tools) if self.wrap is not None else tools

    def _profile(self, name: str | None) -> AgentProfile | None:
        if name is None:
            return None
        for profile in self.profiles:
            if profile.name == name:
                return profile
        known = ", ".join(p.name for p in self.profiles) or "none"
        raise ToolFailure("invalid_args", f"unknown agent profile {name!r}; profiles: {known}")

    def _provider_for(self, task: AgentTask, profile: AgentProfile | None) -> ProviderClient:
        for_subagent = getattr(self.provider, "for_subagent", None)
        if for_subagent is not None:  # a scripted session: the child takes its own replies
            provider = for_subagent(task.task)
            if provider is None:
                raise ToolFailure("crashed", "the script has no subagent entry for this task")
            return provider
        if profile is not None and profile.model and self.resolve_model is not None:
            return self.resolve_model(profile.model)
        return self.provider
