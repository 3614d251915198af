"""The workspace boundary: where a path really points, and whether that is inside; and
where a program found on PATH lies (below).

Shared by the tools (which resolve what they touch) and the permission layer (which
checks the same real paths, so a symlink cannot smuggle a path out); neither imports the
other for it.
"""

from __future__ import annotations

import functools
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


# --- programs found on PATH ------------------------------------------------------------
#
# A folder of the workspace on PATH (an activated `.venv/bin`, `node_modules/.bin`,
# direnv's `PATH_add bin`) or a relative entry (`.`, an empty one: the folder a child
# starts in) lets a command put a program of its own where a later bare name finds it: a
# `git` that CodeCoder's own git then runs on the host, a `bwrap` that "confines" the
# next command, a `cat` that a line allowed unasked as read-only runs.


def host_program(name: str, roots: Sequence[Path], search: str | None = None) -> str | None:
    """The program CodeCoder itself starts as `name`: the first on `search` (default:
    PATH) in an absolute folder that is not in `roots`, and whose real file is not in
    them either (a link from `~/bin` into the workspace is the workspace's); None when
    there is none. Skipped entries are judged by place, not content, so the answer
    holds whatever a command writes in the roots."""
    return _host_program(name, tuple(os.path.realpath(r) for r in roots), _search_path(search))


def runs_from_inside(
    name: str, roots: Sequence[Path], cwd: Path, search: str | None = None
) -> bool:
    """Whether a bare `name` typed in a command run in `cwd` (no `/` in it) runs a
    program the roots hold: the first one found on `search` (default: PATH), as the
    shell finds it (a relative entry from `cwd`), lies in them."""
    real_roots = tuple(os.path.realpath(r) for r in roots)
    for entry in _search_path(search).split(os.pathsep):
        candidate = os.path.join(cwd, entry or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return _in_roots(candidate, real_roots)
    return False


@functools.lru_cache(maxsize=64)
def _host_program(name: str, roots: tuple[str, ...], search: str) -> str | None:
    for entry in search.split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        candidate = os.path.join(entry, name)
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        if not _in_roots(candidate, roots):
            return candidate
    return None


def _in_roots(candidate: str, roots: tuple[str, ...]) -> bool:
    """The folder as written or the file as it really is lies at or below a root."""
    places = (os.path.realpath(os.path.dirname(candidate)), os.path.realpath(candidate))
    return any(p == r or p.startswith(r.rstrip("/") + "/") for p in places for r in roots)


def _search_path(search: str | None) -> str:
    return search if search is not None else os.environ.get("PATH", os.defpath)
