"""Where a path really points, and whether that is inside the workspace.

The check must see what the tool will touch, so a path is resolved the way the file
tools resolve it (tools.workspace.resolve) or bash resolves a redirection target
(relative to the command's cwd), to its real path, symlinks included (a dangling link
counts as its target).
Protected places (`.git/`, `.codecoder/`, the user's CodeCoder config) are judged on
both the path as written and the real path, so neither a link into them nor a link out
of them hides a write there.

Protection does not hinge on the name `.git`: git takes any folder with `HEAD`,
`objects/` and `refs/` for a repository (`git status` run inside it reads its `config`,
whose `core.fsmonitor` is a command), so a folder that has, or is being given, two of
its marks is protected like `.git`; and so is the hooks folder the repository's own
`core.hooksPath` names (husky's `.husky/`), whose scripts git runs.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import msgspec

from codecoder import paths
from codecoder.boundary import is_inside, resolve

PROTECTED_DIRS = (".git", ".codecoder")
GIT_DIR_MARKS = {
    "HEAD": os.path.isfile,
    "objects": os.path.isdir,
    "refs": os.path.isdir,
    "config": os.path.isfile,
    "packed-refs": os.path.isfile,
    "commondir": os.path.isfile,
}
"""What makes a folder look like a git directory (git itself needs HEAD, objects and
refs); two of them are enough to protect it."""


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
        shaped = _git_dir_ancestor(candidate, roots)
        if shaped is not None:
            return f"it is inside {shaped}, a folder shaped like a git directory"
        hooks = next((h for h in _hooks_folders(roots[0]) if candidate.is_relative_to(h)), None)
        if hooks is not None:
            return f"it is inside {hooks}, the folder of git hooks (core.hooksPath)"
    return None


def git_dir_shaped(folder: Path, roots: Sequence[Path]) -> str | None:
    """The folder (`folder` or one above it, inside the roots) that looks like a git
    directory, or None."""
    return _git_dir_ancestor(folder / "_", roots)


def _git_dir_ancestor(path: Path, roots: Sequence[Path]) -> str | None:
    """The folder above `path` (inside the roots) that has, or would have once `path`
    exists, two marks of a git directory."""
    parts = _parts_below_root(path, roots)
    if parts == path.parts:
        return None
    folder = Path(path.parts[0]).joinpath(*path.parts[1 : len(path.parts) - len(parts)])
    for index, name in enumerate(parts[:-1]):
        folder = folder / name
        below = parts[index + 1]
        marks = sum(
            1 for mark, check in GIT_DIR_MARKS.items() if mark == below or check(folder / mark)
        )
        if marks >= 2:
            return str(folder)
    return None


def hooks_folders(workspace: Path) -> tuple[Path, ...]:
    """The hooks folder of the workspace's repository (`core.hooksPath`), as the write
    check protects it; the sandbox binds it read-only (sandbox/layout.py)."""
    return _hooks_folders(workspace)


@cache
def _hooks_folders(workspace: Path) -> tuple[Path, ...]:
    """The hooks folder the workspace's repository configures (`core.hooksPath`), when
    it lies in the workspace. Read once per workspace, on the first write checked."""
    try:
        done = subprocess.run(
            ["git", "-C", str(workspace), "config", "--get", "core.hooksPath"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    value = done.stdout.strip()
    if done.returncode != 0 or not value:
        return ()
    top = subprocess.run(
        ["git", "-C", str(workspace), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    ).stdout.strip()
    base = Path(top) if top else workspace
    hooks = Path(os.path.realpath(base / os.path.expanduser(value)))
    # husky (9) points git at `.husky/_`, whose scripts run the ones in `.husky/`
    return (hooks.parent,) if hooks.name == "_" else (hooks,)


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
