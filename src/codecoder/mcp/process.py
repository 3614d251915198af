"""A stdio server's child process, spawned before the SDK is imported (no SDK here), so
that the server starts while the SDK loads.

It runs in a process group of its own (`start_new_session`) with a minimal environment:
HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG, TMPDIR of ours (never API keys), then the
server's `env`. A server the session's sandbox confines runs under bwrap (`wrap`): the
process we spawn, signal and wait for is bwrap (the server is in a session of its own
inside), whose exit status is the server's; a signal that ends bwrap ends the server
with it (`--die-with-parent`), so closing its stdin stays the server's notice to finish.
A waiter thread blocks in `wait()` for it and wakes the loop when it
exits, so nothing polls; it also reaps it at once, before the ProcessManager's orphan
reaper could take its exit status.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from typing import TYPE_CHECKING

from codecoder.mcp.config import ServerSpec

if TYPE_CHECKING:
    from codecoder.sandbox.runtime import Wrapper

INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR")


def environment(spec: ServerSpec) -> dict[str, str]:
    env = {name: os.environ[name] for name in INHERITED if name in os.environ}
    return env | spec.env


class ChildProcess:
    """The spawned server: its pid, its exit (an asyncio.Event set from the waiter
    thread) and its status once it has exited. `wrap` turns its argv into the confined
    one (None: it runs on the host)."""

    def __init__(
        self, spec: ServerSpec, loop: asyncio.AbstractEventLoop, wrap: Wrapper | None = None
    ) -> None:
        if spec.command is None:
            raise ValueError("a stdio server needs a command")
        argv = [spec.command, *spec.args]
        self.proc = subprocess.Popen(
            argv if wrap is None else wrap(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment(spec),
            cwd=spec.working_dir(),
            start_new_session=True,
            close_fds=True,
        )
        self.pid = self.proc.pid
        self.exited = asyncio.Event()
        self._loop = loop
        self._waiter = threading.Thread(
            target=self._wait, name=f"mcp-{spec.name}-wait", daemon=True
        )
        self._waiter.start()

    def _wait(self) -> None:
        self.proc.wait()
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting
            self._loop.call_soon_threadsafe(self.exited.set)

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def how(self) -> str:
        """How it ended: "exit status 1", "killed by SIGKILL", or "running"."""
        code = self.proc.returncode
        if code is None:
            return "running"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"

    def abandon(self) -> None:
        """Kill it and close our ends of its pipes (it never got to serve)."""
        self.signal_group(signal.SIGKILL)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
