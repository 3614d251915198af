"""`codecoder daemon status` and `codecoder daemon stop` (issue 29, item 3), through the
command line against a real daemon process: whether one runs, its pid, socket and
sessions (running or idle, attached clients); a stop that cancels the running turn,
commits it, and returns once the daemon is gone."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codecoder import paths
from codecoder.sessions import SessionStore
from tests.daemon.helpers import Daemon, write_script

pytestmark = pytest.mark.timeout(90)

CLI = [sys.executable, "-m", "codecoder"]


def codecoder(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, check=False)


def test_with_no_daemon_status_says_so_and_fails_and_stop_has_nothing_to_do() -> None:
    socket = str(paths.daemon_socket())
    status = codecoder("daemon", "status")
    assert status.returncode == 1, status
    assert "no daemon is running" in status.stdout and socket in status.stdout
    assert "codecoder daemon --detach" in status.stdout
    as_json = codecoder("daemon", "status", "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout) == {"running": False, "socket": socket, "lockHolder": None}
    stop = codecoder("daemon", "stop")
    assert stop.returncode == 0, stop
    assert "no daemon is running" in stop.stdout
    typo = codecoder("daemon", "statsu")
    assert typo.returncode == 2 and "did you mean status?" in typo.stderr, typo


def test_status_shows_the_sessions_and_stop_cancels_and_commits_the_running_turn(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    command = "touch started; sleep 300"
    replies = [
        [{"type": "tool_call", "name": "run_command", "args": {"command": command}}],
        ["never"],
    ]
    daemon = Daemon(write_script(tmp_path, replies), "--approval", "full-auto")
    answers: list[Any] = []
    try:
        busy = daemon.client()
        idle = daemon.client()
        new = {"cwd": str(workspace), "mcpServers": []}
        running_id = busy.call("session/new", new)["sessionId"]
        idle_id = idle.call("session/new", new)["sessionId"]
        idle.close()  # detached: the session stays loaded, idle
        params = {"sessionId": running_id, "prompt": [{"type": "text", "text": "go"}]}
        busy.call_async("session/prompt", params, lambda r, e: answers.append((r, e)))
        deadline = time.monotonic() + 30
        while not (workspace / "started").exists():
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.02)

        status = codecoder("daemon", "status")
        assert status.returncode == 0, status
        assert f"pid {daemon.proc.pid}" in status.stdout
        assert str(daemon.socket) in status.stdout
        assert "2 sessions loaded, 1 running" in status.stdout
        lines = status.stdout.splitlines()
        (busy_line,) = [line for line in lines if running_id in line]
        (idle_line,) = [line for line in lines if idle_id in line]
        assert "running" in busy_line and "1 client " in busy_line, busy_line
        assert "idle" in idle_line and "0 clients" in idle_line, idle_line

        info = json.loads(codecoder("daemon", "status", "--json").stdout)
        assert info["running"] is True and info["pid"] == daemon.proc.pid
        assert info["socket"] == str(daemon.socket)
        sessions = {s["sessionId"]: s for s in info["sessions"]}
        assert sessions[running_id]["running"] and sessions[running_id]["clients"] == 1
        assert not sessions[idle_id]["running"] and sessions[idle_id]["clients"] == 0

        stop = codecoder("daemon", "stop")
        assert stop.returncode == 0, stop
        assert f"stopped the daemon (pid {daemon.proc.pid})" in stop.stdout
        assert "1 running turn cancelled" in stop.stdout
        # it returned once the daemon was done: lock released, socket removed, exited 0
        assert not daemon.socket.exists()
        assert daemon.proc.wait(5) == 0
        deadline = time.monotonic() + 5
        while not answers and time.monotonic() < deadline:
            time.sleep(0.02)
        assert answers == [({"stopReason": "cancelled"}, None)]
        busy.close()
    finally:
        daemon.stop()
    with SessionStore() as store:
        stored = store.load_messages(running_id)
    assert stored[0].text == "go"
    assert stored[-1].role == "tool"  # the cut-off call got its (cancelled) result
    after = codecoder("daemon", "status")
    assert after.returncode == 1 and "no daemon is running" in after.stdout


def test_a_daemon_whose_socket_is_gone_is_found_by_its_lock_and_stopped_with_sigterm(
    tmp_path: Path,
) -> None:
    """A daemon still runs when its socket file was removed (a cleaner of /tmp): status
    names it by the lock it holds, and stop sends it SIGTERM and waits for it."""
    daemon = Daemon(write_script(tmp_path, [["hi"]]))
    try:
        daemon.socket.unlink()
        status = codecoder("daemon", "status")
        assert status.returncode == 1, status
        assert f"a daemon holds the lock (pid {daemon.proc.pid}) but does not answer" in (
            status.stderr
        )
        assert json.loads(codecoder("daemon", "status", "--json").stdout)["lockHolder"] == (
            daemon.proc.pid
        )
        stop = codecoder("daemon", "stop")
        assert stop.returncode == 0, stop
        assert f"stopped the daemon (pid {daemon.proc.pid}) (nothing answers" in stop.stdout
        assert daemon.proc.wait(5) == 0
    finally:
        daemon.stop()
