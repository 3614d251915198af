"""`codecoder sessions …` against a store in XDG_DATA_HOME under tmp_path."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from wcwidth import wcswidth

from codecoder.cli.sessions_cmd import add_parsers, main
from codecoder.kernel.codec import decode
from codecoder.kernel.messages import Message, Text
from codecoder.sessions.store import SessionStore
from tests.sessions.session_samples import every_kind, exchange, user_message


def seed(db: Path, cwd: Path, model: str = "openai/gpt-5") -> str:
    with SessionStore(db) as store:
        session = store.create(cwd, model)
        for message in every_kind():
            store.append(session, message)
    return session


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["sessions", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_list_shows_this_folders_sessions_newest_first(
    xdg_data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    older = seed(xdg_data, here)
    newer = seed(xdg_data, here, "anthropic/claude-sonnet-4-5")
    other = seed(xdg_data, elsewhere)
    monkeypatch.chdir(here)
    code, out, err = run(capsys)
    lines = out.splitlines()
    assert (code, err) == (0, "")
    assert lines[0].split() == ["ID", "TITLE", "MODEL", "AGE"]
    assert lines[1].startswith(newer[:8] + "  Fix the parser")
    assert "anthropic/claude-sonnet-4-5" in lines[1] and lines[1].endswith("just now")
    assert lines[2].startswith(older[:8]) and len(lines) == 3

    code, out, _ = run(capsys, "--all")
    assert code == 0 and "FOLDER" in out.splitlines()[0]
    assert {line[:8] for line in out.splitlines()[1:]} == {older[:8], newer[:8], other[:8]}
    assert str(elsewhere) in out or "~" in out

    code, out, _ = run(capsys, "-C", str(elsewhere))
    assert code == 0 and out.splitlines()[1].startswith(other[:8])


def test_list_aligns_titles_in_wide_characters(
    xdg_data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def titled(title: str) -> None:
        with SessionStore(xdg_data) as store:
            session = store.create(tmp_path, "openai/gpt-5")
            store.append(session, Message(id=0, role="system", items=(Text("system"),)))
            store.append(session, user_message(title, id=1))
            store.append(session, Message(id=2, role="assistant", items=(Text("ok"),)))

    titled("修复解析器的错误")
    titled("Fix the parser")
    titled("Café déjà vu")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys)
    assert code == 0
    rows = out.splitlines()
    models = {cells(row[: row.index("openai/gpt-5")]) for row in rows[1:]}
    assert models == {cells(rows[0][: rows[0].index("MODEL")])}, rows  # one column


def cells(text: str) -> int:
    """Columns in a terminal, by wcwidth (the table the terminal client uses)."""
    return wcswidth(text)


def test_list_without_a_store_creates_nothing(
    xdg_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys)
    assert code == 0 and "no sessions" in out
    assert not xdg_data.exists()
    code, _, err = run(capsys, "show", "12345678")
    assert code == 2 and "no session matches" in err and not xdg_data.exists()


def test_show_renders_the_transcript(
    xdg_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = seed(xdg_data, tmp_path)
    code, out, _ = run(capsys, "show", session[:8])
    assert code == 0
    assert f"session  {session}" in out
    assert "[1] user\n  Fix the parser" in out
    assert '→ read_file {"path": "src/p.py", "n": [1, 2.5]}' in out
    assert "← call_3 cancelled" in out and "[4] assistant (interrupted)" in out


def test_export_jsonl_and_markdown(
    xdg_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = seed(xdg_data, tmp_path)
    code, out, _ = run(capsys, "export", session[:12], "--format", "jsonl")
    assert code == 0
    assert [decode(line, Message) for line in out.splitlines()] == every_kind()
    code, out, _ = run(capsys, "export", session, "--format", "markdown")
    assert code == 0 and out.startswith("# Fix the parser") and "## Tool · #3" in out


def test_fork_prints_the_new_id(
    xdg_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = seed(xdg_data, tmp_path)
    code, out, _ = run(capsys, "fork", session[:8], "--at", "1")
    new_id = out.strip()
    assert code == 0 and len(new_id) == 32 and new_id != session
    with SessionStore(xdg_data) as store:
        assert store.load_messages(new_id) == every_kind()[:2]
        assert store.get(new_id).parent_id == session
    code, _, err = run(capsys, "fork", session, "--at", "42")
    assert code == 2 and err == f"codecoder sessions: session {session[:8]} has no message 42\n"


def test_bad_ids_are_one_clear_line_and_exit_2(
    xdg_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(xdg_data, tmp_path)
    for argv, message in [
        (("show", "abc"), "too short: give at least 4 characters"),
        (("show", "zzzzzzzzzz"), "no session matches 'zzzzzzzzzz'"),
        (("export", "0000000000"), "no session matches"),
    ]:
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, "")
        assert err.startswith("codecoder sessions: ") and message in err
        assert err.count("\n") == 1


def test_usage_errors_exit_2(xdg_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["sessions", "export", "12345678", "--format", "pdf"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_add_parsers_wires_a_func_per_action() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-C", "--cwd", dest="cwd")  # a global -C the main parser may define
    add_parsers(parser.add_subparsers(dest="command"))
    listed = parser.parse_args(["-C", "/x", "sessions", "--all"])
    assert listed.func.__name__ == "list_cmd" and listed.all and listed.cwd == "/x"
    shown = parser.parse_args(["sessions", "show", "12345678"])
    assert shown.func.__name__ == "show_cmd" and shown.id == "12345678"
    fork = parser.parse_args(["sessions", "fork", "12345678", "--at", "7"])
    assert fork.func.__name__ == "fork_cmd" and fork.at == 7
    assert parser.parse_args(["sessions", "export", "x"]).format == "jsonl"


def test_as_a_module_in_a_child_process(xdg_data: Path, tmp_path: Path) -> None:
    with SessionStore(xdg_data) as store:
        session = store.create(tmp_path, "m/m")
        for message in exchange(1, 3):
            store.append(session, message)
    env = {**os.environ, "XDG_DATA_HOME": str(xdg_data.parent.parent)}
    command = [sys.executable, "-m", "codecoder.cli.sessions_cmd", "sessions"]
    listed = subprocess.run(
        [*command, "-C", str(tmp_path)],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert listed.returncode == 0 and listed.stdout.splitlines()[1].startswith(session[:8])
    exported = subprocess.run(
        [*command, "export", session[:8]], env=env, check=False, capture_output=True, timeout=30
    )
    assert exported.returncode == 0
    assert [json.loads(line)["id"] for line in exported.stdout.splitlines()] == list(range(1, 13))
    missing = subprocess.run(
        [*command, "show", "ffffffff"],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr == "codecoder sessions: no session matches 'ffffffff'\n"


def test_a_reader_that_leaves_early_is_not_an_error(xdg_data: Path, tmp_path: Path) -> None:
    with SessionStore(xdg_data) as store:
        session = store.create(tmp_path, "m/m")
        for message in exchange(1, 2000):  # far more than a pipe holds
            store.append(session, message)
    env = {**os.environ, "XDG_DATA_HOME": str(xdg_data.parent.parent)}
    child = subprocess.Popen(
        [sys.executable, "-m", "codecoder.cli.sessions_cmd", "sessions", "export", session],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.read(10) == b'{"id":1,"r'
    child.stdout.close()  # like `| head -c 10`
    err = child.stderr.read()
    child.stderr.close()
    assert (child.wait(timeout=30), err) == (0, b"")


def test_sessions_without_an_answer_are_listed_only_with_all(tmp_path: Path) -> None:
    """Issue 29 item 10, through the console script: a run that failed before a first
    answer and a session that never got a prompt are left out of this folder's listing
    (which says how many it left out); `--all` lists every session of every folder."""
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    failed = [[{"type": "error", "kind": "auth"}]]
    cut = [["a partial answer", {"type": "error", "kind": "auth"}]]

    def codecoder(*argv: str, cwd: Path = here) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codecoder", *argv],
            cwd=cwd, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    for name, replies in (("failed", failed), ("answered", [["done"]]), ("cut", cut)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(replies))
        codecoder("exec", "--script", str(path), f"task {name}")
    codecoder("exec", "--script", str(tmp_path / "answered.json"), "there", cwd=elsewhere)
    with SessionStore() as store:
        empty = store.create(here, "scripted")  # a client opened and left: no prompt
        ids = {info.title: info.id for info in store.list_sessions()}
    ids["empty"] = empty

    listed = codecoder("sessions")
    assert listed.returncode == 0, listed.stderr
    shown = {line[:8] for line in listed.stdout.splitlines()[1:-1]}
    assert shown == {ids["task answered"][:8], ids["task cut"][:8]}
    assert listed.stdout.splitlines()[-1] == (
        "2 sessions without an answer not shown (--all lists them)"
    )
    everything = codecoder("sessions", "--all")
    assert everything.returncode == 0, everything.stderr
    rows = everything.stdout.splitlines()
    assert {line[:8] for line in rows[1:]} == {info[:8] for info in ids.values()}
    assert "without an answer" not in everything.stdout


def test_a_folder_with_only_unanswered_sessions_says_so(tmp_path: Path) -> None:
    with SessionStore() as store:
        store.create(tmp_path, "scripted")
    listed = subprocess.run(
        [sys.executable, "-m", "codecoder", "sessions", "-C", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert listed.stdout.splitlines() == [
        f"no sessions in {tmp_path.resolve()}",
        "1 session without an answer not shown (--all lists them)",
    ]
