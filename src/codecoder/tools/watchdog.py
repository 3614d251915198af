"""Commands must not outlive an agent that is killed outright (SIGKILL, the OOM killer, a
crash in C): a watchdog process kills what they left running.

While the agent lives, ProcessManager kills every command's tree itself: on cancel, on
timeout, at the end of each command. An agent that dies without running any code cannot,
and its commands' process groups are reparented to init and run on. So each
ProcessManager starts, with its first command, one small `/bin/sh` that reads lines from a
pipe whose only write end the agent holds:

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

What it costs (bench/bench_commands.py, docs/benchmarks.md): the first command launches a
thread that starts the `sh` (~2 ms until it runs, under load), so the command itself does
not wait for it, about 1 ms on the first command's wall time in all; a command that
starts before the watchdog runs is told to it as soon as it does. Then ~1.7 MB of memory
and two small pipe writes per command (~20 µs); nothing at start-up, nothing for a run
without commands.

Known limits: a command started in the microseconds between its fork and its
registration (or the first milliseconds, before the watchdog runs), and a process that
dropped its marker (`env -i`) after leaving the group, escape, as they escape the live
tree kill (see process.py).
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
    docstring). Thread-safe; started on the first `started`, stopped by `close`."""

    def __init__(self, shell: str = SHELL) -> None:
        self.shell = shell
        self._lock = threading.Lock()
        self._running: dict[int, str] = {}
        self._child: _Child | None = None
        self._finalizer: Callable[[], object] | None = None  # a weakref.finalize
        self._starter: threading.Thread | None = None
        self._restarts = 0
        self._failed = False
        self._closed = False

    @property
    def pid(self) -> int | None:
        with self._lock:
            return self._child.proc.pid if self._child is not None else None

    def started(self, pgid: int, marker: str) -> None:
        """A command's group `pgid` is running (its processes carry `marker`). The first
        call starts the watchdog on a thread of its own, so that the command does not
        wait for it; the new watchdog is told of every group running by then."""
        with self._lock:
            self._running[pgid] = marker
            if self._child is not None:
                self._send(f"+ {pgid} {marker}\n")
            else:
                self._start_soon()

    def ended(self, pgid: int) -> None:
        """The command's tree is dead; its group id may be reused once it is reaped."""
        with self._lock:
            marker = self._running.pop(pgid, None)
            if marker is not None and self._child is not None:
                self._send(f"- {pgid} {marker}\n")

    def wait_started(self) -> int | None:
        """The watchdog's pid once it runs (None: it could not start, or never was)."""
        with self._lock:
            starter = self._starter
        if starter is not None:
            starter.join()
        return self.pid

    def close(self) -> None:
        """Stop the watchdog. Groups still registered are killed by it: closing means no
        command of ours runs on."""
        with self._lock:
            self._closed = True
            starter = self._starter
        if starter is not None:
            starter.join()
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._child = None

    # --- internals -------------------------------------------------------------------

    def _start_soon(self) -> None:
        """Under the lock: have a starter thread start a watchdog, unless one is at it."""
        if self._starter is None and not self._failed and not self._closed:
            self._starter = threading.Thread(target=self._start, name="watchdog-start")
            self._starter.start()

    def _start(self) -> None:
        """On the starter thread: spawn the watchdog, then tell it what runs."""
        child: _Child | None = None
        try:
            child = self._spawn()
        finally:
            with self._lock:
                self._starter = None
                if child is None:
                    self._failed = True  # no watchdog: commands still run, unguarded
                else:
                    import weakref  # here, not at start-up: ~0.5 ms a run without commands saves

                    self._child = child
                    self._finalizer = weakref.finalize(self, child.close)
                    running = self._running.items()
                    lines = "".join(f"+ {pgid} {marker}\n" for pgid, marker in running)
                    if lines:
                        self._send(lines)

    def _spawn(self) -> _Child | None:
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
            return None
        finally:
            os.close(read_end)
        return _Child(proc, write_end)

    def _send(self, lines: str) -> None:
        """Under the lock. A watchdog that died (someone killed it) is replaced by a new
        one, which is told of every running group."""
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
            self._failed = self._restarts > MAX_RESTARTS  # one that dies at once: give up
            self._start_soon()
