"""The `agent` tool: hand one or more tasks to read-only sub-agents and get their answers.

The tool only describes and validates; building a child (its provider, its narrowed
toolbox, its prompt, its depth) is the edge's job, passed in as `spawn`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated

import msgspec

from codecoder.kernel.messages import ToolResult, tool_result
from codecoder.kernel.ports import Risk, ToolContext, ToolFailure
from codecoder.kernel.subagents import ChildOutcome, ChildSpec, run_children
from codecoder.tools.base import TypedTool

MAX_TASKS = 8


class AgentTask(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    task: Annotated[str, msgspec.Meta(description="Everything the sub-agent needs to know.")]
    profile: Annotated[
        str | None, msgspec.Meta(description="A named agent profile to use (optional).")
    ] = None


class AgentArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    tasks: Annotated[
        list[AgentTask],
        msgspec.Meta(min_length=1, max_length=MAX_TASKS, description="Independent tasks."),
    ]


Spawn = Callable[[AgentTask], ChildSpec]


class AgentTool(TypedTool[AgentArgs]):
    name = "agent"
    risk: Risk = "read"
    args_type = AgentArgs

    def __init__(
        self, spawn: Spawn, *, profiles: Sequence[tuple[str, str]] = (), max_parallel: int = 4
    ) -> None:
        self._spawn = spawn
        self._max_parallel = max_parallel
        choices = "".join(f"\n- {name}: {about}" for name, about in profiles)
        self.description = (
            "Start read-only sub-agents (they can read, list and search files, not change "
            "them) for independent research tasks; several tasks run in parallel. Each "
            "returns its final answer. Give each task full context: a sub-agent sees "
            "nothing of this conversation." + (f"\nProfiles:{choices}" if choices else "")
        )

    def call(self, args: AgentArgs, ctx: ToolContext) -> ToolResult:
        specs = [self._spawn(task) for task in args.tasks]
        outcomes = run_children(
            specs, cancel=ctx.cancel, emit=ctx.emit, max_parallel=self._max_parallel
        )
        if all(o.status != "completed" for o in outcomes):
            raise ToolFailure("crashed", _render(args.tasks, outcomes))
        return tool_result(ctx.call_id, _render(args.tasks, outcomes))


def _render(tasks: Sequence[AgentTask], outcomes: Sequence[ChildOutcome]) -> str:
    if len(outcomes) == 1:
        return _answer(outcomes[0])
    parts = []
    for index, (task, outcome) in enumerate(zip(tasks, outcomes, strict=True), 1):
        title = task.task.strip().splitlines()[0][:80] if task.task.strip() else ""
        parts.append(f"## Task {index}: {title}\n{_answer(outcome)}")
    return "\n\n".join(parts)


def _answer(outcome: ChildOutcome) -> str:
    if outcome.status == "completed":
        return outcome.answer or "(the sub-agent gave no answer)"
    detail = f": {outcome.error}" if outcome.error else ""
    return f"(the sub-agent ended with {outcome.status}{detail})"
