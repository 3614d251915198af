"""PromptBuilder: the system prompt of one session (kernel.ports.PromptSource).

What the project contributes (environment, AGENTS.md and the rest: `ProjectContext`) is
read once, on the first request, and kept: those files do not change under a running
session often enough to pay for re-reading them on every request, and a stable prompt
keeps the provider's prompt cache warm. The date and git state are those of the
session's start. Sub-agents share the same ProjectContext, so their prompts cost no
second read. Only the session section (context/session.py) and the tools offered are
looked at again on each request, since the approval mode can change; the text is kept per
state.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import date
from pathlib import Path

import msgspec

from codecoder.context import fragments
from codecoder.context.files import levels, workspace_path
from codecoder.context.session import SessionFacts, describe
from codecoder.context.skills import discover_skills
from codecoder.hostgit import repository_top


class ProjectSections(msgspec.Struct, frozen=True):
    environment: str
    agents_md: str
    context_md: str
    skills: str
    warnings: tuple[str, ...]
    """What was left out and why (malformed front matter, unreadable files), one line
    each."""


class ProjectContext:
    """The project's sections for `workspace`, assembled at the first call and kept.
    Thread-safe: sub-agents ask from their own threads."""

    def __init__(self, workspace: Path | str) -> None:
        self.workspace = workspace_path(workspace)
        self._lock = threading.Lock()
        self._sections: ProjectSections | None = None

    def sections(self) -> ProjectSections:
        with self._lock:
            if self._sections is None:
                self._sections = assemble(self.workspace, date.today())
            return self._sections

    def for_subagent(self) -> str:
        """What a sub-agent is told of the project: the environment, AGENTS.md and
        CONTEXT.md (it has no skill tool, so no skills index)."""
        found = self.sections()
        return _join([found.environment, found.agents_md, found.context_md])


class PromptBuilder:
    """Base prompt (naming only the tools `session` says are offered; all without it),
    environment, AGENTS.md, CONTEXT.md, skills index, and the section `session`
    describes, in that order (docs/prompt.md)."""

    def __init__(
        self,
        workspace: Path | str,
        *,
        project: ProjectContext | None = None,
        session: Callable[[], SessionFacts] | None = None,
    ) -> None:
        self.project = project if project is not None else ProjectContext(workspace)
        self._session = session
        self._lock = threading.Lock()
        self._heads: dict[frozenset[str] | None, str] = {}
        self._prompts: dict[SessionFacts, str] = {}

    def system_prompt(self) -> str:
        facts = self._session() if self._session is not None else None
        tools = facts.tools if facts is not None else None
        with self._lock:
            head = self._heads.get(tools)
            if head is None:
                found = self.project.sections()
                base = fragments.base_prompt(tools)
                head = self._heads[tools] = _join(
                    [base, found.environment, found.agents_md, found.context_md, found.skills]
                )
            if facts is None:
                return head
            prompt = self._prompts.get(facts)
            if prompt is None:
                prompt = self._prompts[facts] = _join([head, describe(facts)])
            return prompt

    @property
    def warnings(self) -> tuple[str, ...]:
        """What was left out of the prompt and why, assembling it first if needed."""
        return self.project.sections().warnings


def assemble(cwd: Path, today: date) -> ProjectSections:
    root = repository_top(cwd)
    chain = levels(cwd, root)
    warnings: list[str] = []
    catalogue = discover_skills(chain)
    return ProjectSections(
        environment=fragments.environment(cwd, root, today),
        agents_md=fragments.agents_md(fragments.agents_md_sources(chain), warnings),
        context_md=fragments.context_md(fragments.context_md_sources(chain), warnings),
        skills=fragments.skills_index(catalogue),
        warnings=(*warnings, *catalogue.warnings),
    )


def _join(sections: list[str]) -> str:
    return "\n\n".join(section for section in sections if section)
