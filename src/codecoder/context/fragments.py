"""The pieces of the system prompt, in the order PromptBuilder joins them (DESIGN.md §5):
base prompt, environment, AGENTS.md files, CONTEXT.md files, the skills index.

Each piece is plain text, empty when there is nothing to say. Files are capped per file
and per family; when a family's budget runs out, the files nearest the workspace keep
their share first (they are the most specific), and whatever was left out is named in a
`[… cut: N bytes of PATH not shown]` note where it would have been.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import msgspec

from codecoder import paths
from codecoder.context.files import KIB, capped_text, display_path, git_dir, read_capped
from codecoder.context.skills import SkillCatalogue

FILE_CAP = 32 * KIB
AGENTS_TOTAL_CAP = 64 * KIB
CONTEXT_TOTAL_CAP = 64 * KIB
SKILLS_INDEX_CAP = 16 * KIB
DESCRIPTION_CAP = 1024
GIT_STATUS_TIMEOUT = 1.0

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
    """An instruction file that may exist, and how the prompt names it."""

    path: Path
    shown_as: str


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


def _head(root: Path) -> str:
    try:
        head = (git_dir(root) / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return "HEAD unreadable"
    if head.startswith("ref:"):
        ref = head.removeprefix("ref:").strip()
        return f"branch {ref.removeprefix('refs/heads/')}"
    return f"detached HEAD at {head[:12]}"


def _changes(root: Path) -> str:
    changed = _changed_files(root)
    if changed is None:
        return "uncommitted changes unknown (git status unavailable)"
    if changed == 0:
        return "no uncommitted changes"
    return f"uncommitted changes in {changed} file{'s' if changed != 1 else ''}"


def _changed_files(root: Path) -> int | None:
    """Lines of `git status --porcelain`, None when git is missing, fails or is slow."""
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = subprocess.run(
            [git, "--no-optional-locks", "status", "--porcelain"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_STATUS_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return sum(1 for line in done.stdout.splitlines() if line.strip())


# --- AGENTS.md and CONTEXT.md ----------------------------------------------------------


def agents_md_sources(levels: Sequence[Path]) -> list[Source]:
    """The user's AGENTS.md, then one file per level: AGENTS.md, else CLAUDE.md."""
    user = paths.config_dir() / "AGENTS.md"
    sources = [Source(user, str(user))]
    for level in levels:
        chosen = level / "AGENTS.md"
        if not chosen.is_file() and (level / "CLAUDE.md").is_file():
            chosen = level / "CLAUDE.md"
        sources.append(Source(chosen, display_path(chosen, levels[0])))
    return sources


def context_md_sources(levels: Sequence[Path]) -> list[Source]:
    files = [level / "CONTEXT.md" for level in levels]
    return [Source(path, display_path(path, levels[0])) for path in files]


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
    """Each existing file as a `<file path=…>` block, capped per file and in total."""
    present = [(source, size) for source in sources if (size := _size(source.path)) is not None]
    allowances = _allowances([size for _, size in present], total_cap)
    blocks: list[str] = []
    for (source, _), allowance in zip(present, allowances, strict=True):
        try:
            capped = read_capped(source.path, allowance)
        except OSError as exc:
            warnings.append(f"{source.shown_as}: cannot be read: {exc.strerror or exc}")
            continue
        text = capped_text(capped, source.shown_as)
        if text:
            blocks.append(f'<file path="{source.shown_as}">\n{text}\n</file>')
    return blocks


def _size(path: Path) -> int | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _allowances(sizes: Sequence[int], total_cap: int) -> list[int]:
    """Bytes each file may show: FILE_CAP each, the total shared from the last (most
    specific) file backwards."""
    remaining = total_cap
    allowances = [0] * len(sizes)
    for index in reversed(range(len(sizes))):
        allowances[index] = min(FILE_CAP, remaining)
        remaining -= min(sizes[index], allowances[index])
    return allowances


# --- skills ----------------------------------------------------------------------------


def skills_index(catalogue: SkillCatalogue) -> str:
    if not catalogue.skills and not catalogue.warnings:
        return ""
    parts = [
        "# Skills\n"
        "Skills hold instructions for particular kinds of task. When a task matches a "
        "skill's description, call the skill tool with its name before you start, and "
        "follow the instructions it returns."
    ]
    if catalogue.skills:
        parts.append("\n".join(_index_lines(catalogue)))
    if catalogue.warnings:
        left_out = "\n".join(f"- {warning}" for warning in catalogue.warnings)
        parts.append(
            "Left out because their SKILL.md could not be read (tell the user if they ask "
            f"for one of these):\n{left_out}"
        )
    return "\n\n".join(parts)


def _index_lines(catalogue: SkillCatalogue) -> list[str]:
    lines: list[str] = []
    used = 0
    for position, skill in enumerate(catalogue.skills):
        description = skill.description
        if len(description) > DESCRIPTION_CAP:
            description = description[: DESCRIPTION_CAP - 1].rstrip() + "…"
        line = f"- {skill.name}: {description}"
        used += len(line.encode()) + 1
        if used > SKILLS_INDEX_CAP:
            more = len(catalogue.skills) - position
            lines.append(f"[… cut: {more} more skill{'s' if more != 1 else ''} not listed]")
            break
        lines.append(line)
    return lines
