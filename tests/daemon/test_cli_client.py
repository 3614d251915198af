"""The terminal client and `codecoder sessions` with a running daemon: by default the
client drives a daemon session (which goes on when the client leaves), `--attach` finds
the folder's live session and shows the conversation so far, `--no-daemon` stays in
process, and `sessions` marks what is live. The client runs in a real terminal
(tests/terminal.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from codecoder.cli.tui.text import MARK
from tests.daemon.helpers import CLI, Daemon, write_script
from tests.terminal import Terminal

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    script = write_script(tmp_path, [["the daemon answers"], ["again from the daemon"]])
    running = Daemon(script)
    yield running
    running.stop()


def client(workspace: Path, *flags: str, task: str = "go", answer: str = "") -> str:
    """Run the client in a terminal, send `task`, wait for `answer`, leave with Ctrl+D;
    what was on the screen."""
    term = Terminal(["-C", str(workspace), *flags], cwd=workspace)
    try:
        term.ready()
        term.line(task)
        term.wait_for(answer)
        term.wait_idle()
        term.send("\x04")
        assert term.exit_code() == 0, term.text()
        return term.text()
    finally:
        term.close()


def test_the_client_uses_the_daemon_and_the_session_outlives_it(
    daemon: Daemon, tmp_path: Path
) -> None:
    out = client(tmp_path, answer="the daemon answers")
    assert "(daemon)" in out
    with daemon.client() as listing:
        sessions = listing.call("_codecoder/sessions/list", {})["sessions"]
    assert [s["cwd"] for s in sessions] == [str(tmp_path)]
    again = client(tmp_path, "--attach", answer="again from the daemon")  # the live session
    assert sessions[0]["sessionId"][:8] in again
    assert "earlier in this session" in again and f"{MARK} go" in again  # what was said before
    assert "the daemon answers" in again
    listed = subprocess.run(
        [*CLI, "sessions", "-C", str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout
    assert "live" in listed


def test_no_daemon_stays_in_this_process(daemon: Daemon, tmp_path: Path) -> None:
    (tmp_path / "local").mkdir()
    script = write_script(tmp_path / "local", [["answered here"]])
    out = client(tmp_path, "--no-daemon", "--script", str(script), answer="answered here")
    assert "(daemon)" not in out
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
