"""Where a path really points, and whether that is inside the workspace.

The check must see what the tool will touch, so a path is resolved the way the file
tools resolve it (tools.workspace.resolve) or bash resolves a redirection target
(relative to the command's cwd), to its real path, symlinks included (a dangling link
counts as its target).
Protected places (`.git/`, `.codecoder/`, the user's CodeCoder config) are judged on
both the path as written and the real path, so neither a link into them nor a link out
of them hides a write there.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import msgspec

from codecoder import paths
from codecoder.tools.workspace import is_inside, resolve

PROTECTED_DIRS = (".git", ".codecoder")


class Place(msgspec.Struct, frozen=True):
    """A resolved path: `lexical` is it with `..` folded but links kept, `real` with links
    resolved; `relative` is the real path under the workspace root (None when not under
    it); `inside` says it is under the workspace or an extra root."""

    written: str
    lexical: Path
    real: Path
    inside: bool
    relative: str | None


def real_path(base: Path, raw: str) -> Path:
    """`raw` as the shell sees it: relative to `base` (absolute stays), symlinks resolved,
    existing or not."""
    return Path(os.path.realpath(base / raw))


def place(raw: str, base: Path, workspace: Path, roots: Sequence[Path], *, tool: bool) -> Place:
    """Where `raw` points. `tool`: resolve it as the file tools do (workspace.resolve,
    which also expands `~`); else as the shell does for a redirection target."""
    if tool:
        real = resolve(base, raw)
        lexical = Path(os.path.normpath(base.expanduser() / Path(raw).expanduser()))
    else:
        real = real_path(base, raw)
        lexical = Path(os.path.normpath(base / raw))
    root = Path(os.path.realpath(workspace))
    relative = real.relative_to(root).as_posix() if real.is_relative_to(root) else None
    inside = is_inside(real, roots)
    return Place(written=raw, lexical=lexical, real=real, inside=inside, relative=relative)


def protected_reason(target: Place, roots: Sequence[Path]) -> str | None:
    """Why a write to `target` must always be confirmed, or None."""
    config = Path(os.path.realpath(paths.config_dir()))
    for candidate in (target.real, target.lexical):
        if candidate.is_relative_to(config):
            return "it is CodeCoder's own configuration"
        name = _protected_component(candidate, roots)
        if name is not None:
            return f"it is inside {name}/"
    return None


def _protected_component(path: Path, roots: Sequence[Path]) -> str | None:
    parts = _parts_below_root(path, roots)
    for part in parts:
        folded = part.casefold()
        if folded in PROTECTED_DIRS:
            return folded
    return None


def _parts_below_root(path: Path, roots: Sequence[Path]) -> tuple[str, ...]:
    for root in roots:
        for form in (Path(os.path.realpath(root)), Path(os.path.abspath(root))):
            if path.is_relative_to(form):
                return path.relative_to(form).parts
    return path.parts
