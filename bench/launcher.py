"""Children whose peak RSS is their own.

Linux keeps a process's peak RSS across `exec`, and a child starts from its parent's
memory: `ru_maxrss` of a child of a bench process reports at least the bench's own size at
the fork. Measured: a `codecoder exec` that peaks at 21 MB (by `/usr/bin/time`) showed
37 MB once the bench process itself had grown to 37 MB. So the benches start their
children through this small launcher process (a bare `python -S`, ~9 MB, less than any
child measured), which spawns each one and reports its exit status and `ru_maxrss`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, NamedTuple, Self

_LAUNCHER = r"""
import json, os, sys
for line in sys.stdin:
    argv, env, out, err = json.loads(line)
    actions = [
        (os.POSIX_SPAWN_OPEN, 1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
        (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
    ]
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss]), flush=True)
"""


class Finished(NamedTuple):
    started: float
    """time.monotonic() when the launch was asked for"""
    ended: float
    """time.monotonic() when the exit was reported"""
    returncode: int
    peak_mb: float
    stdout: str
    stderr: str


class Launcher:
    """One launcher process; `run` one child at a time. Its stdout and stderr go to files
    in `scratch` and come back as text."""

    def __init__(self, scratch: Path) -> None:
        self._scratch = scratch
        self._proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _LAUNCHER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, argv: list[str], env: dict[str, str]) -> Finished:
        out, err = self._scratch / "launched.out", self._scratch / "launched.err"
        request = json.dumps([argv, env, str(out), str(err)]) + "\n"
        stdin, stdout = self._pipes()
        started = time.monotonic()
        stdin.write(request)
        stdin.flush()
        reply = stdout.readline()
        ended = time.monotonic()
        returncode, maxrss = json.loads(reply)
        return Finished(started, ended, returncode, maxrss / 1024, out.read_text(), err.read_text())

    def close(self) -> None:
        stdin, _ = self._pipes()
        stdin.close()
        self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        return self._proc.stdin, self._proc.stdout
