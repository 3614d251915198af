"""The process limit of confined commands (`[sandbox] max_processes`, docs/sandbox.md).

A pid namespace does not bound how many processes a command makes: they are the host's
processes all the same, and without a limit only the kill path racing a fork bomb stands
between it and the host's process table. Which limit the kernel applies depends on who
we are, so `decide` picks one of two ways, once per process:

- **Not root, bwrap not setuid** (`rlimit`): bwrap gives the command a user namespace of
  its own, and RLIMIT_NPROC set inside it (`prlimit --nproc=N:N --` before the command)
  counts the processes of that uid in that namespace only, the command's and not the
  user's others (the kernel counts per namespace since Linux 5.14). Set on bwrap itself
  it would count every process of the user: a namespace's ceiling is its creator's limit.
  Threads count as processes. The command has no capability to raise it.
- **Root** (`cgroup`): the kernel never applies RLIMIT_NPROC to root (uid 0 of the first
  user namespace, capabilities or not; bwrap's user namespace would map it to that uid
  again). A cgroup's `pids.max` holds for root too: where the cgroup v1 `pids` hierarchy
  is writable, each command gets a cgroup of its own below ours, which a shell enters
  before it becomes bwrap (`echo $$ > …/cgroup.procs && exec bwrap …`: everything bwrap
  starts is counted from the start, and a failed entry runs nothing). The cgroup is
  removed when the command has ended (`Groups.release`) or the session ends.

Nowhere else (root where only cgroup v2 is writable: a cgroup of ours cannot take the
`pids` controller while CodeCoder itself is in it; setuid bwrap; kernels before 5.14),
with the reason in `NoLimit`.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import itertools
import os
import select
import shutil
import stat
import threading
import time
from collections.abc import Sequence
from typing import Literal

import msgspec

DEFAULT_MAX = 2048
"""Processes and threads one confined command may have at once: far above a build's
(`make -j`, a test runner's workers, a browser's threads), far below a pid table's."""
GROUP_PREFIX = "codecoder-"
_SYSTEM_BIN = "/usr/bin:/bin:/usr/sbin:/sbin"
_ENTER = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
_SHELL = ("/bin/sh", "-p", "-c", _ENTER)
"""The shell that enters a command's cgroup runs on the host, outside bwrap, with the
environment of what it starts (a project's MCP server names its own `env`). `-p`: where
/bin/sh is bash, it imports no function (`BASH_FUNC_echo%%` would replace the `echo`),
reads no BASH_ENV or ENV and ignores SHELLOPTS (xtrace with a PS4 that runs a command);
dash takes `-p` too."""
EXIT_WAIT = 2.0
"""Seconds a command's cgroup waits for a process of it that is still exiting."""
_SEQUENCE = itertools.count(1)
"""Numbers the cgroups of this process (of all its sandboxes)."""


class ProcessLimit(msgspec.Struct, frozen=True):
    """How confined commands are held to `count` processes: `rlimit` runs `tool`
    (prlimit) inside bwrap; `cgroup` makes each command a cgroup below `tool`."""

    count: int
    how: Literal["rlimit", "cgroup"]
    tool: str

    def inner(self, argv: Sequence[str]) -> list[str]:
        """The command as bwrap runs it."""
        if self.how == "rlimit":
            return [self.tool, f"--nproc={self.count}:{self.count}", "--", *argv]
        return list(argv)


class NoLimit(msgspec.Struct, frozen=True):
    """Why confined commands run without a process limit here."""

    reason: str


def decide(count: int, bwrap: str) -> ProcessLimit | NoLimit:
    """The limit confined commands get here (`count` 0: none asked for)."""
    if count <= 0:
        return NoLimit("[sandbox] max_processes = 0")
    if os.geteuid() == 0:
        base = _pids_cgroup()
        if isinstance(base, NoLimit):
            return base
        return ProcessLimit(count, "cgroup", base)
    return _rlimit(count, bwrap)


def _rlimit(count: int, bwrap: str) -> ProcessLimit | NoLimit:
    try:
        info = os.stat(bwrap)
    except OSError as exc:
        return NoLimit(f"cannot read {bwrap}: {exc.strerror}")
    if info.st_mode & stat.S_ISUID and info.st_uid == 0:
        return NoLimit("bwrap is setuid root: commands share the user's process count")
    if _kernel() < (5, 14):
        return NoLimit("Linux before 5.14 counts a user's processes across namespaces")
    tool = shutil.which("prlimit", path=_SYSTEM_BIN)
    if tool is None:
        return NoLimit("prlimit (util-linux) is not installed")
    return ProcessLimit(count, "rlimit", tool)


def _kernel() -> tuple[int, int]:
    parts = os.uname().release.split(".")
    try:
        return int(parts[0]), int("".join(itertools.takewhile(str.isdigit, parts[1])))
    except (IndexError, ValueError):
        return (0, 0)


@functools.cache
def _pids_cgroup() -> str | NoLimit:
    """Our cgroup in a writable v1 `pids` hierarchy, tried once per process by making
    (and removing) a cgroup there."""
    mount, root = _pids_mount()
    if mount is None:
        return NoLimit("running as root, RLIMIT_NPROC does not apply, and no cgroup v1 pids")
    ours = _own_pids_path()
    if ours is None or not (ours + "/").startswith(root.rstrip("/") + "/"):
        return NoLimit("running as root, and our pids cgroup is not in the mounted hierarchy")
    base = os.path.join(mount, ours[len(root.rstrip("/")) :].lstrip("/")).rstrip("/")
    trial = os.path.join(base, f"{GROUP_PREFIX}{os.getpid()}-probe")
    try:
        os.mkdir(trial)
        try:
            with open(os.path.join(trial, "pids.max"), "w") as out:
                out.write("1")
        finally:
            os.rmdir(trial)
    except OSError as exc:
        return NoLimit(f"running as root, and the pids cgroup {base} is not writable: {exc}")
    return base


def _pids_mount() -> tuple[str | None, str]:
    """Where the v1 `pids` hierarchy is mounted, and the cgroup it shows as its root."""
    try:
        with open("/proc/self/mountinfo") as info:
            for line in info:
                left, _, right = line.partition(" - ")
                fields, after = left.split(), right.split()
                if len(after) >= 3 and after[0] == "cgroup" and "pids" in after[2].split(","):
                    return fields[4], fields[3]
    except OSError:
        pass
    return None, "/"


def _own_pids_path() -> str | None:
    try:
        with open("/proc/self/cgroup") as groups:
            for line in groups:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "pids" in controllers.split(","):
                    return path
    except (OSError, ValueError):
        pass
    return None


class Groups:
    """The cgroups a Sandbox made for its commands (the `cgroup` way): made just before
    a spawn, removed once the command has ended. One that is still busy then (a process
    of it not yet reaped) is tried again at the next release, and at `close`. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: set[str] = set()
        self._ended: set[str] = set()
        self._swept = False

    def enter(self, limit: ProcessLimit, argv: Sequence[str]) -> tuple[list[str], str | None]:
        """`argv` (bwrap's) started inside a new cgroup of `limit.count` processes, and
        the cgroup (None: `limit` is not a cgroup one)."""
        if limit.how != "cgroup":
            return list(argv), None
        with self._lock:
            if not self._swept:
                _sweep(limit.tool)
                self._swept = True
        while True:  # one left by a process that had our pid before is passed over
            group = os.path.join(limit.tool, f"{GROUP_PREFIX}{os.getpid()}-{next(_SEQUENCE)}")
            with contextlib.suppress(FileExistsError):
                os.mkdir(group)
                break
        with self._lock:
            self._made.add(group)
        with open(os.path.join(group, "pids.max"), "w") as out:
            out.write(str(limit.count))
        return [*_SHELL, group, *argv], group

    def release(self, group: str | None) -> None:
        """Remove `group` (its command has ended), and those that were still busy."""
        with self._lock:
            if group is not None:
                self._ended.add(group)
            ended = list(self._ended)
        for each in ended:
            if _remove(each):
                with self._lock:
                    self._ended.discard(each)
                    self._made.discard(each)

    def close(self) -> None:
        """Remove every cgroup still here (the commands of hooks and servers end before)."""
        with self._lock:
            made, self._made, self._ended = self._made, set(), set()
        for group in made:
            _remove(group)


def _remove(group: str) -> bool:
    """Remove `group`, once the processes still in it have exited (at most EXIT_WAIT: a
    command's processes are SIGKILLed before its end, but one may still be on its way
    out, and the cgroup cannot go before it)."""
    try:
        os.rmdir(group)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        pass
    try:
        with open(os.path.join(group, "cgroup.procs")) as procs:
            left = [int(line) for line in procs if line.strip().isdigit()]
    except OSError:
        left = []
    deadline = time.monotonic() + EXIT_WAIT
    for pid in left:
        with contextlib.suppress(OSError):
            fd = os.pidfd_open(pid)
            try:
                select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            finally:
                os.close(fd)
    try:
        os.rmdir(group)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def reached(group: str | None) -> bool:
    """Whether a fork in `group` failed at its limit (`pids.events`)."""
    if group is None:
        return False
    try:
        with open(os.path.join(group, "pids.events")) as events:
            return any(line.split() != ["max", "0"] for line in events if line.startswith("max"))
    except OSError:
        return False


def _sweep(base: str) -> None:
    """Remove the empty cgroups of processes of ours that no longer exist (one killed
    outright never removed its own)."""
    for group in glob.glob(os.path.join(base, f"{GROUP_PREFIX}*-*")):
        pid_text = os.path.basename(group)[len(GROUP_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.rmdir(group)
        except OSError:
            continue
