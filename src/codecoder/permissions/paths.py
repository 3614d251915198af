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
`core.hooksPath` names (husky's `.husky/`), whose scripts git runs, and every config file
inside the workspace that git's config includes (`include.path`, `includeIf.*.path`, the
"optional local config" pattern): written, it is git's config, whose `core.fsmonitor`,
`core.pager`, filters and aliases are commands the user's next `git` runs outside any
sandbox.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

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
        for root in roots:
            guarded = git_guards(root).guards(candidate)
            if guarded is not None:
                return guarded
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


class GitGuards(NamedTuple):
    """What git reads as its own: the hooks folders (`core.hooksPath`) and the config
    files git's config includes (each as git names it and as its real path, also when
    the file does not exist yet: creating it plants config), wherever they are: one may
    lie in another root of the session."""

    hooks: tuple[Path, ...] = ()
    configs: tuple[Path, ...] = ()

    def guards(self, path: Path) -> str | None:
        """Why a write to `path` would change what git runs, or None: a write into a
        hooks folder or to an included file, or to a folder holding one (moved aside
        or removed, it could be made again with a planted file in it)."""
        for hooks in self.hooks:
            if path.is_relative_to(hooks):
                return f"it is inside {hooks}, the folder of git hooks (core.hooksPath)"
            if hooks.is_relative_to(path):
                return f"it holds {hooks}, the folder of git hooks (core.hooksPath)"
        for config in self.configs:
            if config.is_relative_to(path):
                which = "is" if config == path else "holds"
                return f"it {which} {config}, a file git's config includes (include.path)"
        return None


_GUARDED_KEYS = r"^(core\.hookspath|include\.path|includeif\..*\.path)$"


_guards: dict[Path, tuple[tuple[object, ...], GitGuards]] = {}
_guards_lock = threading.Lock()

def git_guards(workspace: Path) -> GitGuards:
    """The workspace's GitGuards, as the write check protects them and the sandbox binds
    them read-only (sandbox/layout.py). Read again whenever a config file git reads has
    changed since (its mtime, size or inode: husky's `prepare` sets core.hooksPath in the
    middle of a session, a daemon serves a workspace for days), else from the cache: a
    handful of `stat`s a check instead of a git process."""
    with _guards_lock:
        kept = _guards.get(workspace)
    configs = kept[1].configs if kept is not None else ()
    stamp = _config_stamp(workspace, configs)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    found = _read_guards(workspace)  # the stamp is from before: a change made while
    with _guards_lock:  # git reads is seen at the next check
        _guards[workspace] = (stamp, found)
    return found


def _config_stamp(workspace: Path, includes: Sequence[Path]) -> tuple[object, ...]:
    """What the config files git reads for `workspace` look like now: system, global,
    the repository's (its git dir's and, for a worktree, the common one's) and the
    included ones. Only the host changes them (a command cannot write any that lies in
    the workspace: the sandbox binds it read-only, the write check asks), so a change in
    the same clock tick as the last look, with the same size, is not guarded against."""
    from codecoder.hostgit import repository_top

    home = Path.home()
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    files = [
        os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig",
        os.environ.get("GIT_CONFIG_GLOBAL") or str(home / ".gitconfig"),
        os.path.join(xdg, "git", "config"),
        *map(str, includes),
    ]
    top = repository_top(workspace)
    if top is not None:
        files += _repository_configs(top / ".git")
    stamp: list[object] = []
    for name in files:
        try:
            info = os.stat(name)
        except OSError:
            stamp.append((name, None))
            continue
        stamp.append((name, info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino))
    return tuple(stamp)


def _repository_configs(dot_git: Path) -> list[str]:
    """`config` and `config.worktree` of the git dir `.git` is or points to (a `gitdir:`
    file), and of its common dir (`commondir`), by looking."""
    folder = dot_git
    if dot_git.is_file():
        try:
            first = dot_git.read_text(errors="replace")[:4096].splitlines()[:1]
        except OSError:
            return []
        if not first or not first[0].startswith("gitdir:"):
            return []
        folder = dot_git.parent / first[0].removeprefix("gitdir:").strip()
    found = [str(folder / "config"), str(folder / "config.worktree")]
    try:
        common = (folder / "commondir").read_text(errors="replace")[:4096].strip()
    except OSError:
        return found
    return [*found, str(folder / common / "config"), str(folder / common / "config.worktree")]


def _read_guards(workspace: Path) -> GitGuards:
    """One `git config` that follows includes (so an included file's own includes are
    listed too) and names the file each value came from: an include's relative path is
    relative to that file's folder, a hooks path to the top of the work tree."""
    found = _git(workspace, "config", "--show-origin", "-z", "--get-regexp", _GUARDED_KEYS)
    if not found:
        return GitGuards()
    fields = found.split("\0")
    hooks: list[Path] = []
    configs: list[Path] = []
    top = Path(_git(workspace, "rev-parse", "--show-toplevel").strip() or workspace)
    for origin, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = entry.partition("\n")
        if not value:
            continue
        if key == "core.hookspath":
            found_hooks = Path(os.path.realpath(top / os.path.expanduser(value)))
            # husky (9) points git at `.husky/_`, whose scripts run the ones in `.husky/`
            hooks.append(found_hooks.parent if found_hooks.name == "_" else found_hooks)
        elif origin.startswith("file:"):  # git names the file from the work tree's top
            named, value = top / origin.removeprefix("file:"), os.path.expanduser(value)
            written = Path(os.path.normpath(named.parent / value))
            # what git opens: `..` after a link (a `.git` that is one) leaves its target
            opened = Path(os.path.realpath(Path(os.path.realpath(named)).parent / value))
            configs += dict.fromkeys((written, opened))
    return GitGuards(tuple(hooks), tuple(configs))


def _git(workspace: Path, *args: str) -> str:
    """What `git -C workspace ARGS` prints, or "" when it fails or finds nothing."""
    from codecoder.hostgit import program

    git = program(workspace)
    if git is None:
        return ""
    try:
        done = subprocess.run(
            [git, "-C", str(workspace), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


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
