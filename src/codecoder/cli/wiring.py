"""The edge: where concrete providers, tools, policies and the store meet an AgentLoop.

Only the CLI (and later the daemon) wires; the kernel knows none of these (invariant 7).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codecoder.kernel.loop import AgentLoop
from codecoder.kernel.ports import ProviderClient, Tool
from codecoder.kernel.trace import Tracer
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


def default_tools(manager: ProcessManager) -> list[Tool]:
    from codecoder.tools.files import EditFile, ListDir, ReadFile, WriteFile
    from codecoder.tools.search import Glob, Grep
    from codecoder.tools.shell import RunCommand

    return [ReadFile(), WriteFile(), EditFile(), ListDir(), Glob(), Grep(), RunCommand(manager)]


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
    manager = ProcessManager()
    tracer = Tracer(options.trace) if options.trace else None
    loop = AgentLoop(
        provider,
        default_tools(manager),
        workspace,
        max_rounds=options.max_rounds,
        tracer=tracer,
    )
    return AgentSetup(loop=loop, session_id=uuid.uuid4().hex[:16], manager=manager, tracer=tracer)


def demo_agent(provider: ProviderClient, workspace: Path) -> AgentSetup:
    manager = ProcessManager()
    loop = AgentLoop(provider, default_tools(manager), workspace)
    return AgentSetup(loop=loop, session_id=uuid.uuid4().hex[:16], manager=manager)
