"""One line, never a traceback: broken config, a session store that cannot be used, bad
scripts, output into a closed pipe, and bad input to every subcommand (issue 10, item 8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codecoder import paths

CLI = [sys.executable, "-m", "codecoder"]


def run(
    *args: str, cwd: Path | None = None, stdout: int | None = None, unbuffered: bool = False
) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    result = subprocess.run(
        [*CLI, *args],
        env=env,
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )
    return result.returncode, result.stdout or "", result.stderr


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def script(tmp_path: Path, replies: object) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(replies))
    return str(path)


# --- configuration -----------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["exec", "--script", "SCRIPT", "-C", "WS", "hi"],
        ["models"],
        ["doctor"],
        ["demo"],
        ["-C", "WS", "prompt"],
    ],
)
def test_a_config_that_is_not_utf8_is_exit_2_naming_the_file(
    tmp_path: Path, command: list[str]
) -> None:
    config = paths.config_dir() / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_bytes(b'model = "caf\xe9/x"\n')
    args = [{"SCRIPT": script(tmp_path, [["hi"]]), "WS": str(tmp_path)}.get(a, a) for a in command]
    code, _, err = run(*args)
    assert code == 2
    assert one_line(err).endswith(f"{config}:1: not UTF-8 text (byte 0xe9); save the file as UTF-8")


def test_a_config_mistake_stops_exec_with_the_file_and_line(tmp_path: Path) -> None:
    config = paths.config_dir() / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[permissions]\ndenied = ["run_command(rm:*)"]\n')
    code, out, err = run("exec", "--script", script(tmp_path, [["hi"]]), "-C", str(tmp_path), "x")
    assert (code, out) == (2, "")
    assert one_line(err) == (
        f"codecoder: {config}:2: unknown key `denied` in [permissions]; did you mean `deny`?"
    )
    assert not paths.sessions_db().exists()


# --- the session store -------------------------------------------------------------


def _garbage() -> None:
    paths.sessions_db().parent.mkdir(parents=True, exist_ok=True)
    paths.sessions_db().write_text("this is not a database\n" * 100)


def _directory() -> None:
    paths.sessions_db().mkdir(parents=True)


def _file_for_folder() -> None:
    paths.data_dir().parent.mkdir(parents=True, exist_ok=True)
    paths.data_dir().write_text("")


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (_garbage, "file is not a database"),
        (_directory, "is a directory"),
        (_file_for_folder, "is not a folder"),
    ],
)
def test_a_store_that_cannot_be_used_is_one_line_and_nothing_runs(
    tmp_path: Path, spoil: object, why: str
) -> None:
    assert callable(spoil)
    spoil()
    marker = tmp_path / "ran"
    replies = [
        [{"type": "tool_call", "name": "write_file", "args": {"path": "ran", "content": ""}}],
        ["ok"],
    ]
    code, out, err = run(
        "exec", "--approval", "full-auto", "--script", script(tmp_path, replies),
        "-C", str(tmp_path), "go",
    )  # fmt: skip
    assert (code, out) == (2, "")
    line = one_line(err)
    assert line.startswith(f"codecoder: cannot open the session store {paths.sessions_db()}: ")
    assert why in line
    assert not marker.exists()
    code, out, err = run("sessions", "--all")
    if spoil is _file_for_folder:  # no store: reading commands say so and create none
        assert (code, out) == (0, "no sessions yet\n")
    else:
        assert code == 2 and why in one_line(err)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file modes")
def test_a_read_only_store_is_one_line(tmp_path: Path) -> None:
    code, _, err = run("exec", "--script", script(tmp_path, [["hi"]]), "-C", str(tmp_path), "x")
    assert code == 0, err
    paths.sessions_db().chmod(0o444)
    code, out, err = run("exec", "--script", script(tmp_path, [["hi"]]), "-C", str(tmp_path), "x")
    assert (code, out) == (2, "")
    assert str(paths.sessions_db()) in one_line(err)


# --- scripts -------------------------------------------------------------------------


@pytest.mark.parametrize("seconds", ["1e308", "1e999", "-1", "-0.0001", '"nan"', '"inf"'])
@pytest.mark.parametrize("where", ["sleep", "token_delay"])
def test_a_script_pause_that_cannot_be_slept_is_refused_before_the_run(
    tmp_path: Path, seconds: str, where: str
) -> None:
    path = tmp_path / "script.json"
    part = f'{{"type": "sleep", "seconds": {seconds}}}' if where == "sleep" else '"x"'
    delay = f', "token_delay": {seconds}' if where == "token_delay" else ""
    path.write_text(
        f'{{"format": "codecoder-script/1", "replies": [{{"parts": [{part}]{delay}}}]}}'
    )
    code, out, err = run("exec", "--script", str(path), "-C", str(tmp_path), "--json", "go")
    assert (code, out) == (2, "")
    assert one_line(err).startswith(f"codecoder: bad script {path}: ")
    assert not paths.sessions_db().exists()


# --- output into a closed pipe -------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["--version"],
        ["--help"],
        ["exec", "--help"],
        ["models"],
        ["sessions", "--all"],
        ["prompt"],
        ["trust"],
        ["untrust"],
        ["doctor", "--timeout", "0.2"],
        ["exec", "--script", "SCRIPT", "hi"],
        ["exec", "--json", "--script", "SCRIPT", "hi"],
    ],
)
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_output_into_a_closed_pipe_exits_quietly(
    tmp_path: Path, command: list[str], unbuffered: bool
) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # like `codecoder … | head` once head has gone
    args = [script(tmp_path, [["hello " * 2000]]) if a == "SCRIPT" else a for a in command]
    try:
        code, _, err = run(*args, cwd=tmp_path, stdout=writer, unbuffered=unbuffered)
    finally:
        os.close(writer)
    assert "Traceback" not in err and "Error" not in err, err
    if command[0] == "doctor":
        return  # its own verdict (no provider is set up here) or 0 if cut short: both quiet
    expected = 1 if command[0] == "exec" and "--help" not in command else 0
    assert code == expected, err


# --- bad input to subcommands ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["demo", "--speed", "nan"], "--speed must be above 0"),
        (["demo", "--speed", "inf"], "--speed must be above 0"),
        (["demo", "--speed", "0"], "--speed must be above 0"),
        (["doctor", "--timeout", "nan"], "--timeout must be above 0"),
        (["doctor", "--timeout", "1e308"], "--timeout must be above 0"),
        (["doctor", "--timeout", "-1"], "--timeout must be above 0"),
        (["exec", "--script", "SCRIPT", "--resume", "", "x"], "session id '' is too short"),
        (["resume", "", "--script", "SCRIPT"], "session id '' is too short"),
        (["trust", "/no/such/folder"], "not a folder: /no/such/folder"),
        (["sessions", "show", "short"], "no session matches 'short'"),
        (["exec", "--script", "SCRIPT", "--max-rounds", "0", "x"], "--max-rounds must be at"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], fragment: str) -> None:
    args = [script(tmp_path, [["hi"]]) if a == "SCRIPT" else a for a in args]
    code, _, err = run(*args, cwd=tmp_path)
    assert code == 2
    assert fragment in one_line(err)


def test_the_round_limit_reads_as_english(tmp_path: Path) -> None:
    replies = [[{"type": "tool_call", "name": "list_dir", "args": {}}]] * 2
    path = script(tmp_path, replies)
    code, _, err = run("exec", "--script", path, "-C", str(tmp_path), "--max-rounds", "1", "go")
    assert code == 1
    assert err.rstrip().endswith("codecoder: stopped after 1 round")
