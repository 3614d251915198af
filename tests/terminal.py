"""The interactive client driven as a person would: `codecoder` in a real pseudo-terminal
(pexpect), its screen kept by a terminal emulator (pyte), a fixed size, no cursor
position requests (PROMPT_TOOLKIT_NO_CPR=1). Every process the client's session started
is gone when the test ends (`Terminal.close` checks it)."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte

from tests.procfs import kill, pids, stat_fields

ROWS = 30
COLUMNS = 100
_ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-B]|\x1b[=>]")


class Terminal:
    def __init__(
        self,
        args: list[str],
        *,
        cwd: Path,
        rows: int = ROWS,
        columns: int = COLUMNS,
        env: dict[str, str] | None = None,
    ) -> None:
        environment = {
            **os.environ,
            "PROMPT_TOOLKIT_NO_CPR": "1",
            "TERM": "xterm-256color",
            "COLORTERM": "",
            **(env or {}),
        }
        if "NO_COLOR" not in (env or {}):
            environment.pop("NO_COLOR", None)
        environment.pop("COLUMNS", None)
        environment.pop("LINES", None)
        self.rows, self.columns = rows, columns
        self.screen = pyte.HistoryScreen(columns, rows, history=20000, ratio=0.5)
        self.stream = pyte.ByteStream(self.screen)
        self.output = bytearray()
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "codecoder", *args],
            cwd=str(cwd),
            env=environment,
            dimensions=(rows, columns),
            timeout=30,
        )
        assert self.child.pid is not None
        self.pid: int = self.child.pid
        self.started = time.monotonic()

    # --- reading -----------------------------------------------------------------------

    def read(self, timeout: float = 0.05) -> bool:
        """Take what the client wrote (waiting up to `timeout`); False at its end."""
        try:
            data = self.child.read_nonblocking(1 << 16, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.output.extend(data)
        self.stream.feed(data)
        return True

    def wait(self, condition: Callable[[], bool], timeout: float = 15.0, what: str = "") -> float:
        """Read until `condition()`; the seconds it took. Fails showing the screen."""
        start = time.monotonic()
        while not condition():
            if time.monotonic() - start > timeout:
                raise AssertionError(f"never saw {what or condition}; the screen:\n{self.text()}")
            if not self.read() and not condition():
                raise AssertionError(f"the client ended before {what}; the screen:\n{self.text()}")
        return time.monotonic() - start

    def wait_for(self, text: str, timeout: float = 15.0) -> float:
        return self.wait(lambda: text in self.text(), timeout, repr(text))

    def settle(self, seconds: float = 0.3) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.read(0.02)

    def display(self) -> str:
        """The screen as it is now."""
        return "\n".join(line.rstrip() for line in self.screen.display)

    def text(self) -> str:
        """Everything still on the screen or scrolled above it."""
        top = [
            "".join(line[x].data for x in range(self.columns)).rstrip()
            for line in self.screen.history.top
        ]
        return "\n".join([*top, self.display()])

    def raw_text(self) -> str:
        """All the output with escape sequences removed (what scrolled out of pyte's
        history too)."""
        return _ESCAPES.sub(b"", bytes(self.output)).decode("utf-8", "replace")

    def ready(self, timeout: float = 20.0) -> None:
        """Wait for the banner and the prompt (the session is open)."""
        self.wait_for("Ctrl+D leaves", timeout)
        self.settle(0.2)

    def idle(self) -> bool:
        """No turn runs: the status line (with its Ctrl+C hint) is gone."""
        return "ctrl+c stop" not in self.display()

    def wait_idle(self, timeout: float = 15.0) -> float:
        return self.wait(self.idle, timeout, "the prompt back (idle)")

    # --- typing ------------------------------------------------------------------------

    def send(self, keys: str) -> None:
        self.child.send(keys.encode())

    def line(self, text: str) -> None:
        """Type `text` and Enter, as a person does (the Enter comes on its own)."""
        self.send(text)
        self.settle(0.1)
        self.send("\r")

    def paste(self, text: str) -> None:
        """A bracketed paste, as a terminal sends one."""
        self.send(f"\x1b[200~{text}\x1b[201~")

    def resize(self, rows: int, columns: int) -> None:
        self.rows, self.columns = rows, columns
        self.screen.resize(rows, columns)
        self.child.setwinsize(rows, columns)

    # --- the end -------------------------------------------------------------------------

    def exit_code(self, timeout: float = 15.0) -> int:
        """Wait for the client to end on its own; its exit code (128+N for signal N)."""
        deadline = time.monotonic() + timeout
        while self.read() and time.monotonic() < deadline:
            pass
        self.child.expect(pexpect.EOF, timeout=max(deadline - time.monotonic(), 0.1))
        self.child.close()
        if self.child.signalstatus is not None:
            return 128 + int(self.child.signalstatus)
        return int(self.child.exitstatus or 0)

    def close(self) -> None:
        """End the client if it still runs, and check that nothing of its session (the
        commands it started) is left running."""
        if self.child.isalive():
            self.child.kill(signal.SIGKILL)
        self.child.close(force=True)
        deadline = time.monotonic() + 5.0  # the watchdog leaves once our pipe closes
        while (left := session_processes(self.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in left:
            kill(pid)
        assert not left, f"processes left behind: {left}"


def session_processes(sid: int) -> list[int]:
    """Live processes of the session `sid` (the client's: pexpect makes it a session
    leader, and what it starts stays in that session unless it makes its own)."""
    found = []
    for pid in pids():
        fields = stat_fields(pid)
        if fields is not None and int(fields[3]) == sid and fields[0] != "Z":
            found.append(pid)
    return found
