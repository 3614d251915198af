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
from collections.abc import Collection, Sequence
from datetime import date
from pathlib import Path

import msgspec

from codecoder import paths
from codecoder.context.files import KIB, capped_text, display_path, git_dir, read_capped
from codecoder.context.skills import Skill, SkillCatalogue
from codecoder.hostgit import changed_files
from codecoder.terminal_text import visible

FILE_CAP = 32 * KIB
AGENTS_TOTAL_CAP = 64 * KIB
CONTEXT_TOTAL_CAP = 64 * KIB
SKILLS_INDEX_CAP = 16 * KIB
DESCRIPTION_CAP = 1024
GIT_STATUS_TIMEOUT = 1.0
HEAD_CAP = 256

CHANGED_FILES_NAMED = 5
CHANGED_NAME_CAP = 100
SHELL = "bash"
"""What run_command runs a command line with (tools/shell.py: `bash -c`)."""

_INTRO = """\
You are CodeCoder, a coding agent working in the user's terminal on the project described \
below. You help with software engineering: reading and changing code, running builds and \
tests, finding bugs, explaining what you find."""

_HOW_TO_WORK: tuple[tuple[str, str], ...] = (
    (
        "",
        "Look before you change: read the relevant files and search the code (read_file, "
        "list_dir, glob, grep) instead of guessing what they contain. Calls that don't "
        "depend on each other (several reads or searches) can go in one reply.",
    ),
    (
        "edit_file",
        "Change existing files with edit_file, which replaces an exact piece of text: read "
        "the file first so the text you replace matches it.",
    ),
    ("write_file", "Create new files (write_file) only when the task needs them."),
    (
        "run_command",
        "Run commands with run_command. After a change, run the tests or build that cover "
        "it. Never claim something works without having run it; say so when you could not.",
    ),
    (
        "",
        "Keep going until the task is done; don't stop at a plan or a partial fix you could "
        "finish. When something fails, find and fix the cause: don't rerun it unchanged or "
        "weaken a test to pass. Tests that failed before your change and have nothing to do "
        "with it are not yours to fix: mention them.",
    ),
    (
        "",
        "Stay on the task: follow the project's conventions and style, leave unrelated code "
        "alone, and don't add files, dependencies or refactors nobody asked for.",
    ),
    (
        "",
        "Changes in the working tree that you did not make are the user's: never revert, "
        "overwrite or discard them (git checkout, restore, stash, reset) unless asked.",
    ),
    (
        "todo_write",
        "For work of several steps, keep a checklist with todo_write and update it as you go.",
    ),
    ("skill", "If a skill listed below matches the task, load it with the skill tool first."),
)
"""The lines of "How to work", each with the tool it is about ("": always said): a line
about a tool the session does not offer would send the model after a call that cannot
be made."""

_PERMISSIONS = """\
# Tools and permissions
Every tool call is checked against the user's permission rules. A refusal comes back \
to you as an error with the reason, and the same call would be refused again: don't \
repeat it or get around it another way (another tool, a script); change your approach, \
or finish without it and say what it would have needed. Never run destructive commands \
(deleting what you did not create, `git reset --hard`, force pushes, touching files \
outside the project) unless the user asked for exactly that."""

_ANSWERING = """\
# Answering
Be concise and direct; the user reads you in a terminal. Skip preamble and flattery. \
Refer to code as path:line. When you are done, say in a few lines what you changed and \
how you checked it."""


def base_prompt(tools: Collection[str] | None = None) -> str:
    """Who the agent is and how it works, naming only the `tools` offered (None: all)."""
    lines = [
        f"- {line}" for tool, line in _HOW_TO_WORK if not tool or tools is None or tool in tools
    ]
    return "\n\n".join([_INTRO, "# How to work\n" + "\n".join(lines), _PERMISSIONS, _ANSWERING])


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
        f"Shell: {SHELL}",
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
    """The uncommitted changes, naming the first few files: the model must know which
    files hold the user's own work before it touches them. A confined command may have
    written the repository (a filter in its config would run on the host here), so git
    looks at it through a git dir of ours, which names no program (hostgit.py)."""
    changed = changed_files(root, timeout=GIT_STATUS_TIMEOUT)
    if changed is None:
        return "uncommitted changes unknown (git status unavailable)"
    if not changed:
        return "no uncommitted changes"
    count = len(changed)
    named = ", ".join(map(_shown_name, changed[:CHANGED_FILES_NAMED]))
    more = f" and {count - CHANGED_FILES_NAMED} more" if count > CHANGED_FILES_NAMED else ""
    return f"uncommitted changes in {count} file{'s' if count != 1 else ''}: {named}{more}"


def _shown_name(path: str) -> str:
    """A path as one line of the prompt: whoever named the file chose its characters,
    so it is shown as a one-line field of a terminal is (`visible`): a newline, and
    every other line break a reader knows (U+2028, U+2029, NEL, VT, FF, FS to RS),
    would start a line of its own, a fake section of the prompt; a bidi override
    reorders what the model is shown; C1 and other controls show as text, bytes that
    are not UTF-8 as U+FFFD. A long name is cut."""
    shown = visible(path, one_line=True)
    return shown if len(shown) <= CHANGED_NAME_CAP else shown[: CHANGED_NAME_CAP - 1] + "…"


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
