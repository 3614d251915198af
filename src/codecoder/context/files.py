"""Finding and reading the files the system prompt is built from.

"The repository" is the nearest folder at or above the workspace that holds `.git`
(a folder, or a file pointing elsewhere as in worktrees and submodules). Project files
are looked up at every level from that root down to the workspace; outside a repository
only the workspace itself counts, so a stray AGENTS.md in $HOME never leaks into an
unrelated folder. Every read is capped in bytes, and what was left out is said in a note.

A file is read only when it is a regular file whose real path (symlinks resolved) lies
inside the folder it belongs to: the repository root (the workspace outside a
repository) for project files, the user config dir for the user's. A cloned repository
could otherwise link AGENTS.md to /proc/self/environ or ~/.ssh and have the secrets put
into the prompt, or hang the read on a FIFO.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

import msgspec

from codecoder.wording import counted

KIB = 1024
GIT_FILE_CAP = 4 * KIB + 16
"""A `.git` file: `gitdir: ` and a path (PATH_MAX is 4 KiB)."""


def workspace_path(workspace: Path | str) -> Path:
    """Absolute and normalised, without resolving symlinks (the path the user sees)."""
    return Path(os.path.abspath(workspace))


def git_dir(root: Path) -> Path:
    """The repository's git folder: `.git`, or where a `.git` file's `gitdir:` points."""
    dot_git = root / ".git"
    if dot_git.is_file():
        try:
            capped = read_capped(dot_git, GIT_FILE_CAP)
        except OSError:
            return dot_git
        first = capped.text.splitlines()[:1]
        if not capped.omitted and first and first[0].startswith("gitdir:"):
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
    from codecoder.hostgit import repository_top

    return levels(cwd, repository_top(cwd))


def display_path(path: Path, root: Path | None) -> str:
    """Project files relative to the repository root, anything else absolute."""
    if root is not None and path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    return str(path)


class Capped(msgspec.Struct, frozen=True):
    """What was read of a file and how many of its bytes were left out."""

    text: str
    omitted: int
    used: int
    """Bytes of the cap this read took: all of it when the file was cut, else its length
    (what a family's budget is charged, whatever the file's stat size claims)."""


class NotAllowed(OSError):
    """A file the prompt must not read: not a regular file, or a link leading out of the
    folder it belongs to. `strerror` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EACCES, reason)


def read_capped(path: Path, cap: int, within: Path | None = None) -> Capped:
    """At most `cap` bytes of the regular file `path`, cut at a line end when one is near,
    otherwise at a character boundary. With `within`, the file's real path must be inside
    that folder. Raises OSError: FileNotFoundError when it is not there, NotAllowed."""
    with open_regular(path, within) as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(cap + 1) if cap > 0 else b""
    if len(data) <= cap:
        omitted = max(0, size - len(data))
        used = cap if omitted else len(data)
        return Capped(data.decode("utf-8", errors="replace"), omitted, used)
    kept = _cut(data, cap)
    omitted = max(size, len(data)) - len(kept)
    return Capped(kept.decode("utf-8", errors="replace"), omitted, cap)


def open_regular(path: Path, within: Path | None = None) -> BinaryIO:
    """`path` opened for reading if it is a regular file (inside `within`, when given).
    Opened without blocking and checked again on the open file, so a FIFO or device put
    in its place meanwhile is refused instead of hanging or streaming forever."""
    real = os.path.realpath(path)
    if within is not None and not _inside(real, within):
        if not os.path.lexists(real):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
        raise NotAllowed(f"it leads outside {within} (symlinks are followed only inside it)")
    if not stat.S_ISREG(os.stat(real).st_mode):
        raise NotAllowed("not a regular file")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(real, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotAllowed("not a regular file")
    return os.fdopen(fd, "rb")


def _inside(real: str, folder: Path) -> bool:
    return Path(real).is_relative_to(os.path.realpath(folder))


def _cut(data: bytes, cap: int) -> bytes:
    line_end = data.rfind(b"\n", 0, cap)
    if line_end >= cap // 2:
        return data[: line_end + 1]
    end = cap
    while end > 0 and data[end] & 0xC0 == 0x80:  # never split a UTF-8 sequence
        end -= 1
    return data[:end]


def cut_note(omitted: int, shown_as: str) -> str:
    return f"[… cut: {counted(omitted, 'byte')} of {shown_as} not shown]"


def capped_text(capped: Capped, shown_as: str) -> str:
    """The text with the cut note on its own line when something was left out."""
    text = capped.text.rstrip()
    if not capped.omitted:
        return text
    note = cut_note(capped.omitted, shown_as)
    return f"{text}\n{note}" if text else note
