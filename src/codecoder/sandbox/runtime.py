"""`Sandbox`: the mode each command of an application runs in (docs/sandbox.md).

The composition root makes one per agent session and hands it to `run_command`, `grep`
and sub-agents; plan gates ask it too. Which mode a command gets is decided at the
command, not at start-up, because the approval mode can change during a session (an
ACP client's `session/set_mode`):

- a mode given by `--sandbox` or `[sandbox] mode` is used as given; "off" is off. Where
  bwrap does not work, the composition root refuses to start (`check`): a sandbox asked
  for is never silently dropped;
- otherwise `full-auto` runs `workspace-write` where bwrap works; where it does not, the
  command runs unconfined and the run says so once (`take_notice`: a `status_update`
  the faces also print on stderr); the other approval modes run unconfined.

A command line the permission layer's parser reads as writing nothing (`reads_only`:
only commands of the read-only list, no redirection into a file) runs in `read-only`
where the session runs `workspace-write`: it needs nothing writable, and a command that
cannot write the workspace needs no checkpoint (tools/shell.py). The parser's reading
only narrows what a line gets: a misread line's writes fail with "Read-only file
system" (a hint says why when the line fails). The session's /tmp is made outside the
workspace for the same reason.

A line that only reads and runs git (`git status`, `git diff | head`) runs read-only
even where commands run unconfined by default (an approval mode other than `full-auto`,
no `--sandbox`): git takes program names (filters, diff drivers, a pager, gpg) from the
repository's config, which an earlier command, approved or confined, may have written;
read-only and without the network, what such a program does is held (`reads_repository`
in permissions/writes.py). `--sandbox off`, asked for, leaves it unconfined.

A hook or a project's MCP server (`confine_started`) runs in `workspace-write` there too:
it starts by itself, with nobody asked, and runs what the workspace holds (a Makefile, a
script), which an earlier command may have written.

The network is on for every command with `network`, else for the commands `network_for`
allows (`[sandbox] network_allow`, decided by the permission layer's parser); off for
the rest.

bwrap itself is the one on PATH outside the session's roots (`probe.find`): a folder of
the workspace on PATH (an activated `.venv/bin`) could otherwise hold a `bwrap` a command
put there, which would "confine" every later command.

/tmp is the session's own: a folder made at the first confined command and mounted as
/tmp in each, so that a file one command leaves in /tmp is there for the next (the host's
/tmp, with other users' and programs' files and sockets, is not); `close` removes it. Its
name carries our pid: one left by a process that was killed outright is removed when
another session makes its own.

Each confined command may have at most `max_processes` processes at once (limits.py
says how, by who we are; decided once per session): a fork bomb stops at the limit
rather than at the kill path. Where the limit is a cgroup, `wrapper` makes it just
before the spawn and `finished` removes it (and says whether a fork hit the limit);
those of hooks and servers, which no `finished` follows, go at `close`.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from codecoder.boundary import is_inside
from codecoder.sandbox import SandboxMode, SandboxUnavailable, limits
from codecoder.sandbox.bwrap import ConfinedMode, Confinement
from codecoder.sandbox.layout import FolderScan
from codecoder.sandbox.limits import Groups, NoLimit, ProcessLimit
from codecoder.sandbox.probe import Probe, checked, find

__all__ = ["Sandbox", "Wrapper"]

Wrapper = Callable[[list[str]], list[str]]
TMP_PREFIX = "codecoder-sandbox-tmp-"


class Sandbox:
    """See the module docstring. Thread-safe: sub-agents run commands in parallel."""

    def __init__(
        self,
        mode: SandboxMode | None = None,
        *,
        approval: Callable[[], str] = lambda: "ask",
        network: bool = False,
        network_for: Callable[[str, Path], bool] | None = None,
        reads_only: Callable[[str, Path], bool] | None = None,
        reads_repository: Callable[[str, Path], bool] | None = None,
        bwrap: str | None = None,
        roots: Sequence[Path] = (),
        prober: Callable[[str | None], Probe] = checked,
        escalation: Callable[[], bool] = lambda: True,
        max_processes: int | None = None,
    ) -> None:
        self.explicit: SandboxMode | None = mode
        self.escalation = escalation
        """Whether someone could allow a command to run unconfined now (the approval
        mode can change during a session): Confinement.escalation."""
        self.network = network
        self._approval = approval
        self._network_for = network_for
        self._reads_only = reads_only
        self._reads_repository = reads_repository
        self._bwrap = bwrap
        self._roots = tuple(roots)
        self._prober = prober
        self._scan = FolderScan()
        self._lock = threading.Lock()
        self._notice: str | None = None
        self._noticed = False
        self._tmp: str | None = None
        self._closed = False
        self._max_processes = limits.DEFAULT_MAX if max_processes is None else max_processes
        self._limit: ProcessLimit | NoLimit | None = None
        self._groups = Groups()

    def network_state(self) -> Literal["off", "some", "on"]:
        """The network of confined commands: on for all, for some (`network_for`), off."""
        if self.network:
            return "on"
        return "some" if self._network_for is not None else "off"

    def probe(self) -> Probe:
        """The bwrap given, else the one on PATH outside `roots` (the session's workspace
        and extra roots: probe.find), probed."""
        return self._prober(self._bwrap or find(self._roots))

    def check(self) -> None:
        """Raise SandboxUnavailable when a mode was asked for and bwrap cannot run."""
        if self.explicit not in (None, "off"):
            found = self.probe()
            if not found.works:
                raise SandboxUnavailable(found.detail)

    def mode(self) -> SandboxMode:
        """The mode a command started now runs in (probing bwrap when that decides it)."""
        if self.explicit is not None:
            return self.explicit
        if self._approval() != "full-auto":
            return "off"
        found = self.probe()
        if found.works:
            return "workspace-write"
        with self._lock:
            if not self._noticed:
                self._notice = (
                    f"commands run without a sandbox: {found.detail}; full-auto relies on "
                    "the permission check alone (docs/sandbox.md)"
                )
                self._noticed = True
        return "off"

    def take_notice(self) -> str | None:
        """The "unconfined in full-auto" notice, once per session; None after that."""
        with self._lock:
            notice, self._notice = self._notice, None
        return notice

    def confine(
        self,
        workspace: Path,
        *,
        command: str | None = None,
        cwd: Path | None = None,
        extra_roots: Sequence[Path] = (),
    ) -> Confinement | None:
        """How `command` (in `cwd`) runs now: None when unconfined. Raises
        SandboxUnavailable when a mode was asked for and bwrap has stopped working."""
        mode = self.mode()
        guarded = False
        if mode == "off":
            if not self._guards_git_read(command, cwd or workspace):
                return None
            mode, guarded = "read-only", True
        return self._confinement(mode, workspace, command, cwd, extra_roots, guarded=guarded)

    def confine_started(
        self, workspace: Path, *, command: str, cwd: Path | None = None
    ) -> Confinement | None:
        """How a process CodeCoder starts by itself to run what the workspace holds (a
        hook: its `make -s test` runs the Makefile a command wrote; a project's MCP
        server) runs now: as a command would where commands are confined; where they
        run unconfined by default (no `--sandbox`, an approval mode but `full-auto`), in
        `workspace-write` when bwrap works, since nobody is asked before it runs; None
        with `--sandbox off` or without bwrap. Raises SandboxUnavailable as `confine`
        does."""
        if self.mode() != "off" or self.explicit == "off":
            return self.confine(workspace, command=command, cwd=cwd)
        if not self.probe().works:
            return None
        return self._confinement("workspace-write", workspace, command, cwd)

    def _confinement(
        self,
        mode: ConfinedMode,
        workspace: Path,
        command: str | None,
        cwd: Path | None,
        extra_roots: Sequence[Path] = (),
        *,
        guarded: bool = False,
    ) -> Confinement:
        """The Confinement of `command` in `mode` (`guarded`: a line that reads with
        git, confined although commands are not)."""
        where = cwd or workspace
        reads_only = guarded or (
            mode == "workspace-write"
            and command is not None
            and self._reads_only is not None
            and self._reads_only(command, where)
        )
        network = self.network or (
            command is not None
            and self._network_for is not None
            and self._network_for(command, where)
        )
        return Confinement(
            "read-only" if reads_only else mode,
            workspace,
            network=network,
            extra_roots=tuple(extra_roots),
            bwrap=self._path(),
            tmp=self._session_tmp((workspace, *extra_roots)),
            reads_only=reads_only,
            escalation=self.escalation(),
            limit=self._process_limit(),
        )

    def _guards_git_read(self, command: str | None, where: Path) -> bool:
        """Whether a line run where commands are unconfined by default (not `--sandbox
        off`) is one that only reads with git, and bwrap works: the module docstring."""
        return (
            self.explicit is None
            and command is not None
            and self._reads_repository is not None
            and self._reads_repository(command, where)
            and self.probe().works
        )

    def confine_search(self, workspace: Path) -> Confinement | None:
        """The grep tool's children: read-only, without the network, whenever commands
        are confined (they write nothing)."""
        if self.mode() == "off":
            return None
        return Confinement("read-only", workspace, bwrap=self._path(), limit=self._process_limit())

    def process_limit(self) -> ProcessLimit | NoLimit:
        """The process limit of this session's confined commands, or why there is none."""
        found = self.probe()
        if not found.works or found.path is None:
            return NoLimit(found.detail)
        with self._lock:
            if self._limit is None:
                self._limit = limits.decide(self._max_processes, found.path)
            return self._limit

    def _process_limit(self) -> ProcessLimit | None:
        found = self.process_limit()
        return found if isinstance(found, ProcessLimit) else None

    def wrapper(self, confinement: Confinement | None, cwd: Path | None = None) -> Wrapper | None:
        """A function from an argv to its confined argv (None: run it as it is); the
        protected folders are looked for, and a cgroup limit is made, when it is called,
        just before the spawn. Hand it to `finished` once the process has ended."""
        if confinement is None:
            return None
        return Spawn(confinement, cwd, self._scan, self._groups)

    def finished(self, wrap: Wrapper | None) -> bool:
        """The command `wrap` started has ended: remove its cgroup. True when a fork of
        it failed at the process limit (known only where the limit is a cgroup)."""
        if not isinstance(wrap, Spawn) or wrap.group is None:
            return False
        group, wrap.group = wrap.group, None
        hit = limits.reached(group)
        self._groups.release(group)
        return hit

    def close(self) -> None:
        """Remove the session's /tmp (commands started later get an empty one) and the
        empty `.git` and `.codecoder` folders held in the roots (layout.hold_places)."""
        with self._lock:
            folder, self._tmp, self._closed = self._tmp, None, True
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        self._scan.release()
        self._groups.close()

    def _session_tmp(self, roots: Sequence[Path]) -> str | None:
        """The session's /tmp: in the host's temporary folder, or in /tmp where that lies
        in the workspace (`TMPDIR=./.tmp`: what commands leave in /tmp would show up
        there, and a line run read-only could write the workspace through it); None
        (an empty /tmp for each command) where both do."""
        with self._lock:
            if self._tmp is None and not self._closed:
                for base in (tempfile.gettempdir(), "/tmp"):
                    if not is_inside(Path(base), roots):
                        _sweep(base)
                        self._tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", dir=base)
                        break
            return self._tmp

    def _path(self) -> str:
        found = self.probe()
        if not found.works or found.path is None:
            raise SandboxUnavailable(found.detail)
        return found.path


class Spawn:
    """A Wrapper for one confined command: its bwrap line, started in a cgroup of its
    own where the process limit is one (`group`, until `Sandbox.finished`)."""

    def __init__(
        self, confinement: Confinement, cwd: Path | None, scan: FolderScan, groups: Groups
    ) -> None:
        self._confinement, self._cwd, self._scan, self._groups = confinement, cwd, scan, groups
        self.group: str | None = None

    def __call__(self, argv: list[str]) -> list[str]:
        confined = self._confinement.wrap(argv, cwd=self._cwd, scan=self._scan)
        if self._confinement.limit is None:
            return confined
        spawned, self.group = self._groups.enter(self._confinement.limit, confined)
        return spawned


def _sweep(base: str) -> None:
    """Remove the session /tmp folders in `base` of our processes that no longer exist."""
    uid = os.getuid()
    for folder in glob.glob(os.path.join(base, f"{TMP_PREFIX}*-*")):
        pid_text = folder.rsplit(TMP_PREFIX, 1)[1].split("-", 1)[0]
        try:
            if not pid_text.isdigit() or os.stat(folder).st_uid != uid:
                continue
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # gone already, or a process of another user: not ours to judge
            continue
