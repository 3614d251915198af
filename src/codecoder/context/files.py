"""Finding and reading the files the system prompt is built from.

"The repository" is the nearest folder at or above the workspace that holds `.git`
(a folder, or a file pointing elsewhere as in worktrees and submodules). Project files
are looked up at every level from that root down to the workspace; outside a repository
only the workspace itself counts, so a stray AGENTS.md in $HOME never leaks into an
unrelated folder. Every read is capped in bytes, and what was left out is said in a note.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

KIB = 1024


def workspace_path(workspace: Path | str) -> Path:
    """Absolute and normalised, without resolving symlinks (the path the user sees)."""
    return Path(os.path.abspath(workspace))


def find_repo_root(cwd: Path) -> Path | None:
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


def git_dir(root: Path) -> Path:
    """The repository's git folder: `.git`, or where a `.git` file's `gitdir:` points."""
    dot_git = root / ".git"
    if dot_git.is_file():
        try:
            first = dot_git.read_text(encoding="utf-8", errors="replace").splitlines()[:1]
        except OSError:
            return dot_git
        if first and first[0].startswith("gitdir:"):
            return root / first[0].removeprefix("gitdir:").strip()
    return dot_git


def levels(cwd: Path, root: Path | None) -> list[Path]:
    """The folders from the repository root down to `cwd` (just `cwd` outside a repo)."""
    if root is None or root == cwd:
        return [cwd]
    between = [folder for folder in cwd.parents if folder.is_relative_to(root)]
    return [*reversed(between), cwd]


def project_levels(workspace: Path | str) -> list[Path]:
    cwd = workspace_path(workspace)
    return levels(cwd, find_repo_root(cwd))


def display_path(path: Path, root: Path | None) -> str:
    """Project files relative to the repository root, anything else absolute."""
    if root is not None and path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    return str(path)


class Capped(msgspec.Struct, frozen=True):
    """What was read of a file and how many of its bytes were left out."""

    text: str
    omitted: int


def read_capped(path: Path, cap: int) -> Capped:
    """At most `cap` bytes of the file, cut at a line end when one is near, otherwise at a
    character boundary. Raises OSError (FileNotFoundError when it is not there)."""
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(cap + 1) if cap > 0 else b""
    if len(data) <= cap:
        return Capped(data.decode("utf-8", errors="replace"), max(0, size - len(data)))
    kept = _cut(data, cap)
    return Capped(kept.decode("utf-8", errors="replace"), max(size, len(data)) - len(kept))


def _cut(data: bytes, cap: int) -> bytes:
    line_end = data.rfind(b"\n", 0, cap)
    if line_end >= cap // 2:
        return data[: line_end + 1]
    end = cap
    while end > 0 and data[end] & 0xC0 == 0x80:  # never split a UTF-8 sequence
        end -= 1
    return data[:end]


def cut_note(omitted: int, shown_as: str) -> str:
    return f"[… cut: {omitted} bytes of {shown_as} not shown]"


def capped_text(capped: Capped, shown_as: str) -> str:
    """The text with the cut note on its own line when something was left out."""
    text = capped.text.rstrip()
    if not capped.omitted:
        return text
    note = cut_note(capped.omitted, shown_as)
    return f"{text}\n{note}" if text else note
