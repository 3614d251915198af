"""The workspace boundary: where a path really points, and whether that is inside.

Shared by the tools (which resolve what they touch) and the permission layer (which
checks the same real paths, so a symlink cannot smuggle a path out); neither imports the
other for it.
"""

from __future__ import annotations

import os
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
