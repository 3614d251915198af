"""Leaving a daemon session and coming back, and two clients of one session, through the
console script: the client in a real terminal (tests/terminal.py), a real daemon
(tests/daemon/helpers.py). Leaving detaches (the turn runs on, a question waits for a
client), `codecoder --attach` rejoins the live turn, and every client sees every prompt
and steer, marked with who sent it, and Ctrl+C in a client watching another's turn stops
it (issue 29, items 1, 2 and 14)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from codecoder.cli.tui.text import MARK
from codecoder.sessions import SessionStore
from tests.daemon.helpers import Daemon, write_script
from tests.terminal import Terminal

pytestmark = pytest.mark.timeout(90)

ARM = 0.5
"""A question takes keys once the user has stopped typing for 0.4 s."""


def run(command: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": "run_command", "args": {"command": command}}


def wait_until(folder: Path, name: str) -> str:
    """Shell that waits for the test to create `folder/name`."""
    return f"until [ -e {folder / name} ]; do sleep 0.05; done"


def approve(term: Terminal) -> None:
    term.wait_for("Allow it?")
    term.settle(ARM)
    term.send("y")


def live_sessions(daemon: Daemon) -> list[dict[str, Any]]:
    with daemon.client() as listing:
        return list(listing.call("_codecoder/sessions/list", {})["sessions"])


def last_line(term: Terminal) -> str:
    return [line for line in term.display().split("\n") if line.strip()][-1]


def test_leaving_detaches_and_attach_rejoins_the_live_turn(tmp_path: Path) -> None:
    command = (
        f"echo begun; {wait_until(tmp_path, 'step1')}; echo midway; "
        f"{wait_until(tmp_path, 'step2')}; echo ended"
    )
    daemon = Daemon(write_script(tmp_path, [[run(command)], ["All done here."]]))
    first = Terminal(["-C", str(tmp_path)], cwd=tmp_path)
    again: Terminal | None = None
    try:
        first.ready()
        first.line("run the long command")  # a command that asks no approval
        first.wait_for("begun")
        first.line("/exit")  # mid-turn: leave at once, without a question
        assert first.exit_code() == 0, first.text()
        (live,) = live_sessions(daemon)
        assert live["running"] and live["clients"] == 0  # the turn runs on, nobody watching
        assert "cancelled" not in first.text()
        short = live["sessionId"][:8]
        assert "goes on in the daemon (its turn runs on)" in first.text()
        assert "codecoder --attach" in first.text() and f"codecoder resume {short}" in first.text()
        assert "codecoder --attach" in last_line(first)  # the footer was cleared

        (tmp_path / "step1").touch()  # the command goes on printing while nobody watches
        time.sleep(0.5)
        again = Terminal(["-C", str(tmp_path), "--attach"], cwd=tmp_path)
        again.ready()
        again.wait_for("midway")  # what streamed meanwhile is shown
        assert "ctrl+c stops" in again.display()  # the live turn: busy, Ctrl+C stops it
        assert f"{MARK} run the long command" in again.text()
        (tmp_path / "step2").touch()
        again.wait_for("All done here.")  # the stream goes on
        again.wait_idle()
        assert "cancelled" not in again.text()
        with SessionStore() as store:
            messages = store.load_messages(live["sessionId"])
        (result,) = [r for m in messages for r in m.tool_results]
        assert result.status == "success" and "ended" in result.text
        again.send("\x04")
        assert again.exit_code() == 0
        assert f"codecoder resume {short}" in last_line(again)
    finally:
        first.close()
        if again is not None:
            again.close()
        daemon.stop()


def test_a_question_waits_for_the_next_client_when_the_terminal_closes(tmp_path: Path) -> None:
    touch = run(f"touch {tmp_path / 'made'}")
    daemon = Daemon(write_script(tmp_path, [[touch], ["Made it."]]))
    first = Terminal(["-C", str(tmp_path)], cwd=tmp_path)
    again: Terminal | None = None
    try:
        first.ready()
        first.line("make a file")
        first.wait_for("Allow it?")
        first.child.kill(1)  # SIGHUP: the terminal closed
        assert first.exit_code() == 129
        (live,) = live_sessions(daemon)
        assert live["running"]  # not denied, not cancelled: waiting for a client
        again = Terminal(["-C", str(tmp_path), "--attach"], cwd=tmp_path)
        again.ready()
        approve(again)  # the pending approval is shown and answerable
        again.wait_for("Made it.")
        assert (tmp_path / "made").exists()
        again.wait_idle()
        again.send("\x04")
        assert again.exit_code() == 0
    finally:
        first.close()
        if again is not None:
            again.close()
        daemon.stop()


def test_every_client_sees_the_prompts_and_steers_of_the_others(tmp_path: Path) -> None:
    replies = [
        ["The first answer."],
        [run(wait_until(tmp_path, "go"))],
        ["The steered answer."],
        [run(wait_until(tmp_path, "never"))],
    ]
    daemon = Daemon(write_script(tmp_path, replies))
    a = Terminal(["-C", str(tmp_path)], cwd=tmp_path)
    b: Terminal | None = None
    try:
        a.ready()
        a.line("/help")  # the session is open in the daemon
        (live,) = live_sessions(daemon)
        b = Terminal(["-C", str(tmp_path), "--attach", live["sessionId"]], cwd=tmp_path)
        b.ready()

        a.line("the first question")
        b.wait_for("The first answer.")
        b.wait_for(f"{MARK} the first question")  # A's prompt, marked with who sent it
        assert "sent from terminal pts/" in b.text()
        b.wait_idle()

        b.line("the second question")
        a.wait_for(f"{MARK} the second question")
        a.wait_for("Run $")  # the command runs
        assert "ctrl+c stops" in a.display()  # A is busy with B's turn
        a.send("also read the tests")
        a.settle(0.1)
        a.send("\x07")  # Ctrl+G: steer
        a.wait_for("steer sent")
        (tmp_path / "go").touch()
        b.wait_for("The steered answer.")
        b.wait_for("joined the turn (from terminal pts/")
        assert "also read the tests" in b.text()
        a.wait_for("The steered answer.")
        b.wait_idle()

        b.line("one more")  # a turn of B's that A, watching it, stops with Ctrl+C
        a.wait_for(f"{MARK} one more")
        a.wait(lambda: "never ]" in a.display() and not a.idle(), what="B's command running")
        a.send("\x03")
        for term in (a, b):
            term.wait_for("⊘ cancelled")
        for term in (a, b):
            term.wait_idle()
            term.send("\x04")
            assert term.exit_code() == 0
        assert "sent from" not in a.text().split("the second question")[0]  # its own: unmarked
    finally:
        a.close()
        if b is not None:
            b.close()
        daemon.stop()
