"""PromptBuilder: the system prompt of one session (kernel.ports.PromptSource).

Everything in it is read once, on the first request, and kept: AGENTS.md and the rest
do not change under a running session often enough to pay for re-reading them on every
request, and a stable prompt keeps the provider's prompt cache warm. The date and git
state are those of the session's start. `warnings` names what had to be left out.
"""

from __future__ import annotations

import threading
from datetime import date
from pathlib import Path

from codecoder.context import fragments
from codecoder.context.files import levels, workspace_path
from codecoder.context.skills import discover_skills
from codecoder.hostgit import repository_top


class PromptBuilder:
    """Assembles base prompt, environment, AGENTS.md, CONTEXT.md and the skills index
    for `workspace` (the folder a turn runs in), in that order (docs/prompt.md)."""

    def __init__(self, workspace: Path | str) -> None:
        self.workspace = workspace_path(workspace)
        self._lock = threading.Lock()
        self._prompt: str | None = None
        self._warnings: tuple[str, ...] = ()

    def system_prompt(self) -> str:
        with self._lock:
            if self._prompt is None:
                self._prompt, self._warnings = assemble(self.workspace, date.today())
            return self._prompt

    @property
    def warnings(self) -> tuple[str, ...]:
        """What was left out of the prompt and why (malformed front matter, unreadable
        files), one line each; assembling the prompt first if needed."""
        self.system_prompt()
        return self._warnings


def assemble(cwd: Path, today: date) -> tuple[str, tuple[str, ...]]:
    """The prompt text and its warnings."""
    root = repository_top(cwd)
    chain = levels(cwd, root)
    warnings: list[str] = []
    catalogue = discover_skills(chain)
    sections = [
        fragments.BASE_PROMPT,
        fragments.environment(cwd, root, today),
        fragments.agents_md(fragments.agents_md_sources(chain), warnings),
        fragments.context_md(fragments.context_md_sources(chain), warnings),
        fragments.skills_index(catalogue),
    ]
    prompt = "\n\n".join(section for section in sections if section)
    return prompt, (*warnings, *catalogue.warnings)
