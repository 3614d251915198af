"""What a confined command must not write although it lies in the workspace, and what it
must not see at all.

**Protected folders** (bound read-only again inside the writable workspace): every
`.git` and `.codecoder` entry at any depth, in any case (a `.git` file of a worktree or
submodule too: rewritten, it would point git elsewhere), every folder shaped like a git
directory (two of the marks in `permissions.paths.GIT_DIR_MARKS`: a planted bare
repository whose `config` runs a program when git enters it), the hooks folder the
repository's `core.hooksPath` names, and every config file in the workspace that git's
config includes (`include.path`; one that does not exist is made, empty, first). The
folders on the way to each of these are bound onto themselves (`pinned`), writable: a
mount point cannot be renamed, so no command can move the folder aside and make a
writable one in its place. So no command can plant a hook, rewrite
git's config or grant CodeCoder rights in `.codecoder/config.toml`, whatever program it
runs.

Finding them means walking the workspace before every command (a command may have
planted a repository since the last one). `FolderScan` keeps each folder's listing with
its mtime and lists a folder again only when its mtime changed (an entry added, removed
or renamed changes its folder's mtime), so a later scan costs one `stat` per folder.
A folder whose mtime is younger than `FRESH_NS` at the scan is listed again next time
anyway: file times are coarse (a jiffy), so a change in the same tick as the listing
could leave the mtime unchanged. Symlinks are not followed (a write through one to
outside the workspace meets the read-only root). What a command creates is protected
from the next command on, not within the command that creates it.

**Absent entries are protected too.** A `.git` or `.codecoder` that does not exist at
the top of a writable root could be made by a command (`git init` with a config whose
filter the next session's own `git status` runs; a `.codecoder/config.toml` that gives
the next session rights), and bwrap can only bind what exists. `hold_places` makes each
missing one an empty folder on the host before the scan, so it is bound read-only like
one that was there. git skips an empty `.git` (it is no repository: discovery goes on
upwards, and `git init` fills it), and an empty `.codecoder` holds no settings; still,
a tool that looks for the top of a project by a `.git` entry would stop there, so the
session removes them when it ends if they are still empty (`FolderScan.release`). So does
`protected` for a hooks folder or an included config file that git's config names but
that does not exist yet. Deeper down, `.git` and `.codecoder` are protected where they
exist: one command can still make `sub/.git` and write into it (docs/sandbox.md, "What
it does not protect").

**Masked places** (an empty folder no one may open, or an empty file, over the real
one): credential folders and files in the home folder, CodeCoder's own config and data
(the sessions of every project), the runtime folder (`$XDG_RUNTIME_DIR`: the D-Bus and
systemd user sockets, through which a command could have something run outside, and
CodeCoder's daemon socket), every user's runtime folder, and the sockets of container
engines, the system bus, databases and other services under `/run` (`SYSTEM_SOCKETS`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, NamedTuple

PROTECTED_NAMES = frozenset({".git", ".codecoder"})
"""Entries bound read-only wherever they are in the workspace (compared case-folded)."""

FRESH_NS = 2_000_000_000
"""A folder modified this recently (2 s) before a scan is listed again at the next."""

HOME_CREDENTIALS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".oci",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".npmrc",
    ".yarnrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".terraform.d",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".config/rclone",
    ".config/op",
    ".password-store",
    ".local/share/keyrings",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".thunderbird",
)
"""Below the home folder: keys, tokens, cookie jars."""

SYSTEM_SOCKETS = (
    "/run/user",
    "/run/dbus",
    "/run/docker.sock",
    "/run/docker",
    "/run/containerd",
    "/run/podman",
    "/run/libvirt",
    "/run/snapd.socket",
    "/run/snapd-snap.socket",
    "/run/systemd/private",
    "/run/systemd/journal",
    "/run/postgresql",
    "/run/mysqld",
    "/run/redis",
    "/run/cups",
    "/run/avahi-daemon",
)
"""Sockets of the host, and the folders that hold them, through which a process could
have something started outside the sandbox (a container engine, the system bus,
systemd, every user's runtime folder: session buses, agents, keyrings), reach a
database as the user (PostgreSQL and MySQL trust a local socket's peer), print, or write
the system log. `/var/run` is a link to `/run` (masked by real path). What stays
visible under `/run`, and why, is listed in docs/sandbox.md."""


class Mask(NamedTuple):
    """A place to hide: `dir` gets an empty folder of mode 000 over it (opening it is
    EACCES), anything else an empty read-only file (/dev/null)."""

    path: str
    kind: Literal["dir", "file"]


def masks(
    home: Path,
    *,
    config_dir: Path,
    data_dir: Path,
    runtime_dir: Path | None,
) -> list[Mask]:
    """The masked places that exist now, by real path, each once (a mask inside another
    is dropped)."""
    base = os.fspath(home)
    wanted = [os.path.join(base, name) for name in HOME_CREDENTIALS]
    wanted += [os.fspath(config_dir), os.fspath(data_dir)]
    if runtime_dir is not None:
        wanted.append(os.fspath(runtime_dir))
    wanted += SYSTEM_SOCKETS
    found: dict[str, Mask] = {}
    for place in wanted:
        try:
            info = os.stat(place)
        except OSError:
            continue  # absent: nothing to hide, and bwrap could not mount over it
        real = os.path.realpath(place)  # bwrap mounts over what a link points to
        kind: Literal["dir", "file"] = "dir" if stat.S_ISDIR(info.st_mode) else "file"
        found.setdefault(real, Mask(real, kind))
    ordered = sorted(found.values())
    return [m for m in ordered if not any(_below(m.path, o.path) for o in ordered if o != m)]


def hidden_places() -> list[Mask]:
    """The masks for this process's home, XDG folders and CodeCoder's own folders."""
    from codecoder import paths

    return masks(
        Path.home(),
        config_dir=paths.config_dir(),
        data_dir=paths.data_dir(),
        runtime_dir=runtime_folder(),
    )


def hold_own_folders(roots: Iterable[str]) -> None:
    """Make CodeCoder's own config and data folders where they lie in a writable root
    (the workspace is the home folder, or a dotfiles repository holds them) and do not
    exist yet, so that they are masked like ones that do: else a command could make
    `config.toml` (hooks with `sandbox = false`, rules) or the approvals of hooks, MCP
    servers and rules for the next session."""
    from codecoder import paths

    for folder in (paths.config_dir(), paths.data_dir()):
        real = os.path.realpath(folder)
        if any(real == root or _below(real, root) for root in roots):
            with contextlib.suppress(OSError):
                os.makedirs(real, 0o700, exist_ok=True)


def runtime_folder() -> Path | None:
    """`$XDG_RUNTIME_DIR`, else `/run/user/UID` when it exists."""
    value = os.environ.get("XDG_RUNTIME_DIR")
    if value and os.path.isabs(value):
        return Path(value)
    default = Path(f"/run/user/{os.getuid()}")
    return default if default.is_dir() else None


def _below(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip("/") + "/")


# --- protected folders ----------------------------------------------------------------


class _Listing(NamedTuple):
    mtime_ns: int
    inode: int
    folders: tuple[str, ...]
    """Sub-folders to walk (real folders, not links; protected ones left out)."""
    protected: tuple[str, ...]
    """Entries of this folder to bind read-only (`.git`, `.codecoder`)."""
    shaped: bool
    """The folder itself looks like a git directory."""


class FolderScan:
    """The protected folders of workspaces, listings cached by mtime (module docstring).
    One per application; thread-safe (commands of sub-agents run in parallel)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listings: dict[str, _Listing] = {}
        self.listed = 0
        """Folders listed (scandir) so far, for tests and benchmarks; the rest were
        answered from the cache."""
        self.held: set[str] = set()
        """The empty folders `hold_places` made for the scans' commands, which the
        session removes when it ends if they are still empty (`release`)."""

    def release(self) -> None:
        """Remove the held folders that are still empty (a `git init` of yours filled
        one: it stays); they are made again at the next session's first command."""
        for place in sorted(self.held, reverse=True):
            with contextlib.suppress(OSError):
                os.rmdir(place)
        self.held.clear()

    def protected(
        self, root: Path, hooks: Iterable[Path] = (), configs: Iterable[Path] = ()
    ) -> list[str]:
        """The real paths below (or at) `root` to bind read-only, parents before children;
        `hooks` are core.hooksPath folders, `configs` the config files git's config
        includes (each kept when inside `root`). A hooks folder or an included file that
        does not exist is made, empty, so that it can be bound: else the command could
        write it (an empty hooks folder holds no hook, an empty include sets nothing)."""
        top = os.path.realpath(root)
        with self._lock:
            found = self._walk(top)
        wanted = [(folder, True) for folder in hooks] + [(config, False) for config in configs]
        for path, is_folder in wanted:
            real = os.path.realpath(path)
            if _below(real, top) or (is_folder and real == top):
                entry = _bindable(real, top, is_folder=is_folder)
                if entry is not None:
                    found.append(entry)
        return _outermost(found)

    def _walk(self, top: str) -> list[str]:
        now = time.time_ns()
        found: list[str] = []
        stack = [top]
        while stack:
            folder = stack.pop()
            try:
                info = os.stat(folder, follow_symlinks=False)
            except OSError:
                self._listings.pop(folder, None)
                continue
            listing = self._listings.get(folder)
            if listing is None or (listing.mtime_ns, listing.inode) != (
                info.st_mtime_ns,
                info.st_ino,
            ):
                listing = self._list(folder, info, now)
            if listing.shaped and folder != top:
                found.append(folder)  # read-only as a whole: nothing below to look at
                continue
            found.extend(os.path.join(folder, name) for name in listing.protected)
            stack.extend(os.path.join(folder, name) for name in listing.folders)
        return found

    def _list(self, folder: str, info: os.stat_result, now: int) -> _Listing:
        self.listed += 1
        folders: list[str] = []
        protected: list[str] = []
        marks = 0
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    if name.casefold() in PROTECTED_NAMES:
                        if os.path.exists(entry.path):  # a dangling link: bwrap could
                            protected.append(name)  # not bind it, and it guards nothing
                        continue
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                        is_file = not is_dir and entry.is_file(follow_symlinks=False)
                    except OSError:
                        continue
                    marks += _is_mark(name, is_dir, is_file)
                    if is_dir:
                        folders.append(name)
        except OSError:
            pass  # unreadable: a command cannot write there either
        # A listing made in the same clock tick as a change could miss it: mtime 0 makes
        # the next scan list this folder again.
        fresh = now - info.st_mtime_ns < FRESH_NS
        listing = _Listing(
            0 if fresh else info.st_mtime_ns,
            info.st_ino,
            tuple(folders),
            tuple(protected),
            marks >= 2,
        )
        self._listings[folder] = listing
        return listing


def hold_places(root: str) -> list[str]:
    """Make `.git` and `.codecoder` at the top of `root` empty folders where they do not
    exist (the module docstring says why); where one is a dangling link into the root,
    make its target so (a command could make it and fill it; outside the roots it
    cannot write). The folders made."""
    made: list[str] = []
    for name in PROTECTED_NAMES:
        place = os.path.join(root, name)
        if os.path.islink(place) and not os.path.exists(place):
            target = os.path.realpath(place)
            if _below(target, root):
                place = target
        try:
            os.makedirs(place, 0o755)
        except OSError:
            continue  # there already (made meanwhile too), or the root is not writable
        made.append(place)
    return made


def pinned(root: str, protected: Iterable[str]) -> list[str]:
    """The folders between `root` and each protected entry (real paths), to bind onto
    themselves: a mount point cannot be renamed or removed, so no command can move a
    protected entry's folder aside and make a new one, with a writable entry (a `.git`
    with a planted config, an included file, a hook), in its place."""
    found: set[str] = set()
    for path in protected:
        folder = os.path.dirname(path)
        while _below(folder, root) and os.path.isdir(folder):
            found.add(folder)
            folder = os.path.dirname(folder)
    return sorted(found, key=lambda p: p.split("/"))


def _bindable(path: str, top: str, *, is_folder: bool = False) -> str | None:
    """What to bind read-only so that no command can write `path`: `path` itself, made
    an empty file (an empty folder with `is_folder`; and the folders on its way) when
    missing, or the entry on its way that is not a folder (it stops `path` from
    existing, bound it cannot be replaced); None for a dangling link, which bwrap cannot
    bind."""
    folder = os.path.dirname(path)
    on_the_way = [folder]
    while _below(folder := os.path.dirname(folder), top):
        on_the_way.append(folder)
    for entry in reversed(on_the_way):
        if os.path.lexists(entry) and not os.path.isdir(entry):
            return entry if os.path.exists(entry) else None
    if os.path.lexists(path):
        return path if os.path.exists(path) else None
    try:
        os.makedirs(path if is_folder else os.path.dirname(path), exist_ok=True)
        if not is_folder:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
    except FileExistsError:
        pass  # made meanwhile: bound as it is
    except OSError:
        return None
    return path


def _is_mark(name: str, is_dir: bool, is_file: bool) -> bool:
    """Whether a folder entry is one of the marks of a git directory."""
    wants_dir = _marks().get(name)
    if wants_dir is None:
        return False
    return is_dir if wants_dir else is_file


@functools.cache
def _marks() -> dict[str, bool]:
    """The permission layer's marks of a git directory: name → whether it is a folder."""
    from codecoder.permissions.paths import GIT_DIR_MARKS

    return {name: check is os.path.isdir for name, check in GIT_DIR_MARKS.items()}


def _outermost(paths: list[str]) -> list[str]:
    """Each path once, none below another, parents before children."""
    result: list[str] = []
    for path in sorted(set(paths), key=lambda p: p.split("/")):
        if not result or not (path == result[-1] or _below(path, result[-1])):
            result.append(path)
    return result
