"""Commands must not outlive an agent that is killed outright (SIGKILL, the OOM killer, a
crash in C): a watchdog process kills what they left running.

While the agent lives, ProcessManager kills every command's tree itself: on cancel, on
timeout, at the end of each command. An agent that dies without running any code cannot,
and its commands' process groups are reparented to init and run on. So each
ProcessManager starts, right before its first command, one small `/bin/sh` that reads
lines from a pipe whose only write end the agent holds:

    + PGID MARKER     a command started: its process group and its CODECODER_CALL marker
    - PGID MARKER     that command's tree is dead (sent before the shell is reaped, so the
                      group id cannot have been reused while it was registered)

When the agent dies, the kernel closes the write end, `read` meets end of file, and the
watchdog SIGKILLs every group still registered, then every process that carries one of
their markers (a command's `setsid` or double-fork escapee), again until none is found,
and exits. A normal exit closes the pipe with nothing registered: the watchdog just exits.
It ignores SIGHUP, SIGINT, SIGTERM and SIGQUIT and sits in a process group of its own, so
the signals that end the agent (a closed terminal, Ctrl+C) do not end it first.

Why not PR_SET_PDEATHSIG on each command's shell: Linux sends it when the *thread* that
forked the child exits, and our commands are forked by tool threads that end; it needs a
`preexec_fn` (unsafe with threads) or a wrapper program to set it; and it reaches only the
shell, not the processes the shell started in its group or outside it. A long-lived
spawning thread would fix the first point only. The watchdog covers the whole tree.

What it costs (bench/bench_commands.py, docs/benchmarks.md): nothing at start-up and
nothing for a run without commands. The first command waits for the `sh` to be spawned
(about 0.4 ms on a quiet machine, 1-3 ms under load, where the extra process competes
for the CPU; starting it on a thread of its own, or after the command's own spawn, cost
the same and left the command unguarded meanwhile, and starting it 10 ms into the first
command left a window that a test SIGKILL found at once). Then about 1.7 MB of memory
and two pipe writes per command (~20 µs).

Known limits: a command in the microseconds between its fork and its registration, and
a process that dropped its marker (`env -i`) after leaving the group, are not guarded;
the latter escapes the live tree kill too (see process.py).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable

SCRIPT = r"""
trap '' HUP INT QUIT TERM PIPE
running=' '
while read -r op group marker; do
  entry="$group:$marker"
  case $op in
    +) running="$running$entry " ;;
    -) case $running in
         *" $entry "*) running="${running%% $entry *} ${running#* $entry }" ;;
       esac ;;
  esac
done
set --
for entry in $running; do
  kill -9 -"${entry%%:*}" 2>/dev/null
  set -- "$@" -e "CODECODER_CALL=${entry#*:}"
done
[ $# -gt 0 ] || exit 0
rounds=0
while [ $rounds -lt 20 ]; do
  found=$(grep -lsxzF "$@" /proc/[0-9]*/environ)  # status 2: unreadable files, not ours
  [ -n "$found" ] || break
  for path in $found; do
    pid=${path#/proc/}
    kill -9 "${pid%/environ}" 2>/dev/null
  done
  rounds=$((rounds + 1))
done
"""

SHELL = "/bin/sh"
MAX_RESTARTS = 3


class _Child:
    """The watchdog process and our end of its pipe (what the finalizer closes)."""

    def __init__(self, proc: subprocess.Popen[bytes], fd: int) -> None:
        self.proc = proc
        self.fd = fd

    def close(self, timeout: float = 5.0) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:  # stuck (stopped?): it has nothing left to do
            self.proc.kill()
            self.proc.wait()


class Watchdog:
    """Tells a watchdog process which command groups are running (see the module
    docstring). Thread-safe; the process runs from `start` to `close`."""

    def __init__(self, shell: str = SHELL) -> None:
        self.shell = shell
        self._lock = threading.Lock()
        self._running: dict[int, str] = {}
        self._child: _Child | None = None
        self._finalizer: Callable[[], object] | None = None  # a weakref.finalize
        self._restarts = 0
        self._failed = False
        self._closed = False

    @property
    def pid(self) -> int | None:
        with self._lock:
            return self._child.proc.pid if self._child is not None else None

    def start(self) -> None:
        """Start the watchdog process unless it runs; it is told of every group
        registered so far. Where it cannot start, commands run unguarded."""
        with self._lock:
            if self._child is None:
                self._start()

    def started(self, pgid: int, marker: str) -> None:
        """A command's group `pgid` is running (its processes carry `marker`)."""
        with self._lock:
            self._running[pgid] = marker
            if self._child is not None:
                self._send(f"+ {pgid} {marker}\n")

    def ended(self, pgid: int) -> None:
        """The command's tree is dead; its group id may be reused once it is reaped."""
        with self._lock:
            marker = self._running.pop(pgid, None)
            if marker is not None and self._child is not None:
                self._send(f"- {pgid} {marker}\n")

    def close(self) -> None:
        """Stop the watchdog. Groups still registered are killed by it: closing means no
        command of ours runs on."""
        with self._lock:
            self._closed = True
            if self._finalizer is not None:
                self._finalizer()
            self._child = None

    # --- internals (under the lock) ----------------------------------------------------

    def _start(self) -> None:
        if self._failed or self._closed:
            return
        read_end, write_end = os.pipe()
        try:
            proc = subprocess.Popen(
                [self.shell, "-c", SCRIPT],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
                process_group=0,
                close_fds=True,
            )
        except OSError:
            os.close(write_end)
            self._failed = True
            return
        finally:
            os.close(read_end)
        import weakref  # here, not at start-up

        self._child = _Child(proc, write_end)
        self._finalizer = weakref.finalize(self, self._child.close)
        lines = "".join(f"+ {pgid} {marker}\n" for pgid, marker in self._running.items())
        if lines:
            self._send(lines)

    def _send(self, lines: str) -> None:
        """A watchdog that died (someone killed it) is replaced by a new one, told of
        every running group; one that dies again and again is given up."""
        assert self._child is not None
        data = lines.encode()
        try:
            while data:  # a signal can cut a write to a pipe short
                data = data[os.write(self._child.fd, data) :]
        except OSError:
            if self._finalizer is not None:
                self._finalizer()
            self._child = None
            self._restarts += 1
            self._failed = self._restarts > MAX_RESTARTS
            self._start()
