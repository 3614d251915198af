"""The zygote: a process that has imported what `codecoder exec` needs and forks a copy
of itself for each task (ADR 0005). Run as `python -m codecoder.batch.zygote` by the
local pool's `ZygoteLauncher` (launch.py), which talks to it over its stdin and stdout.

A bare `codecoder exec` spends most of its CPU time starting the interpreter and
importing (~150-200 ms of a ~250 ms one-reply run); a forked child of the zygote starts
with all of that done. The child then runs exactly `codecoder exec`'s entry point
(`codecoder.cli.main.run`) with the task's argv, environment and folder, its stdout and
stderr in files, as a fresh `python -m codecoder exec` would.

Protocol, one JSON object per line:

    → {"id": N, "argv": [...], "env": {...}, "cwd": DIR, "stdout": FILE, "stderr": FILE}
    ← {"id": N, "pid": PID}            the child runs (or {"id": N, "error": "…"})
    ← {"id": N, "exit": CODE}          it ended: its exit code, -SIGNAL when killed

Fork safety: the zygote never starts a thread (it checks, and refuses to serve when an
import started one), holds no lock, no open database or socket. It is single-threaded and
waits in one `select` on its stdin and a self-pipe that SIGCHLD writes to
(`signal.set_wakeup_fd`), so it reaps each child as it ends; it is the only parent of its
children, so `waitpid(-1)` takes nothing from anyone.

Each child is the leader of a new session (`setsid`): a terminal's Ctrl+C reaches the
batch, not the tasks, and the batch signals a task's whole group. The zygote ignores
SIGINT itself for the same reason. Nothing outlives the batch: when the batch goes away
(its end of the stdin pipe closes, also when it was SIGKILLed) the zygote sends SIGTERM
to every running child's group (exec cancels its turn and kills its commands' trees),
SIGKILL after `GRACE` seconds, reaps them and exits; and every child has
`PR_SET_PDEATHSIG` = SIGTERM, so a zygote killed outright still takes its children with
it (its one thread is the one that forked them, so Linux's thread rule is no surprise).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import selectors
import signal
import sys
import threading
import time
from typing import Any

import msgspec

PRELOAD = (
    "codecoder.cli.main",
    "codecoder.cli.commands",
    "codecoder.cli.headless",
    "codecoder.cli.plan_exec",
    "codecoder.app.wiring",
    "codecoder.app.children",
    "codecoder.providers.scripted",
    "codecoder.providers.registry",
    "codecoder.tools.files",
    "codecoder.tools.search",
    "codecoder.tools.shell",
    "codecoder.tools.web",
    "codecoder.sandbox.runtime",
    "codecoder.plan.runner",
    "codecoder.plan.gates",
    "codecoder.plan.progress",
    "ctypes",
    "sqlite3",
)
"""What a scripted `exec` and `exec --plan` import (python -X importtime). A module left
out, or renamed since, costs its import time in every child, nothing more (a test checks
that each still exists)."""

GRACE = 10.0
"""Seconds between SIGTERM and SIGKILL when the batch has gone."""

_PR_SET_PDEATHSIG = 1


class Request(msgspec.Struct, frozen=True):
    id: int
    argv: list[str]
    env: dict[str, str]
    cwd: str
    stdout: str
    stderr: str


def main() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:  # renamed since: the children import what they need
            if exc.name != name:
                raise
    if threading.active_count() != 1:  # forking now could copy a held lock
        print("codecoder zygote: an import started a thread; cannot fork", file=sys.stderr)
        sys.exit(1)
    _Zygote().serve()


class _Zygote:
    def __init__(self) -> None:
        # The protocol moves off fds 0 and 1, so that a stray print cannot corrupt it.
        self.requests = os.dup(0)
        self.replies = os.dup(1)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(2, 1)
        os.close(devnull)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, _no_op)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        self.children: dict[int, int] = {}  # pid -> request id
        self.pending = b""
        self.decoder = msgspec.json.Decoder(Request)

    def serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self.requests, selectors.EVENT_READ)
        selector.register(self.wake_r, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fd == self.wake_r:
                    os.read(self.wake_r, 4096)
                    self._reap()
                elif not self._read():
                    self._shut_down()
                    return

    def _read(self) -> bool:
        data = os.read(self.requests, 1 << 16)
        if not data:
            return False
        *lines, self.pending = (self.pending + data).split(b"\n")
        for line in lines:
            self._start(self.decoder.decode(line))
        return True

    def _start(self, request: Request) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as exc:
            self._reply({"id": request.id, "error": f"fork: {exc.strerror or exc}"})
            return
        if pid == 0:
            _child(request, (self.requests, self.replies, self.wake_r, self.wake_w))
        self.children[pid] = request.id
        self._reply({"id": request.id, "pid": pid})

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            request = self.children.pop(pid, None)
            if request is not None:
                self._reply({"id": request, "exit": os.waitstatus_to_exitcode(status)})

    def _reply(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(BrokenPipeError):  # the batch has gone: we leave soon
            os.write(self.replies, msgspec.json.encode(message) + b"\n")

    def _shut_down(self) -> None:
        """The batch has gone: end every child, as a terminal would, then leave."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in self.children:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, sig)
            deadline = time.monotonic() + GRACE
            while self.children and time.monotonic() < deadline:
                ready = selectors.DefaultSelector()
                ready.register(self.wake_r, selectors.EVENT_READ)
                if ready.select(deadline - time.monotonic()):
                    os.read(self.wake_r, 4096)
                ready.close()
                self._reap()
            if not self.children:
                return


def _no_op(signum: int, frame: object) -> None:
    """SIGCHLD must have a handler for its wakeup byte to be written."""


def _child(request: Request, inherited: tuple[int, ...]) -> None:
    """In the forked child: become the task's `codecoder exec`, and never return."""
    code = 1
    try:
        _become(request, inherited)
        from codecoder.cli.main import run

        sys.argv = ["codecoder", *request.argv]
        run()  # os._exit()s, or raises SystemExit when a non-daemon thread still runs
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        current = threading.current_thread()
        for thread in threading.enumerate():
            if thread is not current and not thread.daemon:
                thread.join()
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _become(request: Request, inherited: tuple[int, ...]) -> None:
    parent = os.getppid()
    os.setsid()
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the zygote died before the line above: so do we
        os._exit(1)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for fd in inherited:
        os.close(fd)
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for fd, path in ((1, request.stdout), (2, request.stderr)):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


if __name__ == "__main__":
    main()
