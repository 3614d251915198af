"""The workspace boundary: where a path really points, and whether that is inside.

Shared by the tools (which resolve what they touch) and the permission layer (which
checks the same real paths, so a symlink cannot smuggle a path out); neither imports the
other for it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path


def resolve(workspace: Path, path: str) -> Path:
    """The real path `path` names: `~` expanded, relative to `workspace`, symlinks and
    `..` resolved. Raises ValueError for a path with a NUL byte or a `~user` that names
    no user."""
    joined = _expand_home(Path(workspace)) / _expand_home(Path(path))
    return Path(os.path.realpath(joined))


def _expand_home(path: Path) -> Path:
    try:
        return path.expanduser()
    except RuntimeError as exc:  # pathlib's way of saying the user (or $HOME) is unknown
        head = path.parts[0]
        why = "the home directory is unknown" if head == "~" else "no such user"
        raise ValueError(f"cannot expand {head!r}: {why}") from exc


def is_inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether the real `path` is one of the real `roots` or lies below one."""
    real = Path(os.path.realpath(path))
    return any(real.is_relative_to(os.path.realpath(root)) for root in roots)


_databases: Counter[str] = Counter()
"""SQLite files this process keeps open (the session store), by how many stores."""


def own_database(path: Path) -> None:
    """Mark a SQLite database this process uses: file tools will not open it (below)."""
    _databases[os.path.abspath(path)] += 1


def release_database(path: Path) -> None:
    """A store of `path` was closed."""
    key = os.path.abspath(path)
    _databases[key] -= 1
    if _databases[key] <= 0:
        del _databases[key]


def is_own_database(info: os.stat_result) -> bool:
    """Whether a file (by its stat: a symlink or a hard link to it is the same file) is a
    database this process uses, or its WAL or shared-memory file. Opening such a file in
    this process and closing it drops every POSIX lock SQLite holds on it (fcntl locks
    belong to the process, not to the descriptor), so a read_file of the session store
    could let another process's checkpoint rewrite it under our connection."""
    for database in _databases:
        for suffix in ("", "-wal", "-shm"):
            try:
                own = os.stat(database + suffix)
            except OSError:
                continue
            if (own.st_dev, own.st_ino) == (info.st_dev, info.st_ino):
                return True
    return False
