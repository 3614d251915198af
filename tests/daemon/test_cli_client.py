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
from codecoder.sessions import SessionStore
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


def test_a_denial_with_a_message_reaches_the_model_through_the_daemon(tmp_path: Path) -> None:
    touch = {"type": "tool_call", "name": "run_command", "args": {"command": "touch made"}}
    running = Daemon(write_script(tmp_path, [[touch], ["Understood."]]))
    term = Terminal(["-C", str(tmp_path)], cwd=tmp_path)
    try:
        term.ready()
        term.line("make a file")
        term.wait_for("Allow it?")
        term.settle(0.5)
        term.send("m")
        term.wait_for("tell the model")
        term.line("not in this folder")
        term.wait_for("Understood.")
        assert not (tmp_path / "made").exists()
        with SessionStore() as store:
            (info,) = store.list_sessions(tmp_path)
            (result,) = [r for m in store.load_messages(info.id) for r in m.tool_results]
        assert "not in this folder" in result.text
        term.send("\x04")
        assert term.exit_code() == 0
    finally:
        term.close()
        running.stop()


def test_on_a_daemon_session_approval_switches_and_the_rest_says_what_is_missing(
    daemon: Daemon, tmp_path: Path
) -> None:
    term = Terminal(["-C", str(tmp_path)], cwd=tmp_path)
    try:
        term.ready()
        term.line("/approval full-auto")
        term.wait_for("approval mode: full-auto")
        with daemon.client() as listing:
            (live,) = listing.call("_codecoder/sessions/list", {})["sessions"]
        assert live["mode"] == "full-auto"  # session/set_mode reached the daemon
        term.line("/model openai/gpt-5")
        term.wait_for("keeps the model it was started with")
        term.line("/compact")
        term.wait_for("/compact is not available on a daemon session")
        term.send("\x04")
        assert term.exit_code() == 0
    finally:
        term.close()
