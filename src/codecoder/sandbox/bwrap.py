"""The bwrap command line of a confined command (docs/sandbox.md lists what each part is
for). `build_argv` is a pure function of what `Confinement.layout` found on disk, so the
arguments can be checked without running bwrap.

Order matters: bwrap applies its mounts one after another, later over earlier.

    --ro-bind / /                 everything read-only
    --dev /dev --proc /proc       a minimal /dev, the proc of the new pid namespace (the
                                  host's /proc would show the agent's environment)
    --tmpfs /tmp                  a private /tmp (or --bind SESSION_TMP /tmp: one that
                                  lasts from one command of a session to the next)
    --ro-bind R R                 our own interpreter and modules where they live under
                                  /tmp (a venv or checkout there), which the private
                                  /tmp would hide from grep's Python engine
                                  (`runtime_under_tmp`)
    masks around a root           (a workspace inside a masked folder shows through)
    --bind W W                    the workspace and each extra root (read-only mode:
                                  --ro-bind, so that one under /tmp is there at all)
    --ro-bind P P                 each protected entry inside a writable root
    the other masks               --perms 0000 --tmpfs DIR, --ro-bind /dev/null FILE
    --unshare-pid --unshare-ipc   alone in a pid namespace; no SysV IPC or POSIX message
                                  queues shared with the host
    --die-with-parent --new-session --cap-drop ALL [--unshare-net]
    --chdir CWD -- [prlimit --nproc=N:N --] ARGV
                                  (the process limit, where it is an rlimit: limits.py)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import msgspec

from codecoder.sandbox.layout import (
    FolderScan,
    Mask,
    hidden_places,
    hold_own_folders,
    hold_places,
    pinned,
)
from codecoder.sandbox.limits import ProcessLimit

ConfinedMode = Literal["workspace-write", "read-only"]


class Layout(msgspec.Struct, frozen=True):
    """What was found on disk for one command: real paths."""

    roots: tuple[str, ...]
    """The workspace and the extra roots: writable in workspace-write."""
    protected: tuple[str, ...] = ()
    masks: tuple[Mask, ...] = ()
    runtime: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()
    """Folders bound onto themselves, writable, so that they cannot be renamed."""


class Confinement(msgspec.Struct, frozen=True):
    """How one command is confined: `mode`, its workspace and the session's other roots
    (writable with it in workspace-write, there read-only in read-only), whether it has
    the network, and the bwrap to run."""

    mode: ConfinedMode
    workspace: Path
    network: bool = False
    extra_roots: tuple[Path, ...] = ()
    bwrap: str = "bwrap"
    tmp: str | None = None
    """A folder of the host mounted as /tmp (the session's own); None: an empty one."""
    reads_only: bool = False
    """Read-only because the command line looked so, in a workspace-write session."""
    escalation: bool = True
    """Whether someone could allow the command to run again unconfined (`sandbox:
    false`): not in a run where nobody answers. Said to the model by sandbox/hints.py."""
    limit: ProcessLimit | None = None
    """How many processes it may have at once, and how that is held (None: no limit)."""

    def roots(self) -> tuple[str, ...]:
        """The real paths of the workspace and the extra roots (those that exist: one
        removed since the session began would make bwrap refuse every command)."""
        found = [os.path.realpath(self.workspace)]
        found += [os.path.realpath(path) for path in self.extra_roots if os.path.isdir(path)]
        return tuple(dict.fromkeys(found))

    def keeps_roots(self) -> bool:
        """Whether nothing the command runs can write the workspace or an extra root
        through the filesystem: read-only, and its /tmp (the host folder the session
        mounts there) outside them all. What it asks a process outside the sandbox to
        do (through a socket) is not covered."""
        if self.mode != "read-only":
            return False
        tmp = os.path.realpath(self.tmp) if self.tmp is not None else None
        return tmp is None or not any(_at_or_below(tmp, root) for root in self.roots())

    def layout(self, scan: FolderScan | None = None) -> Layout:
        """Look at the disk: protected entries (workspace-write), masked places."""
        roots = self.roots()
        protected: list[str] = []
        pins: list[str] = []
        if self.mode == "workspace-write":
            from codecoder.permissions.paths import git_guards

            scan = scan or FolderScan()
            every = [git_guards(Path(root)) for root in roots]
            hooks = [folder for guards in every for folder in guards.hooks]
            configs = [config for guards in every for config in guards.configs]
            hold_own_folders(roots)
            for root in roots:  # a root's config may include a file of another root
                scan.held.update(hold_places(root))
                entries = scan.protected(Path(root), hooks, configs)
                protected += entries
                pins += pinned(root, entries)
        masked = hidden_places()
        if self.mode == "workspace-write":  # a masked folder's parent cannot be moved
            for root in roots:  # aside either (and a new one made in its place)
                pins += pinned(root, [mask.path for mask in masked])
        pins = sorted(set(pins), key=lambda p: p.split("/"))  # parents first
        return Layout(roots, tuple(protected), tuple(masked), runtime_under_tmp(), tuple(pins))

    def wrap(
        self, argv: Sequence[str], *, cwd: Path | None = None, scan: FolderScan | None = None
    ) -> list[str]:
        """The bwrap command line that runs `argv` confined, starting in `cwd` (default:
        the workspace)."""
        start = os.path.realpath(cwd) if cwd is not None else self.roots()[0]
        return build_argv(self, self.layout(scan), argv, start, tmpdir=os.environ.get("TMPDIR"))


def build_argv(
    confinement: Confinement,
    layout: Layout,
    argv: Sequence[str],
    cwd: str,
    *,
    tmpdir: str | None = None,
) -> list[str]:
    """The whole bwrap command line (the module docstring gives the order and why)."""
    args = [confinement.bwrap, *_BASE]
    args += ["--bind", confinement.tmp, "/tmp"] if confinement.tmp else ["--tmpfs", "/tmp"]
    for path in layout.runtime:
        args += ["--ro-bind", path, path]
    around = [m for m in layout.masks if any(_at_or_below(r, m.path) for r in layout.roots)]
    for mask in around:
        args += _mask_args(mask)
    bind = "--bind" if confinement.mode == "workspace-write" else "--ro-bind"
    for root in layout.roots:
        args += [bind, root, root]
    for path in layout.pinned:
        args += ["--bind", path, path]
    for path in layout.protected:
        args += ["--ro-bind", path, path]
    for mask in layout.masks:
        if mask not in around:
            args += _mask_args(mask)
    if tmpdir and not _writable_inside(os.path.realpath(tmpdir), confinement.mode, layout):
        args += ["--setenv", "TMPDIR", "/tmp"]  # theirs would be read-only here
    args += _NAMESPACES
    if not confinement.network:
        args.append("--unshare-net")
    inner = confinement.limit.inner(argv) if confinement.limit is not None else list(argv)
    args += ["--chdir", cwd, "--", *inner]
    return args


def _writable_inside(path: str, mode: ConfinedMode, layout: Layout) -> bool:
    """Whether `path` (real, of the host) can be written inside: under a root in
    workspace-write, else under /tmp, and in neither case under something bound
    read-only there (a protected entry, our runtime, a root in read-only mode)."""
    writable = ("/tmp", *layout.roots) if mode == "workspace-write" else ("/tmp",)
    fixed = (*layout.protected, *layout.runtime)
    if mode == "read-only":
        fixed += layout.roots
    return any(_at_or_below(path, w) for w in writable) and not any(
        _at_or_below(path, f) for f in fixed
    )


def runtime_under_tmp() -> tuple[str, ...]:
    """What grep's Python engine, run confined, loads from under /tmp: this interpreter's
    prefixes and the folders holding codecoder and msgspec (a venv or checkout there; the
    private /tmp would hide them and fail every such child). Real paths strictly below
    /tmp, outermost only: nothing else of the host's /tmp (not the current folder on the
    import path, not a symlink planted to lead out of /tmp) is shown."""
    import sys

    import codecoder

    modules = (codecoder.__file__, msgspec.__file__)
    candidates = [sys.prefix, sys.exec_prefix, sys.base_prefix]
    candidates += [os.path.dirname(os.path.dirname(m)) for m in modules if m]
    real = {os.path.realpath(p) for p in candidates}
    found: list[str] = []
    for path in sorted((p for p in real if p.startswith("/tmp/")), key=len):
        if not any(_at_or_below(path, outer) for outer in found) and os.path.isdir(path):
            found.append(path)
    return tuple(found)


def probe_argv(bwrap: str) -> list[str]:
    """What the probe runs: every option a confined command gets, on `true`."""
    mask = _mask_args(Mask("/tmp/.codecoder-probe", "dir"))
    return [bwrap, *_BASE, "--tmpfs", "/tmp", *mask, *_NAMESPACES, "--unshare-net", "--", "true"]


_BASE = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
_NAMESPACES = (
    "--unshare-pid",
    "--unshare-ipc",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
)


def _mask_args(mask: Mask) -> list[str]:
    if mask.kind == "dir":
        return ["--perms", "0000", "--tmpfs", mask.path]
    return ["--ro-bind", "/dev/null", mask.path]


def _at_or_below(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
