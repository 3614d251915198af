"""How a task's `codecoder exec` process is started: forked from the zygote (the local
pool, ADR 0005) or as a plain `python -m codecoder exec` child (Ray workers, which may
sit on machines where no zygote runs).

Either way the process leads a process group (and session) of its own, its stdout and
stderr go to files, and `signal()` reaches that whole group; `on_exit` is called (from
another thread) once it has ended, which is how the runner waits without polling.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import msgspec


class LaunchError(Exception):
    """The process could not be started."""


class Running(Protocol):
    """A started `codecoder exec`."""

    @property
    def pid(self) -> int: ...

    def returncode(self) -> int | None:
        """Its exit code once it has ended (-N: killed by signal N), else None."""
        ...

    def signal(self, signum: int) -> None:
        """Send `signum` to its process group (nothing once it has ended)."""
        ...


class Launcher(Protocol):
    def launch(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        stdout: Path,
        stderr: Path,
        on_exit: Callable[[], None],
    ) -> Running:
        """Start `codecoder ARGV…`; LaunchError when it cannot be started."""
        ...

    def close(self) -> None: ...


def _signal_group(pid: int, signum: int) -> None:
    """The group outlives its leader while a member lives, and a pid is not reused while
    it names a live group: signalling by group id after the leader was reaped reaches
    its leftovers or nobody."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


class _Child:
    def __init__(self, popen: subprocess.Popen[bytes], on_exit: Callable[[], None]) -> None:
        self._popen = popen
        self._on_exit = on_exit
        self._ended = threading.Event()
        self._waiter = threading.Thread(target=self._wait, name=f"exec-{popen.pid}", daemon=True)
        self._waiter.start()

    @property
    def pid(self) -> int:
        return self._popen.pid

    def _wait(self) -> None:
        self._popen.wait()
        self._ended.set()
        self._on_exit()

    def returncode(self) -> int | None:
        if not self._ended.is_set():
            return None
        self._waiter.join()
        return self._popen.returncode

    def signal(self, signum: int) -> None:
        if not self._ended.is_set():
            _signal_group(self.pid, signum)


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


class SubprocessLauncher:
    """`python -m codecoder exec …` per task: the interpreter starts and imports anew
    each time (~150-200 ms of CPU more than a zygote's fork), and needs nothing running
    beside it. `command` is what runs with the argv appended (tests give a stand-in).

    A child inherits the signal mask of the thread that forks it, across exec, and Ray
    runs its tasks on threads that block SIGINT and SIGTERM: an exec started from there
    never saw the cancel (measured: killed by SIGKILL after the grace, every time). So
    the launching thread unblocks them around the spawn."""

    def __init__(self, command: Sequence[str] = (sys.executable, "-m", "codecoder")) -> None:
        self.command = tuple(command)

    def launch(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        stdout: Path,
        stderr: Path,
        on_exit: Callable[[], None],
    ) -> Running:
        unblocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        try:
            with stdout.open("wb") as out, stderr.open("wb") as err:
                popen = subprocess.Popen(
                    [*self.command, *argv],
                    cwd=cwd,
                    env=dict(env),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
        except OSError as exc:
            raise LaunchError(f"cannot start codecoder exec: {exc.strerror or exc}") from None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
        return _Child(popen, on_exit)

    def close(self) -> None:
        """Nothing to stop: each child is waited for by its own thread."""


class _Forked:
    def __init__(self, on_exit: Callable[[], None]) -> None:
        self.on_exit = on_exit
        self.started = threading.Event()
        self.pid_value = 0
        self.error: str | None = None
        self.exit: int | None = None

    @property
    def pid(self) -> int:
        return self.pid_value

    def returncode(self) -> int | None:
        return self.exit

    def signal(self, signum: int) -> None:
        if self.exit is None and self.pid_value:
            _signal_group(self.pid_value, signum)


class ZygoteLauncher:
    """Forks each task's exec from the zygote (zygote.py). One reader thread takes the
    zygote's replies; the zygote is started on the first launch and ended by close()."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._waiting: dict[int, _Forked] = {}
        self._next_id = 0
        self._gone: str | None = None

    def launch(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        stdout: Path,
        stderr: Path,
        on_exit: Callable[[], None],
    ) -> Running:
        forked = _Forked(on_exit)
        with self._lock:
            process = self._start()
            if self._gone is not None:
                raise LaunchError(self._gone)
            self._next_id += 1
            request = {
                "id": self._next_id,
                "argv": argv,
                "env": dict(env),
                "cwd": str(cwd),
                "stdout": str(stdout),
                "stderr": str(stderr),
            }
            self._waiting[self._next_id] = forked
            assert process.stdin is not None
            try:
                process.stdin.write(msgspec.json.encode(request) + b"\n")
                process.stdin.flush()
            except OSError:
                pass  # the reader sees the zygote's end and fails the launch
        forked.started.wait()
        if forked.error is not None:
            raise LaunchError(forked.error)
        return forked

    @property
    def pid(self) -> int | None:
        """The zygote's process id once it has started."""
        return self._process.pid if self._process is not None else None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "codecoder.batch.zygote"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                process_group=0,
            )
            self._reader = threading.Thread(target=self._read, name="zygote-replies")
            self._reader.start()
        return self._process

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            reply: dict[str, Any] = msgspec.json.decode(line)
            with self._lock:
                forked = self._waiting.get(reply["id"])
                if forked is None:
                    continue
                if "pid" in reply:
                    forked.pid_value = reply["pid"]
                    forked.started.set()
                    continue
                del self._waiting[reply["id"]]
            if "error" in reply:
                forked.error = reply["error"]
                forked.started.set()
            else:
                forked.exit = reply["exit"]
                forked.on_exit()
        self._zygote_gone()

    def _zygote_gone(self) -> None:
        """The zygote ended: what it was running is reported killed, nothing more starts."""
        code = self._process.wait() if self._process is not None else None
        with self._lock:
            self._gone = f"the zygote process ended (exit code {code})"
            waiting = list(self._waiting.values())
            self._waiting.clear()
        for forked in waiting:
            if not forked.started.is_set():
                forked.error = self._gone
                forked.started.set()
            else:
                forked.exit = -9
                forked.on_exit()

    def close(self) -> None:
        """End the zygote (it ends whatever it still runs) and join the reader."""
        with self._lock:
            process = self._process
        if process is None:
            return
        assert process.stdin is not None
        with contextlib.suppress(OSError):
            process.stdin.close()
        process.wait()
        if self._reader is not None:
            self._reader.join()
        assert process.stdout is not None
        process.stdout.close()
