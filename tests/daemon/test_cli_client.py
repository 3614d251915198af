"""The terminal client and `codecoder sessions` with a running daemon: by default the
client drives a daemon session (which goes on when the client leaves), `--attach` finds
the folder's live session, `--no-daemon` stays in process, and `sessions` marks what
is live."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import CLI, Daemon, write_script

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    script = write_script(tmp_path, [["the daemon answers"], ["again from the daemon"]])
    running = Daemon(script)
    yield running
    running.stop()


def client(workspace: Path, *flags: str, lines: str = "go\n/exit\n") -> str:
    done = subprocess.run(
        [*CLI, "-C", str(workspace), *flags],
        input=lines,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_client_uses_the_daemon_and_the_session_outlives_it(
    daemon: Daemon, tmp_path: Path
) -> None:
    out = client(tmp_path)
    assert "(daemon)" in out and "the daemon answers" in out
    with daemon.client() as listing:
        sessions = listing.call("_codecoder/sessions/list", {})["sessions"]
    assert [s["cwd"] for s in sessions] == [str(tmp_path)]
    again = client(tmp_path, "--attach")  # this folder's live session, same script
    assert sessions[0]["sessionId"][:8] in again
    assert "again from the daemon" in again
    listed = subprocess.run(
        [*CLI, "sessions", "-C", str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout
    assert "live" in listed


def test_no_daemon_stays_in_this_process(daemon: Daemon, tmp_path: Path) -> None:
    (tmp_path / "local").mkdir()
    script = write_script(tmp_path / "local", [["answered here"]])
    out = client(tmp_path, "--no-daemon", "--script", str(script))
    assert "answered here" in out and "(daemon)" not in out
    with daemon.client() as listing:
        assert listing.call("_codecoder/sessions/list", {})["sessions"] == []


def test_attach_without_a_daemon_says_how_to_start_one(tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "-C", str(tmp_path), "--attach"],
        input="",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "codecoder daemon --detach" in done.stderr
