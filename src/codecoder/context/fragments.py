"""The pieces of the system prompt, in the order PromptBuilder joins them (DESIGN.md §5):
base prompt, environment, AGENTS.md files, CONTEXT.md files, the skills index.

Each piece is plain text, empty when there is nothing to say. Files are capped per file
and per family; when a family's budget runs out, the files nearest the workspace keep
their share first (they are the most specific), and whatever was left out is named in a
`[… cut: N bytes of PATH not shown]` note where it would have been. Only regular files
inside the folder they belong to are read (files.open_regular); others are left out with
a warning.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import msgspec

from codecoder import paths
from codecoder.context.files import KIB, capped_text, display_path, git_dir, read_capped
from codecoder.context.skills import Skill, SkillCatalogue

FILE_CAP = 32 * KIB
AGENTS_TOTAL_CAP = 64 * KIB
CONTEXT_TOTAL_CAP = 64 * KIB
SKILLS_INDEX_CAP = 16 * KIB
DESCRIPTION_CAP = 1024
GIT_STATUS_TIMEOUT = 1.0
HEAD_CAP = 256

BASE_PROMPT = """\
You are CodeCoder, a coding agent working in the user's terminal on the project described \
below. You help with software engineering: reading and changing code, running builds and \
tests, finding bugs, explaining what you find.

# How to work
- Look before you change: read the relevant files and search the code (read_file, \
list_dir, glob, grep) instead of guessing what they contain.
- Change existing files with edit_file, which replaces an exact piece of text: read the \
file first so the text you replace matches it. Create new files only when the task needs \
them.
- Run commands with run_command. After a change, run the tests or build that cover it \
and fix what fails. Never claim something works without having run it; say so when you \
could not.
- Stay on the task: follow the project's conventions and style, leave unrelated code \
alone, and don't add files, dependencies or refactors nobody asked for.
- For work of several steps, keep a checklist with todo_write and update it as you go.
- If skills are listed below and one matches the task, load it with the skill tool first.

# Tools and permissions
Every tool call is checked against the user's permission rules: it may run, wait for \
the user's approval, or be refused. A refusal comes back to you as an error with the \
reason. Don't repeat a refused call or get around it another way; change your approach \
or ask the user. Never run destructive commands (deleting what you did not create, \
`git reset --hard`, force pushes, touching files outside the project) unless the user \
asked for exactly that.

# Answering
Be concise and direct; the user reads you in a terminal. Skip preamble and flattery. \
Refer to code as path:line. When you are done, say in a few lines what you changed and \
how you checked it. If the request is ambiguous or risky, ask one short question instead \
of guessing."""


class Source(msgspec.Struct, frozen=True):
    """An instruction file that may exist, how the prompt names it, and the folder its
    real path must be inside (the repository root, or the user config dir)."""

    path: Path
    shown_as: str
    within: Path


# --- environment ---------------------------------------------------------------------


def environment(cwd: Path, root: Path | None, today: date) -> str:
    lines = [
        "# Environment",
        f"Working directory: {cwd}",
        f"Git repository: {git_summary(root)}",
        f"Platform: {_platform()}",
        f"Date: {today.isoformat()}",
    ]
    return "\n".join(lines)


def _platform() -> str:
    uname = os.uname()
    return f"{uname.sysname} {uname.release} ({sys.platform})"


def git_summary(root: Path | None) -> str:
    """`no`, or the root, the branch (read from HEAD directly) and the dirty state."""
    if root is None:
        return "no"
    return f"yes, root {root}, {_head(root)}, {_changes(root)}"


_REF = re.compile(r"ref:\s*(refs/[^\x00-\x20\x7f]+)\s*")
_OBJECT_ID = re.compile(r"([0-9a-f]{40}|[0-9a-f]{64})\s*")


def _head(root: Path) -> str:
    """The branch or commit HEAD names. HEAD is read only as a small regular file (not a
    FIFO or /dev/zero), and shown only when it looks like a ref or an object id: the git
    folder may lie outside the repository (worktrees), so what it links to is not
    checked, and nothing else of an odd file should reach the prompt."""
    try:
        capped = read_capped(git_dir(root) / "HEAD", HEAD_CAP)
    except OSError:
        return "HEAD unreadable"
    head = capped.text if not capped.omitted else ""
    if ref := _REF.fullmatch(head):
        return f"branch {ref.group(1).removeprefix('refs/heads/')}"
    if object_id := _OBJECT_ID.fullmatch(head):
        return f"detached HEAD at {object_id.group(1)[:12]}"
    return "HEAD unreadable"


def _changes(root: Path) -> str:
    changed = _changed_files(root)
    if changed is None:
        return "uncommitted changes unknown (git status unavailable)"
    if changed == 0:
        return "no uncommitted changes"
    return f"uncommitted changes in {changed} file{'s' if changed != 1 else ''}"


def _changed_files(root: Path) -> int | None:
    """Lines of `git status --porcelain`, None when git is missing, fails or is slow.
    The repository may have been written by a confined command (a filter in its config
    would run on the host here), so git looks at it through a git dir of ours
    (hostgit.py), which names no program."""
    from codecoder.hostgit import changed_files

    return changed_files(root, timeout=GIT_STATUS_TIMEOUT)


# --- AGENTS.md and CONTEXT.md ----------------------------------------------------------


def agents_md_sources(levels: Sequence[Path]) -> list[Source]:
    """The user's AGENTS.md, then one file per level: AGENTS.md, else CLAUDE.md."""
    user = paths.config_dir() / "AGENTS.md"
    sources = [Source(user, str(user), paths.config_dir())]
    for level in levels:
        chosen = level / "AGENTS.md"
        if not chosen.is_file() and (level / "CLAUDE.md").is_file():
            chosen = level / "CLAUDE.md"
        sources.append(Source(chosen, display_path(chosen, levels[0]), levels[0]))
    return sources


def context_md_sources(levels: Sequence[Path]) -> list[Source]:
    files = [level / "CONTEXT.md" for level in levels]
    return [Source(path, display_path(path, levels[0]), levels[0]) for path in files]


def agents_md(sources: Sequence[Source], warnings: list[str]) -> str:
    files = read_family(sources, AGENTS_TOTAL_CAP, warnings)
    if not files:
        return ""
    intro = (
        "# Instructions from AGENTS.md files\n"
        "The user and the project's maintainers wrote these, from the user's own file to "
        "the working directory's. Follow them. Where they disagree, the file nearer the "
        "working directory wins, and what the user asks in this conversation wins over all."
    )
    return "\n\n".join([intro, *files])


def context_md(sources: Sequence[Source], warnings: list[str]) -> str:
    files = read_family(sources, CONTEXT_TOTAL_CAP, warnings)
    if not files:
        return ""
    intro = (
        "# Project context from CONTEXT.md files\n"
        "Background on the project (its purpose, vocabulary, structure), from the repository "
        "root down to the working directory."
    )
    return "\n\n".join([intro, *files])


def read_family(sources: Sequence[Source], total_cap: int, warnings: list[str]) -> list[str]:
    """Each existing file as a `<file path=…>` block, capped per file and in total.

    Read from the last (most specific) file backwards, each charged what its read used
    (files.Capped.used), so a file whose stat size says 0 cannot slip past the total.
    Blocks and warnings come out in the sources' order."""
    remaining = total_cap
    found: list[tuple[str, str]] = []
    for source in reversed(sources):
        try:
            capped = read_capped(source.path, min(FILE_CAP, remaining), source.within)
        except FileNotFoundError:
            continue
        except OSError as exc:
            found.append(("", f"{source.shown_as}: cannot be read: {exc.strerror or exc}"))
            continue
        remaining -= capped.used
        text = capped_text(capped, source.shown_as)
        if text:
            found.append((f'<file path="{source.shown_as}">\n{text}\n</file>', ""))
    found.reverse()
    warnings.extend(warning for _, warning in found if warning)
    return [block for block, _ in found if block]


# --- skills ----------------------------------------------------------------------------


def skills_index(catalogue: SkillCatalogue) -> str:
    """The skills' names and descriptions, then the skills left out and why; both lists
    share SKILLS_INDEX_CAP, the usable skills first."""
    if not catalogue.skills and not catalogue.warnings:
        return ""
    parts = [
        "# Skills\n"
        "Skills hold instructions for particular kinds of task. When a task matches a "
        "skill's description, call the skill tool with its name before you start, and "
        "follow the instructions it returns."
    ]
    budget = SKILLS_INDEX_CAP
    if catalogue.skills:
        entries = [_index_line(skill) for skill in catalogue.skills]
        listed, budget = _fit(entries, budget, "skill", "listed")
        parts.append("\n".join(listed))
    if catalogue.warnings:
        entries = [f"- {warning}" for warning in catalogue.warnings]
        named, _ = _fit(entries, budget, "left-out skill", "named")
        parts.append(
            "Left out because their SKILL.md could not be read (tell the user if they ask "
            "for one of these):\n" + "\n".join(named)
        )
    return "\n\n".join(parts)


def _index_line(skill: Skill) -> str:
    description = skill.description
    if len(description) > DESCRIPTION_CAP:
        description = description[: DESCRIPTION_CAP - 1].rstrip() + "…"
    return f"- {skill.name}: {description}"


def _fit(lines: Sequence[str], budget: int, noun: str, verb: str) -> tuple[list[str], int]:
    """The lines that fit in `budget` bytes (a newline each), then a cut note for the
    rest; and the budget left."""
    kept: list[str] = []
    for position, line in enumerate(lines):
        cost = len(line.encode()) + 1
        if cost > budget:
            more = len(lines) - position
            kept.append(f"[… cut: {more} more {noun}{'s' if more != 1 else ''} not {verb}]")
            break
        kept.append(line)
        budget -= cost
    return kept, budget
