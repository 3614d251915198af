"""How the agent ends never leaves a command running: SIGHUP to `codecoder exec` (exit
129, the command's tree killed), and SIGKILL to `exec` (the watchdog kills the tree).
Real subprocesses, real signals, checked in /proc. SIGHUP to the interactive client, in
a real terminal: tests/cli/test_tui.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from tests.procfs import alive, kill, stat_of

pytestmark = pytest.mark.timeout(60)

CLI = [sys.executable, "-m", "codecoder"]
FULL_AUTO = ("--approval", "full-auto", "--sandbox", "off")
"""Unconfined: the tests read their commands' pids from inside (`$$`, `$!`), which the
sandbox's pid namespace renumbers (tests/sandbox/test_cli.py signals confined runs)."""


def our_zombies() -> set[int]:
    me = os.getpid()
    return {int(n) for n in os.listdir("/proc") if n.isdigit() and stat_of(int(n)) == ("Z", me)}


@pytest.fixture
def leave_nothing() -> Iterator[list[int]]:
    """The pids a test records; whatever happens, none is left running, and zombies that
    come to us (this process may be a subreaper, see tools/process.py) are reaped."""
    before = our_zombies()
    pids: list[int] = []
    yield pids
    for pid in pids:
        kill(pid)
    time.sleep(0.1)
    for pid in our_zombies() - before:
        with suppress(ChildProcessError):  # reaped since the scan (a subreaper's sweep)
            os.waitpid(pid, os.WNOHANG)


def tree_command(pidfile: Path) -> str:
    """A command whose tree is a shell, a background job, a job in a subshell and the
    shell's own wait; every pid goes to `pidfile`, and `ready` once all are written."""
    return (
        f"echo $$ >> {pidfile}; sleep 300 & echo $! >> {pidfile}; "
        f"(sleep 301 & echo $! >> {pidfile}; wait) & echo ready >> {pidfile}; wait"
    )


def script(tmp_path: Path, command: str) -> Path:
    path = tmp_path / "script.json"
    call = {"type": "tool_call", "name": "run_command", "args": {"command": command}}
    path.write_text(json.dumps({"format": "codecoder-script/1", "replies": [[call], ["x"]]}))
    return path


def wait_for_pids(pidfile: Path, into: list[int], count: int = 3) -> list[int]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        words = pidfile.read_text().split() if pidfile.exists() else []
        if "ready" in words:
            pids = [int(w) for w in words if w.isdigit()]
            if len(pids) >= count:
                into.extend(pids)
                assert all(alive(pid) for pid in pids)
                return pids
        time.sleep(0.02)
    raise AssertionError(f"the command never got going: {pidfile.read_text()!r}")


def all_gone(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def start_exec(tmp_path: Path, pidfile: Path) -> subprocess.Popen[str]:
    path = script(tmp_path, tree_command(pidfile))
    return subprocess.Popen(
        [*CLI, "exec", "--json", *FULL_AUTO, "--script", str(path), "-C", str(tmp_path), "go"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sighup_cancels_exec_kills_the_tree_and_exits_129(
    tmp_path: Path, leave_nothing: list[int]
) -> None:
    pidfile = tmp_path / "pids"
    proc = start_exec(tmp_path, pidfile)
    pids = wait_for_pids(pidfile, leave_nothing)
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 129, err
    lines = [json.loads(line) for line in out.splitlines()]
    finished = next(line for line in lines if line["type"] == "tool_finished")
    assert finished["status"] == "cancelled"
    assert lines[-1]["type"] == "done" and lines[-1]["reason"] == "cancelled"
    assert "Traceback" not in err
    assert not any(alive(pid) for pid in pids)  # dead before exec returned


def test_a_sigkilled_exec_leaves_no_command_running(
    tmp_path: Path, leave_nothing: list[int]
) -> None:
    pidfile = tmp_path / "pids"
    proc = start_exec(tmp_path, pidfile)
    pids = wait_for_pids(pidfile, leave_nothing)
    proc.kill()
    proc.communicate(timeout=15)
    assert proc.returncode == -signal.SIGKILL
    assert all_gone(pids, within=5.0), {pid: stat_of(pid) for pid in pids}
