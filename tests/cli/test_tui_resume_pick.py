"""The session picker (issue 29, item 9): `codecoder resume --pick` and `/resume` with no
id list this folder's sessions that got an answer (title, age, turns, model; newest
first), ↑↓ and Enter resume one, Esc cancels. In a real terminal (tests/terminal.py),
with the sessions made as a user makes them (`exec --script`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codecoder.cli.tui.text import MARK
from codecoder.sessions import SessionStore
from tests.terminal import Terminal

pytestmark = pytest.mark.timeout(120)

CLI = [sys.executable, "-m", "codecoder"]
DOWN = "\x1b[B"
ESC = "\x1b"


def script(path: Path, *replies: object) -> Path:
    path.write_text(json.dumps({"format": "codecoder-script/1", "replies": list(replies)}))
    return path


def exec_session(tmp_path: Path, workspace: Path, task: str, *replies: object) -> str:
    """A stored session of `workspace`, as `codecoder exec` leaves one; its id."""
    path = script(tmp_path / "exec.json", *(replies or ([f"Done: {task}."],)))
    result = subprocess.run(
        [*CLI, "exec", "--json", "--script", str(path), "-C", str(workspace), task],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout.splitlines()[0])["session_id"]


def three_sessions(tmp_path: Path) -> tuple[Path, list[str]]:
    """A folder with three answered sessions (oldest first) and one that failed before
    its first answer (the script has no reply for it), which is not offered."""
    workspace = tmp_path / "w"
    workspace.mkdir()
    ids = [exec_session(tmp_path, workspace, task) for task in ("first", "second", "third")]
    ids.append(exec_session(tmp_path, workspace, "failed early", []))
    return workspace, ids


def picker_rows(term: Terminal) -> list[str]:
    lines = term.display().split("\n")
    start = next(i for i, line in enumerate(lines) if "Resume which session?" in line)
    return [line for line in lines[start + 1 :] if line.startswith((MARK + " ", "  "))]


def messages_of(session: str) -> list[str]:
    with SessionStore() as store:
        return [m.text for m in store.load_messages(session) if m.role == "user"]


def test_resume_pick_lists_the_answered_sessions_and_resumes_the_chosen_one(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    workspace, ids = three_sessions(tmp_path)
    later = script(tmp_path / "later.json", ["Back in the second."])
    term = Terminal(
        ["resume", "--pick", "--no-daemon", "--script", str(later), "-C", str(workspace)],
        cwd=workspace,
    )
    terminals.append(term)
    term.wait_for("Resume which session?")
    term.settle(0.3)
    rows = picker_rows(term)
    assert len(rows) == 3, term.display()  # the failed one is not offered
    assert [row[2:].split()[0] for row in rows] == ["third", "second", "first"]  # newest first
    assert rows[0].startswith(f"{MARK} third")  # the newest is selected
    for row in rows:
        assert "just now" in row and "1 turn" in row and row.rstrip().endswith("scripted")
    assert "Enter resumes" in term.display() and "choose the session to resume" in term.display()

    term.send(DOWN)
    term.wait(lambda: picker_rows(term)[1].startswith(f"{MARK} second"), what="the selection")
    term.send("\r")
    term.ready()
    assert "earlier in this session" in term.text() and "Done: second." in term.text()
    assert f"session {ids[1][:8]}" in term.text()
    term.line("and now?")
    term.wait_for("Back in the second.")
    assert messages_of(ids[1]) == ["second", "and now?"]
    term.send("\x04")
    assert term.exit_code() == 0


def test_resume_pick_cancelled_resumes_nothing_and_exits_0(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    workspace, _ = three_sessions(tmp_path)
    for key in (ESC, "\x03"):  # Esc, and Ctrl+C alike
        term = Terminal(["resume", "--pick", "--no-daemon", "-C", str(workspace)], cwd=workspace)
        terminals.append(term)
        term.wait_for("Resume which session?")
        term.settle(0.2)
        term.send(key)
        assert term.exit_code() == 0
        assert "no session chosen: nothing resumed" in term.raw_text()
        assert "Resume which session?" not in term.display()  # the picker is cleared
    with SessionStore() as store:
        assert len(store.list_sessions(workspace)) == 4  # no session was opened or made


def test_resume_pick_without_a_terminal_or_with_an_id_is_a_usage_error(tmp_path: Path) -> None:
    workspace, ids = three_sessions(tmp_path)
    piped = subprocess.run(
        [*CLI, "resume", "--pick", "-C", str(workspace)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert piped.returncode == 2
    assert "--pick needs a terminal" in piped.stderr and piped.stdout == ""
    both = subprocess.run(
        [*CLI, "resume", "--pick", ids[0][:8], "-C", str(workspace)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert both.returncode == 2
    assert "--pick chooses the session: give no ID with it" in both.stderr
    helped = subprocess.run(
        [*CLI, "resume", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    shown = " ".join(helped.stdout.split())
    assert "--pick choose among this folder's sessions" in shown and "needs a terminal" in shown


def test_resume_pick_with_no_session_here_says_so(tmp_path: Path) -> None:
    """Run in a pseudo-terminal: the check for sessions comes after the one for a terminal."""
    term = Terminal(["resume", "--pick", "--no-daemon", "-C", str(tmp_path)], cwd=tmp_path)
    try:
        assert term.exit_code() == 2
        assert f"no session to resume in {tmp_path}" in term.raw_text()
    finally:
        term.close()


def test_slash_resume_without_an_id_picks_a_session_and_switches_to_it(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    workspace, ids = three_sessions(tmp_path)
    now = script(tmp_path / "now.json", ["Answered here."], ["Answered here."])
    term = Terminal(["--no-daemon", "--script", str(now), "-C", str(workspace)], cwd=workspace)
    terminals.append(term)
    term.ready()
    term.line("a new one")
    term.wait_for("Answered here.")
    term.wait_idle()

    term.line("/resume")
    term.wait_for("Resume which session?")
    term.settle(0.2)
    rows = picker_rows(term)
    assert [row[2:].split()[0] for row in rows] == ["third", "second", "first"]  # not this one
    term.send(ESC)
    term.wait_for("no session chosen: this one goes on")
    assert "Resume which session?" not in term.display()
    term.line("still here?")  # typing goes to the prompt again, in the same session
    term.wait(lambda: term.text().count("Answered here.") == 2, what="the second answer")

    term.line("/resume")
    term.wait_for("Resume which session?")
    term.settle(0.2)
    term.send("typed text is not for the prompt")  # swallowed while the picker is open
    term.send(DOWN + DOWN)
    term.wait(lambda: picker_rows(term)[2].startswith(f"{MARK} first"), what="the selection")
    term.send("\r")
    term.wait_for("earlier in this session")
    term.wait_idle()
    term.wait(lambda: "Done: first." in term.text(), what="the earlier transcript")
    assert f"session {ids[0][:8]}" in term.text()
    assert "typed text" not in term.display()
    term.line("back in the first")
    term.wait(lambda: term.text().count("Answered here.") == 3, what="the answer there")
    assert messages_of(ids[0]) == ["first", "back in the first"]
