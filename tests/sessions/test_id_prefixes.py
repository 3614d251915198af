"""Any unique prefix of a session id, 4 characters at least, names the session wherever
an id is taken (issue 29, item 9): `sessions show`, `exec --resume`, `replay`,
`undo --session`, ACP `session/load` and `_codecoder/session/attach`. An ambiguous one
lists the sessions it matches. Through the console script and `codecoder acp`."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codecoder import paths
from tests.daemon.acp_peer import running, write_script

pytestmark = pytest.mark.timeout(120)

CLI = [sys.executable, "-m", "codecoder"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, check=False)


def write_file(path: str, content: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": "write_file", "args": {"path": path, "content": content}}


def exec_session(tmp_path: Path, workspace: Path, *extra: str) -> str:
    """A session that wrote a file (so it has a turn to undo); its id."""
    script = write_script(tmp_path / "s.json", [write_file("a.txt", "A\n")], ["Wrote it."])
    result = run(
        "exec", "--json", "--approval", "full-auto", "--script", str(script),
        "-C", str(workspace), *extra, "write a",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[0])["session_id"]


def twin(session: str) -> str:
    """Store a session whose id shares the first 4 characters of `session` (5th differs),
    as another CodeCoder process would."""
    other = session[:4] + ("0" if session[4] != "0" else "1") + session[5:]
    with sqlite3.connect(paths.sessions_db()) as conn:
        conn.execute(
            "INSERT INTO sessions (id, cwd, model, title, created_at, updated_at)"
            " VALUES (?, '/elsewhere', 'scripted', 'the other one', 0, 0)",
            (other,),
        )
    conn.close()
    return other


def test_a_four_character_prefix_names_a_session_on_the_command_line(tmp_path: Path) -> None:
    workspace = tmp_path / "w"
    workspace.mkdir()
    session = exec_session(tmp_path, workspace)
    short = session[:4]
    shown = run("sessions", "show", short)
    assert shown.returncode == 0, shown.stderr
    assert "write a" in shown.stdout and "Wrote it." in shown.stdout
    assert run("replay", short).returncode == 0
    undo = run("undo", "-C", str(workspace), "--session", short, "--dry-run")
    assert undo.returncode == 0, undo.stderr
    assert "a.txt" in undo.stdout + undo.stderr
    script = write_script(tmp_path / "more.json", ["Still here."])
    more = run("exec", "--json", "--script", str(script), "--resume", short, "go on")
    assert more.returncode == 0, more.stderr
    assert json.loads(more.stdout.splitlines()[0])["session_id"] == session

    other = twin(session)
    ambiguous = run("sessions", "show", short)
    assert ambiguous.returncode == 2
    assert ambiguous.stderr.count("\n") == 1  # one line, naming both
    assert f"'{short}' starts more than one session id" in ambiguous.stderr
    assert session[:12] in ambiguous.stderr and other[:12] in ambiguous.stderr
    assert "the other one in /elsewhere" in ambiguous.stderr
    assert "give more characters" in ambiguous.stderr
    assert run("sessions", "show", session[:5]).returncode == 0
    too_short = run("sessions", "show", session[:3])
    assert "give at least 4 characters" in too_short.stderr


def test_acp_load_and_attach_take_a_four_character_prefix(tmp_path: Path) -> None:
    workspace = tmp_path / "w"
    workspace.mkdir()
    session = exec_session(tmp_path, workspace)
    later = write_script(tmp_path / "later.json", ["Welcome back."])
    with running(later, cwd=workspace) as editor:
        editor.initialize()
        editor.call("session/load", {"sessionId": session[:4], "cwd": str(workspace),
                                     "mcpServers": []})  # fmt: skip
        attached = editor.call("_codecoder/session/attach", {"sessionId": session[:4]})
        assert attached["sessionId"] == session
        assert editor.prompt(session, "still there?") == "end_turn"
        other = twin(session)
        error = editor.error_of("_codecoder/session/attach", {"sessionId": session[:4]})
        assert "starts more than one session id" in error["message"]
        assert other[:12] in error["message"]


def test_undo_never_acts_on_another_folders_session(tmp_path: Path) -> None:
    """A short prefix may name any folder's session: `undo --session` run in folder A
    must not delete what a session of folder B wrote (before: it did, naming no folder,
    and its redo hint failed in A)."""
    here, there = tmp_path / "a", tmp_path / "b"
    here.mkdir()
    there.mkdir()
    session = exec_session(tmp_path, there)
    refused = run("undo", "--session", session[:4], "-C", str(here))
    assert refused.returncode != 0
    assert f"changed files in {there}" in refused.stderr and f"-C {there}" in refused.stderr
    assert (there / "a.txt").read_text() == "A\n"
    done = run("undo", "--session", session[:4], "-C", str(there))
    assert done.returncode == 0, done.stderr
    assert not (there / "a.txt").exists()


def test_an_editor_cannot_load_another_folders_session_into_its_own(tmp_path: Path) -> None:
    """`session/load` with folder A's cwd and a prefix of folder B's session: before, B's
    history was replayed with its paths rewritten into A, and the next prompt worked on
    A's files. The session belongs to B: refused, naming it."""
    here, there = tmp_path / "a", tmp_path / "b"
    here.mkdir()
    there.mkdir()
    session = exec_session(tmp_path, there)
    later = write_script(tmp_path / "later.json", ["Welcome back."])
    with running(later, cwd=here) as editor:
        editor.initialize()
        params = {"sessionId": session[:4], "cwd": str(here), "mcpServers": []}
        error = editor.error_of("session/load", params)
        assert error["code"] == -32602 and f"belongs to {there}" in error["message"]
        assert not editor.updates  # nothing of B's was replayed
        params["cwd"] = str(there)
        editor.call("session/load", params)
        assert editor.prompt(session, "still there?") == "end_turn"


def test_a_broken_store_is_not_reported_as_no_such_session(tmp_path: Path) -> None:
    """A prefix looked up in a store that cannot be read: the editor is told what is
    wrong with the store (a server error naming it), not that the session does not exist."""
    database = paths.sessions_db()
    database.parent.mkdir(parents=True, exist_ok=True)
    database.write_bytes(b"not a database at all" * 100)
    later = write_script(tmp_path / "later.json", ["Hello."])
    with running(later, cwd=tmp_path) as editor:
        editor.initialize()
        params = {"sessionId": "abcd", "cwd": str(tmp_path), "mcpServers": []}
        error = editor.error_of("session/load", params)
        assert error["code"] == -32603, error  # SERVER_ERROR, not RESOURCE_NOT_FOUND
        assert str(database) in error["message"], error
