"""Child processes of `run_command`: spawn, pump output, wait, kill the whole tree, reap.

Every command runs as `bash -c` (sh where bash is missing) in a process group of its own
(`process_group=0`, never `preexec_fn`), with stdin closed and stdout+stderr merged into
one pipe; under the sandbox the spawned argv is `bwrap … bash -c` (the caller's `wrap`),
whose processes all descend from ours, so everything below holds for them too. Its
environment carries `CODECODER_CALL=<random id>`, a marker that lets us
find its processes even after they left the group (`setsid`, double fork) and keeps
several running commands apart.

Nothing here polls or sleeps. The calling thread blocks on one Event that is set by the
shell's exit (a waiter thread in `waitid(WNOWAIT)`), by the CancelToken, or not at all
until the timeout. A pump thread reads the pipe in chunks of up to 64 KiB, hands each
chunk to the caller as text and keeps only a head and a tail of the bytes, so a 50 MB
output costs 32 KiB of memory. Grace periods wait on pidfds (`poll`), not on a clock.

The tree of a command is every process that is in its process group, carries its
marker, holds its output pipe, or descends (by ppid links in /proc) from one of those.
The kill path — on cancel, on timeout, and also when the shell exits normally but left
descendants running (`server &`) — sends SIGTERM to the group and to each process of the
tree, waits up to the grace period for them to die, then SIGKILLs the group and whatever
the tree holds by then. Killing leftovers after a normal exit is deliberate: a command never leaves
processes behind, and the output pipe (held open by any leftover) reaches EOF. Something
meant to outlive the call has to be started outside the agent.

The shell stays a zombie (never reaped) until its tree is dead, so its pid — which is
the group id — cannot be reused while we still signal the group.

On Linux the ProcessManager makes this process a child subreaper
(`PR_SET_CHILD_SUBREAPER`): orphans of a command are reparented to us instead of init,
so they stay visible in our subtree and cannot escape. The price is that they become our
zombies. We reap them one pid at a time — never `waitpid(-1)`, which would steal exit
statuses that `subprocess.Popen` waits for (CPython then reports 0) — and only zombies
that are not a live Popen of ours and not in our own process group (children that other
code here spawned with a plain `subprocess.run` share our group and are left to it).

An agent killed outright (SIGKILL) runs none of this: a watchdog process, started with
the first command and told of every command's group and marker, kills what is left once
our end of its pipe closes (watchdog.py, which says why not PR_SET_PDEATHSIG).

The child's environment is not ours: secrets are scrubbed and git is kept inside the
user's repository (environment.py).

Known limit: a process that clears its environment (`env -i`), lets go of the output
pipe and is orphaned before the kill path runs can no longer be told apart from another
command's orphan. It escapes the tree kill, holds nothing of ours open, and is reaped as
a zombie once it exits. Should a writer ever escape while holding the pipe, the pump
still ends: once the tree is dead it reads what is buffered and stops.
"""

from __future__ import annotations

import codecs
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from codecoder.kernel.cancel import CancelToken
from codecoder.tools.environment import ChildEnvironment

if TYPE_CHECKING:
    from codecoder.tools.watchdog import Watchdog
from codecoder.wording import counted

MARKER_VAR = "CODECODER_CALL"
"""Environment variable that tags every process of one command with its call's id."""

CHUNK = 64 * 1024
DRAIN_LIMIT = 1024 * 1024
"""After the tree is dead, read at most this much more: the pipe holds less than this,
so only a writer that escaped the kill could keep the pump going past it."""

KILL_WAIT = 5.0
"""How long to wait for SIGKILLed processes to die (they do in microseconds unless stuck
in uninterruptible sleep)."""

_PR_SET_CHILD_SUBREAPER = 36

Ended = Literal["exited", "timeout", "cancelled", "killed"]


def become_subreaper() -> bool:
    """Ask Linux to reparent our orphaned descendants to us. Idempotent; False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def default_shell() -> str:
    return "/bin/bash" if os.access("/bin/bash", os.X_OK) else "/bin/sh"


# --- /proc ---------------------------------------------------------------------------


class ProcStat(msgspec.Struct, frozen=True):
    """The fields of /proc/<pid>/stat that tell where a process sits in the tree."""

    pid: int
    state: str
    ppid: int
    pgid: int
    sid: int


def parse_stat(raw: bytes) -> ProcStat:
    # The command name sits in parentheses and may itself contain spaces and ")".
    close = raw.rindex(b")")
    fields = raw[close + 2 :].split()
    return ProcStat(
        pid=int(raw[: raw.index(b" ")]),
        state=fields[0].decode(),
        ppid=int(fields[1]),
        pgid=int(fields[2]),
        sid=int(fields[3]),
    )


def read_stat(pid: int) -> ProcStat | None:
    """The process's stat, None when it is gone. A process can end between the listing of
    /proc and the read (the file is missing, or the read fails with ESRCH) and is then
    simply not in the scan; a line that does not parse is taken the same way, so that one
    odd entry cannot fail the scan that cleans up after a command."""
    raw = _read_all(f"/proc/{pid}/stat")
    if not raw:
        return None
    try:
        return parse_stat(raw)
    except (ValueError, IndexError):
        return None


def _read_all(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    parts: list[bytes] = []
    try:
        while chunk := os.read(fd, CHUNK):
            parts.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(parts)


def read_environ(pid: int) -> bytes:
    """The process's environment (NUL separated); empty when gone, a zombie or not ours."""
    return _read_all(f"/proc/{pid}/environ") or b""


class Snapshot:
    """One scan of /proc: every process's stat, and the ppid links between them."""

    def __init__(self, stats: Iterable[ProcStat]) -> None:
        self.stats = {stat.pid: stat for stat in stats}
        self.children: dict[int, list[int]] = {}
        for stat in self.stats.values():
            self.children.setdefault(stat.ppid, []).append(stat.pid)

    @classmethod
    def scan(cls) -> Snapshot:
        try:
            names = os.listdir("/proc")
        except OSError:
            return cls(())
        stats: list[ProcStat] = []
        for name in names:
            if name.isdigit() and (stat := read_stat(int(name))) is not None:
                stats.append(stat)
        return cls(stats)

    @classmethod
    def scan_subtree(cls, root: int) -> Snapshot | None:
        """`root` and its descendants only, through /proc/PID/task/TID/children: with
        the subreaper set, all a command can leave behind is there, and reading it is a
        fraction of reading every process on the machine (~0.8 ms per command here).
        None where the kernel lacks those files (CONFIG_PROC_CHILDREN)."""
        if not os.path.exists(f"/proc/{root}/task/{root}/children"):
            return None
        stats: list[ProcStat] = []
        seen: set[int] = set()
        stack = [root]
        while stack:
            pid = stack.pop()
            if pid in seen or (stat := read_stat(pid)) is None:
                continue
            seen.add(pid)
            stats.append(stat)
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for task in tasks:
                children = _read_all(f"/proc/{pid}/task/{task}/children") or b""
                stack.extend(map(int, children.split()))
        return cls(stats)

    def subtree(self, roots: Iterable[int]) -> set[int]:
        """The roots that exist and all their descendants."""
        found: set[int] = set()
        stack = [pid for pid in roots if pid in self.stats]
        while stack:
            pid = stack.pop()
            if pid not in found:
                found.add(pid)
                stack.extend(self.children.get(pid, ()))
        return found

    def marked(self, candidates: Iterable[int], marker: str) -> set[int]:
        needle = f"{MARKER_VAR}={marker}\0".encode()
        return {pid for pid in candidates if needle in read_environ(pid)}

    def holding(self, candidates: Iterable[int], pipe_inode: int) -> set[int]:
        """The candidates with an open descriptor on the pipe `pipe_inode`."""
        link = f"pipe:[{pipe_inode}]"
        found: set[int] = set()
        for pid in candidates:
            try:
                names = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for name in names:
                with suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{name}") == link:
                        found.add(pid)
                        break
        return found

    def alive(self, pids: Iterable[int]) -> set[int]:
        return {pid for pid in pids if pid in self.stats and self.stats[pid].state != "Z"}


# --- output --------------------------------------------------------------------------


class HeadTail:
    """Keeps the first `head` and the last `tail` bytes of a stream and counts the rest."""

    def __init__(self, head: int, tail: int) -> None:
        self._head_cap = head
        self._tail_cap = tail
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0
        self.cut_bytes = 0
        self.cut_lines = 0

    def feed(self, data: bytes) -> None:
        self.total_bytes += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        self._tail += data
        excess = len(self._tail) - self._tail_cap
        if excess > 0:
            self.cut_lines += self._tail.count(b"\n", 0, excess)
            self.cut_bytes += excess
            del self._tail[:excess]

    def render(self) -> str:
        if not self.cut_bytes:
            return (self._head + self._tail).decode("utf-8", errors="replace")
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        sep = "" if head.endswith("\n") else "\n"
        cut = f"{counted(self.cut_bytes, 'byte')} ({counted(self.cut_lines, 'newline')})"
        note = f"[… {cut} cut from the middle …]"
        return f"{head}{sep}{note}\n{tail}"


# --- one running command -------------------------------------------------------------


class CommandOutcome(msgspec.Struct, frozen=True):
    """How a command ended. `returncode` is Popen's (negative: killed by that signal);
    `output` is the head and tail of stdout+stderr with a note of what was cut (of stdout
    alone when it ran with `stderr=True`, and `errors` is then stderr's)."""

    ended: Ended
    returncode: int | None
    output: str
    total_bytes: int
    duration: float
    errors: str = ""


class _Run(msgspec.Struct, eq=False):
    proc: subprocess.Popen[bytes]
    marker: str
    pipe_inode: int
    buffer: HeadTail
    on_output: Callable[[str], object] | None
    errors: HeadTail | None = None
    """stderr, when it has a pipe of its own (hooks: their stderr is a reason)."""
    stdin: bytes | None = None
    """What is written to the command's stdin, which is then closed."""
    exited: threading.Event = msgspec.field(default_factory=threading.Event)
    wake: threading.Event = msgspec.field(default_factory=threading.Event)
    killed: bool = False
    pump_error: BaseException | None = None
    threads: list[threading.Thread] = msgspec.field(default_factory=list)
    stop_r: int = -1
    stop_w: int = -1

    @property
    def pid(self) -> int:
        return self.proc.pid

    def start(self) -> None:
        self.stop_r, self.stop_w = os.pipe()
        roles: list[tuple[Callable[[], None], str]] = [
            (self._wait_exit, "wait"),
            (self._pump, "pump"),
        ]
        if self.errors is not None:
            roles.append((self._pump_errors, "stderr"))
        if self.stdin is not None:
            roles.append((self._feed, "stdin"))
        for target, role in roles:
            thread = threading.Thread(target=target, name=f"cmd-{role}-{self.pid}", daemon=True)
            self.threads.append(thread)
            thread.start()

    def _feed(self) -> None:
        """Write `stdin` and close it; a command that exits without reading it all (or
        is killed) just ends the writing."""
        pipe = self.proc.stdin
        assert pipe is not None and self.stdin is not None
        with suppress(OSError):  # BrokenPipeError: it stopped reading
            pipe.write(self.stdin)
        with suppress(OSError):
            pipe.close()

    def _pump_errors(self) -> None:
        assert self.proc.stderr is not None and self.errors is not None
        self._drain(self.proc.stderr.fileno(), self.errors, None)

    def _wait_exit(self) -> None:
        # WNOWAIT: learn of the exit but leave the zombie, so the pid (= the group id)
        # stays reserved until the tree is dead and Popen reaps it.
        with suppress(ChildProcessError):
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        self.exited.set()
        self.wake.set()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        self._drain(self.proc.stdout.fileno(), self.buffer, self._emit)

    def _drain(self, fd: int, buffer: HeadTail, emit: Callable[[str], None] | None) -> None:
        """Read `fd` into `buffer` (and as text to `emit`) until EOF, or until the stop
        pipe says the tree is dead and what was buffered has been read."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.register(self.stop_r, select.POLLIN)
        drained = 0
        while True:
            ready = dict(poller.poll())
            if fd not in ready:  # only the stop pipe: everything buffered has been read
                break
            data = os.read(fd, CHUNK)
            if not data:  # EOF: every writer is gone
                break
            buffer.feed(data)
            if emit is not None:
                emit(decoder.decode(data))
            if self.stop_r in ready:
                drained += len(data)
                if drained >= DRAIN_LIMIT:
                    break
        if emit is not None:
            emit(decoder.decode(b"", final=True))

    def _emit(self, text: str) -> None:
        if not text or self.on_output is None:
            return
        try:
            self.on_output(text)
        except BaseException as exc:  # keep draining, or the command blocks on a full pipe
            self.pump_error = exc
            self.on_output = None

    def stop_pump_and_join(self) -> None:
        """Let the pump read what is buffered and stop, then join both threads."""
        os.write(self.stop_w, b"x")
        for thread in self.threads:
            thread.join()
        for fd in (self.stop_r, self.stop_w):
            os.close(fd)
        for pipe in (self.proc.stdout, self.proc.stderr, self.proc.stdin):
            if pipe is not None:
                with suppress(OSError):
                    pipe.close()


# --- the manager ---------------------------------------------------------------------

HEAD_BYTES = 16 * 1024
TAIL_BYTES = 16 * 1024
"""Of a command's output, what its result keeps by default: the beginning and the end."""


class ProcessManager:
    """Owns the running commands of this process: spawns them, kills their trees, reaps
    orphans. One per application (the CLI's second Ctrl+C calls `kill_all`); `close` it
    when done (it stops the watchdog). `environment` makes each command's environment
    (default: secrets scrubbed, no user settings)."""

    def __init__(
        self,
        *,
        grace: float = 2.0,
        head_bytes: int = HEAD_BYTES,
        tail_bytes: int = TAIL_BYTES,
        shell: str | None = None,
        environment: ChildEnvironment | None = None,
        watchdog: bool = True,
    ) -> None:
        self.grace = grace
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.shell = shell or default_shell()
        self.environment = environment or ChildEnvironment()
        self.use_watchdog = watchdog
        self.watchdog: Watchdog | None = None
        """Made with the first command (its module is not loaded before)."""
        self._subreaper: bool | None = None
        self._pidfds = hasattr(os, "pidfd_open")
        self._lock = threading.Lock()
        self._live: dict[int, _Run] = {}

    def ensure_subreaper(self) -> bool:
        """Whether our orphaned descendants are reparented to us. Asked of Linux once,
        before the first command starts, not at construction: the prctl goes through
        ctypes, ~5 ms of start-up that a run without commands need not pay."""
        if self._subreaper is None:
            self._subreaper = become_subreaper()
        return self._subreaper

    def running(self) -> int:
        with self._lock:
            return len(self._live)

    def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        cancel: CancelToken,
        on_output: Callable[[str], object] | None = None,
        workspace: Path | None = None,
        wrap: Callable[[list[str]], list[str]] | None = None,
        stdin: bytes | None = None,
        stderr: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> CommandOutcome:
        """Run `command` to its end, its timeout or `cancel`; its whole tree is dead and
        reaped, and its helper threads joined, when this returns. `workspace` (default:
        `cwd`) is where git's discovery is kept (environment.py). `wrap` turns the shell's
        argv into the one spawned (the sandbox's bwrap line: sandbox/runtime.py); the
        tree is still ours to kill, since bwrap and what it runs descend from us.
        `stdin`: written to the command's standard input, then closed (else it is
        closed at once); `stderr`: kept apart from stdout (`CommandOutcome.errors`);
        `env`: variables added to the command's environment (hooks: hooks/runner.py)."""
        started = time.monotonic()
        if cancel.is_cancelled():
            return CommandOutcome("cancelled", None, "", 0, 0.0)
        environ = self.environment.for_workspace(workspace or cwd)
        if env:
            environ.update(env)
        argv = [self.shell, "-c", command]
        errors = HeadTail(self.head_bytes, self.tail_bytes) if stderr else None
        run = self._spawn(
            wrap(argv) if wrap is not None else argv,
            cwd,
            environ,
            on_output,
            errors=errors,
            stdin=stdin,
        )
        try:
            ended = self._wait(run, timeout, cancel)
        finally:
            self._finish(run)
        if run.pump_error is not None:
            raise run.pump_error
        return CommandOutcome(
            ended="killed" if run.killed else ended,
            returncode=run.proc.returncode,
            output=run.buffer.render(),
            total_bytes=run.buffer.total_bytes,
            duration=time.monotonic() - started,
            errors=errors.render() if errors is not None else "",
        )

    def kill_all(self) -> int:
        """SIGKILL every running command's tree at once, no grace (the second Ctrl+C).
        Returns how many processes were signalled; their `run` calls then return."""
        with self._lock:
            runs = list(self._live.values())
            snapshot = self._scan()
            count = 0
            for run in runs:
                run.killed = True
                fds = self._signal_tree(run, snapshot, signal.SIGKILL)
                count += len(fds)
                _close_all(fds.values())
        return count

    def reap_orphans(self) -> list[int]:
        """Reap zombies reparented to us (subreaper) that no Popen of ours waits for."""
        return self._reap(self._scan(), ())

    def close(self) -> None:
        """Stop the watchdog (a command still running then is killed by it)."""
        with self._lock:
            watchdog, self.use_watchdog = self.watchdog, False
        if watchdog is not None:
            watchdog.close()

    # --- internals -------------------------------------------------------------------

    def _spawn(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        on_output: Callable[[str], object] | None,
        *,
        errors: HeadTail | None = None,
        stdin: bytes | None = None,
    ) -> _Run:
        self.ensure_subreaper()
        marker = os.urandom(16).hex()
        env[MARKER_VAR] = marker
        # Under the lock so that reap_orphans never sees a child that is not yet live.
        with self._lock:
            if self.use_watchdog and self.watchdog is None:  # up before the first command
                from codecoder.tools.watchdog import Watchdog

                self.watchdog = Watchdog()
                self.watchdog.start()
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if errors is None else subprocess.PIPE,
                cwd=cwd,
                env=env,
                process_group=0,
                close_fds=True,
            )
            assert proc.stdout is not None
            pipe_inode = os.fstat(proc.stdout.fileno()).st_ino
            buffer = HeadTail(self.head_bytes, self.tail_bytes)
            run = _Run(proc, marker, pipe_inode, buffer, on_output, errors, stdin)
            self._live[proc.pid] = run
            if self.watchdog is not None:
                self.watchdog.started(proc.pid, marker)
        run.start()
        return run

    @staticmethod
    def _wait(run: _Run, timeout: float, cancel: CancelToken) -> Ended:
        unregister = cancel.on_cancel(run.wake.set)
        try:
            run.wake.wait(timeout)
        finally:
            unregister()
        if cancel.is_cancelled():
            return "cancelled"
        return "exited" if run.exited.is_set() else "timeout"

    def _finish(self, run: _Run) -> None:
        snapshot, killed = Snapshot(()), set[int]()
        try:
            snapshot, killed = self._terminate(run)
        finally:
            if not run.exited.is_set():  # _terminate failed: never block on a live shell
                with suppress(ProcessLookupError):
                    os.killpg(run.pid, signal.SIGKILL)
            with self._lock:
                if self.watchdog is not None:  # before the reap frees the group id
                    self.watchdog.ended(run.pid)
                run.proc.wait()
                del self._live[run.pid]
            run.stop_pump_and_join()
            self._reap(snapshot, killed)

    def _terminate(self, run: _Run) -> tuple[Snapshot, set[int]]:
        """SIGTERM the tree, give it the grace period, SIGKILL what is left, wait for it.
        Returns the last scan (its zombies are to be reaped) and the pids killed after it."""
        snapshot = self._scan()
        term = self._signal_tree(run, snapshot, signal.SIGTERM)
        try:
            if not term and run.exited.is_set():
                return snapshot, set()
            self._wait_dead(run, term.values(), time.monotonic() + self.grace)
        finally:
            _close_all(term.values())
        snapshot = self._scan()
        kill = self._signal_tree(run, snapshot, signal.SIGKILL)
        try:
            self._wait_dead(run, kill.values(), time.monotonic() + KILL_WAIT)
        finally:
            _close_all(kill.values())
        return snapshot, set(kill)

    def _scan(self) -> Snapshot:
        """Our subtree when we are a subreaper (nothing of ours can be outside it), else
        every process."""
        subtree = Snapshot.scan_subtree(os.getpid()) if self._subreaper else None
        return subtree if subtree is not None else Snapshot.scan()

    def _reap(self, snapshot: Snapshot, known: Iterable[int]) -> list[int]:
        """Reap, one pid at a time, our zombies in `snapshot` and the `known` pids of a
        command's tree; never a live Popen, never a child that shares our process group."""
        me, my_group = os.getpid(), os.getpgrp()
        zombies = {
            stat.pid
            for stat in snapshot.stats.values()
            if stat.ppid == me and stat.state == "Z" and stat.pgid != my_group
        }
        reaped: list[int] = []
        with self._lock:
            for pid in zombies.union(known) - self._live.keys():
                with suppress(ChildProcessError):
                    if os.waitpid(pid, os.WNOHANG)[0] == pid:
                        reaped.append(pid)
        return reaped

    def _tree(self, run: _Run, snapshot: Snapshot) -> set[int]:
        """The live processes of this command: its group, the holders of its marker or of
        its output pipe, and every descendant of those (by ppid links)."""
        me = os.getpid()
        # With the subreaper set, everything of ours (orphans included) is in our subtree.
        candidates = snapshot.subtree([me]) if self._subreaper else set(snapshot.stats)
        candidates.discard(me)  # we hold the pipe's read end
        roots = {stat.pid for stat in snapshot.stats.values() if stat.pgid == run.pid}
        roots.add(run.pid)
        roots |= snapshot.marked(candidates, run.marker)
        roots |= snapshot.holding(candidates - roots, run.pipe_inode)
        tree = snapshot.alive(snapshot.subtree(roots))
        tree.discard(me)
        return tree

    def _signal_tree(self, run: _Run, snapshot: Snapshot, sig: int) -> dict[int, int]:
        """Signal the group and every process of the tree; returns pidfds of the latter."""
        tree = self._tree(run, snapshot)
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(run.pid, sig)
        fds: dict[int, int] = {}
        for pid in tree:
            fd = self._open_pidfd(pid)
            with suppress(ProcessLookupError, PermissionError):
                if fd is None:
                    os.kill(pid, sig)
                else:
                    fds[pid] = fd
                    signal.pidfd_send_signal(fd, sig)
        return fds

    def _open_pidfd(self, pid: int) -> int | None:
        if not self._pidfds:
            return None
        try:
            return os.pidfd_open(pid)
        except OSError:
            return None

    @staticmethod
    def _wait_dead(run: _Run, pidfds: Iterable[int], deadline: float) -> None:
        """Block until the shell and every pidfd's process have exited, or the deadline."""
        run.exited.wait(max(0.0, deadline - time.monotonic()))
        pending = set(pidfds)
        poller = select.poll()
        for fd in pending:
            poller.register(fd, select.POLLIN)
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            for fd, _ in poller.poll(math.ceil(remaining * 1000)):
                pending.discard(fd)
                poller.unregister(fd)


def _close_all(fds: Iterable[int]) -> None:
    for fd in fds:
        os.close(fd)
