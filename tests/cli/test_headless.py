"""`codecoder exec` as users and scripts run it: a real subprocess, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.procfs import alive

CLI = [sys.executable, "-m", "codecoder"]
FULL_AUTO = ("--approval", "full-auto")
UNCONFINED = (*FULL_AUTO, "--sandbox", "off")
"""For tests that read their commands' pids from inside (`$$`, `$!`), which the
sandbox's pid namespace renumbers (tests/sandbox/test_cli.py signals confined runs)."""


def script(tmp_path: Path, replies: list[Any], name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"format": "codecoder-script/1", "replies": replies}))
    return path


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def run_exec(
    *args: str, input: str | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "exec", *args],
        capture_output=True,
        text=True,
        input=input,
        timeout=timeout,
        check=False,
    )


def events_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_exec_prints_the_final_answer(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    path = script(
        tmp_path, [["Reading.", call("read_file", path="notes.txt")], ["It has two lines."]]
    )
    result = run_exec("--script", str(path), "-C", str(tmp_path), "how many lines?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "It has two lines.\n"
    assert "read_file" in result.stderr


def test_json_stream_follows_the_schema(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        [["Let me run it.", call("run_command", command="echo hi; exit 3")], ["Exit code 3."]],
    )
    result = run_exec(
        "--json", "--script", str(path), "-C", str(tmp_path), "--approval", "full-auto", "go"
    )
    assert result.returncode == 0, result.stderr
    lines = events_of(result.stdout)
    first = lines[0]
    assert first["type"] == "session" and first["schema"] == "codecoder.exec/1"
    assert isinstance(first["session_id"], str) and len(first["session_id"]) >= 8
    assert all(line["turn"] == 1 for line in lines[1:])
    types = [line["type"] for line in lines[1:]]
    assert types[-1] == "done" and types.count("done") == 1
    assert lines[-1]["reason"] == "completed" and lines[-1]["cancelled"] is False
    started = next(line for line in lines if line["type"] == "tool_started")
    assert started == {
        "type": "tool_started",
        "id": "call_0_1",
        "name": "run_command",
        "args": {"command": "echo hi; exit 3"},
        "turn": 1,
    }
    assert any(line["type"] == "tool_output" and "hi" in line["chunk"] for line in lines)
    finished = next(line for line in lines if line["type"] == "tool_finished")
    assert set(finished) == {"type", "id", "name", "status", "content", "error", "turn"}
    assert finished["status"] == "error" and "3" in finished["content"]
    assert finished["error"] is None


def test_never_ask_is_the_default_and_denies_with_a_reason(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    path = script(tmp_path, [[call("run_command", command=f"touch {marker}")], ["ok"]])
    result = run_exec("--json", "--script", str(path), "-C", str(tmp_path), "go")
    assert result.returncode == 0, result.stderr
    finished = next(line for line in events_of(result.stdout) if line["type"] == "tool_finished")
    assert finished["status"] == "error" and finished["error"]["kind"] == "denied"
    assert "nobody can approve calls in this run" in finished["error"]["message"]
    assert not marker.exists()


ASK_ON_STDIN = ("--stdin-replies", "--approval", "ask")


def test_stdin_replies_answer_confirm_requests(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    replies = [[call("run_command", command=f"touch {marker}")], ["ok"]]
    proc = start(tmp_path, replies, *ASK_ON_STDIN, stdin=subprocess.PIPE)
    request = read_until(proc, "confirm_request")[-1]
    assert request["tool_call"]["name"] == "run_command" and request["reason"]
    reply = {"type": "reply", "request_id": request["request_id"], "decision": "allow_once"}
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(reply) + "\n")
    proc.stdin.flush()
    code, rest, err = finish(proc)
    assert code == 0, err
    finished = next(line for line in rest if line["type"] == "tool_finished")
    assert finished["status"] == "success"
    assert marker.exists()


def test_stdin_eof_means_deny(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    path = script(tmp_path, [[call("run_command", command=f"touch {marker}")], ["ok"]])
    result = run_exec(
        "--json", *ASK_ON_STDIN, "--script", str(path), "-C", str(tmp_path), "go", input=""
    )
    assert result.returncode == 0, result.stderr
    finished = next(line for line in events_of(result.stdout) if line["type"] == "tool_finished")
    assert finished["error"]["kind"] == "denied"
    assert not marker.exists()


def test_denied_and_bad_calls_show_the_tool_error(tmp_path: Path) -> None:
    path = script(tmp_path, [[call("no_such_tool")], ["ok"]])
    result = run_exec("--json", "--script", str(path), "-C", str(tmp_path), "go")
    finished = next(line for line in events_of(result.stdout) if line["type"] == "tool_finished")
    assert finished["status"] == "error"
    assert finished["error"]["kind"] == "unknown_tool"


@pytest.mark.parametrize(
    ("replies", "code", "fragment"),
    [
        ([], 1, "no turn reply left"),
        (
            [["x", {"type": "error", "kind": "server", "message": "upstream is down"}]],
            1,
            "upstream is down",
        ),
        ([[call("list_dir")]] * 3, 1, "stopped after 2 rounds"),
    ],
)
def test_failures_print_one_line_and_exit_1(
    tmp_path: Path, replies: list[Any], code: int, fragment: str
) -> None:
    path = script(tmp_path, replies)
    result = run_exec("--script", str(path), "-C", str(tmp_path), "--max-rounds", "2", "go")
    assert result.returncode == code
    assert "Traceback" not in result.stderr
    assert fragment in result.stderr


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--script", "/nonexistent/s.json", "go"], "cannot read script"),
        (["--script", "BAD", "go"], "bad script"),
        (["-C", "/nonexistent/dir", "--script", "GOOD", "go"], "no such folder"),
        (["go"], "no model"),
        (["--script", "GOOD", ""], "the task is empty"),
        (["--script", "GOOD", "--approval", "sometimes", "go"], "invalid choice"),
    ],
)
def test_usage_errors_exit_2_with_one_clear_line(
    tmp_path: Path, args: list[str], fragment: str
) -> None:
    (tmp_path / "bad.json").write_text("[[{")
    good = script(tmp_path, [["fine"]])
    args = [
        str(tmp_path / "bad.json") if a == "BAD" else str(good) if a == "GOOD" else a for a in args
    ]
    result = run_exec(*args)
    assert result.returncode == 2, result.stderr
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_task_from_stdin(tmp_path: Path) -> None:
    path = script(tmp_path, [["read it"]])
    result = run_exec("--script", str(path), "-C", str(tmp_path), "-", input="the task\n")
    assert result.returncode == 0 and result.stdout == "read it\n"


def test_trace_records_commands_and_events(tmp_path: Path) -> None:
    path = script(tmp_path, [[call("list_dir")], ["done"]])
    trace = tmp_path / "trace.jsonl"
    result = run_exec("--script", str(path), "-C", str(tmp_path), "--trace", str(trace), "go")
    assert result.returncode == 0
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    kinds = [(r["dir"], r["data"].get("type")) for r in records]
    assert kinds[0] == ("command", "process_message") and records[0]["turn"] == 1
    assert ("event", "tool_started") in kinds and ("event", "done") in kinds
    assert {r["dir"] for r in records} >= {"command", "event", "request", "stream", "decision"}
    assert {r["thread"] for r in records if r["dir"] == "event"} == {"agent-loop"}
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert all(isinstance(r["t"], float) and r["turn"] == 1 for r in records)


# --- live output and signals ---------------------------------------------------------


def start(
    tmp_path: Path, replies: list[Any], *extra: str, stdin: int | None = None
) -> subprocess.Popen[str]:
    path = script(tmp_path, replies)
    return subprocess.Popen(
        [*CLI, "exec", "--json", "--script", str(path), "-C", str(tmp_path), *extra, "go"],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until(proc: subprocess.Popen[str], kind: str, timeout: float = 10) -> list[dict[str, Any]]:
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(json.loads(line))
        if seen[-1]["type"] == kind:
            return seen
    raise AssertionError(f"no {kind} line; saw {[s['type'] for s in seen]}")


def finish(
    proc: subprocess.Popen[str], timeout: float = 10
) -> tuple[int, list[dict[str, Any]], str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, events_of(out), err


def test_json_lines_arrive_live(tmp_path: Path) -> None:
    proc = start(tmp_path, [["first words", {"type": "sleep", "seconds": 5}, "later"]])
    started = time.monotonic()
    seen = read_until(proc, "new_token")
    assert time.monotonic() - started < 3.0  # well before the 5 s silence ends
    assert seen[-1]["text"] == "first words"
    proc.send_signal(signal.SIGINT)
    code, rest, _ = finish(proc)
    assert code == 130 and rest[-1]["type"] == "done" and rest[-1]["reason"] == "cancelled"


def test_sigint_cancels_a_silent_stream_cleanly(tmp_path: Path) -> None:
    proc = start(tmp_path, [["hello ", {"type": "sleep", "seconds": 60}]])
    read_until(proc, "new_token")
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    code, rest, err = finish(proc)
    assert time.monotonic() - sent < 3.0
    assert code == 130
    assert rest[-1] == {"type": "done", "cancelled": True, "reason": "cancelled", "turn": 1}
    assert "Traceback" not in err


def test_sigint_kills_the_whole_command_tree(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    inner = f"sleep 100 & echo $! >> {pids}; sleep 100 & echo $! >> {pids}; wait"
    command = f"sh -c '{inner}' & echo $! >> {pids}; wait"
    proc = start(tmp_path, [[call("run_command", command=command)], ["unused"]], *UNCONFINED)
    read_until(proc, "tool_started")
    deadline = time.monotonic() + 5
    while (not pids.exists() or len(pids.read_text().split()) < 3) and time.monotonic() < deadline:
        time.sleep(0.02)
    recorded = [int(p) for p in pids.read_text().split()]
    assert all(alive(pid) for pid in recorded)
    proc.send_signal(signal.SIGINT)
    code, rest, _ = finish(proc)
    assert code == 130
    finished = next(line for line in rest if line["type"] == "tool_finished")
    assert finished["status"] == "cancelled"
    assert not any(alive(pid) for pid in recorded)


def test_second_sigint_exits_at_once(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    command = f"trap '' TERM; echo $$ > {pidfile}; while :; do sleep 0.05; done"
    proc = start(tmp_path, [[call("run_command", command=command)], ["unused"]], *UNCONFINED)
    read_until(proc, "tool_started")
    deadline = time.monotonic() + 5
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.05)
    shell_pid = int(pidfile.read_text())
    proc.send_signal(signal.SIGINT)  # starts the grace period: the command ignores TERM
    time.sleep(0.2)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=10)
    assert proc.returncode == 130
    assert time.monotonic() - sent < 1.5  # not the 2 s grace period
    deadline = time.monotonic() + 2
    while alive(shell_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(shell_pid)


def test_sigterm_exits_143_after_a_clean_cancel(tmp_path: Path) -> None:
    proc = start(tmp_path, [["x ", {"type": "sleep", "seconds": 60}]])
    read_until(proc, "new_token")
    proc.send_signal(signal.SIGTERM)
    code, rest, _ = finish(proc)
    assert code == 143
    assert rest[-1]["type"] == "done" and rest[-1]["cancelled"] is True


def test_version_is_fast_to_print() -> None:
    result = subprocess.run([*CLI, "--version"], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("codecoder ")
    env = dict(os.environ)
    heavy = "('msgspec', 'socket', 'argparse', 'typing')"
    code = (
        "import sys, codecoder.cli.main as m; m.main(['--version']);"
        f"print(sorted(k for k in sys.modules if k.startswith({heavy})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip().endswith("[]")


def test_msgspec_loads_without_typing_extensions_which_the_others_still_get() -> None:
    """The mcp SDK's dependencies install typing_extensions; msgspec imported it whenever
    it was there (13 ms of exec's start-up). codecoder/__init__.py keeps it from msgspec
    only."""
    code = (
        "import sys, codecoder, msgspec\n"
        "print('typing_extensions' in sys.modules)\n"
        "from typing import NotRequired, TypedDict\n"
        "class T(TypedDict):\n    a: int\n    b: NotRequired[str]\n"
        "print(msgspec.json.decode(b'{\"a\": 1}', type=T))\n"
        "import typing_extensions\n"
        "print(typing_extensions.Required is not None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["False", "{'a': 1}", "True"]


def test_a_sub_agents_question_is_answered_too(tmp_path: Path) -> None:
    path = tmp_path / "sub.json"
    path.write_text(
        json.dumps(
            {
                "format": "codecoder-script/1",
                "replies": [[call("agent", tasks=[{"task": "read it"}])], ["done"]],
                "subagents": [
                    {"match": ".", "replies": [[call("read_file", path="/etc/hostname")], ["x"]]}
                ],
            }
        )
    )
    result = run_exec(
        "--json",
        "--approval",
        "ask",
        "--script",
        str(path),
        "-C",
        str(tmp_path),
        "go",
        timeout=20,
    )
    assert result.returncode == 0, result.stderr
    nested = [line for line in events_of(result.stdout) if line["type"] == "subagent"]
    kinds = [line["event"]["type"] for line in nested]
    assert "confirm_request" in kinds
    finished = next(line["event"] for line in nested if line["event"]["type"] == "tool_finished")
    assert set(finished) == {"type", "id", "name", "status", "content", "error"}
    assert finished["error"]["kind"] == "denied"


def test_a_reader_that_goes_away_stops_the_run_and_its_commands(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    command = f"echo $$ > {pidfile}; while :; do echo line; sleep 0.01; done"
    proc = start(tmp_path, [[call("run_command", command=command)], ["unused"]], *UNCONFINED)
    read_until(proc, "tool_output")
    assert proc.stdout is not None
    proc.stdout.close()  # the consumer is gone
    proc.wait(timeout=15)
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.returncode == 1 and "Traceback" not in err
    shell_pid = int(pidfile.read_text())
    deadline = time.monotonic() + 2
    while alive(shell_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(shell_pid)


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--trace", "/nonexistent/dir/trace.jsonl"], "cannot write the trace"),
        (["--stdin-replies"], "give the task"),
    ],
)
def test_more_usage_errors(tmp_path: Path, extra: list[str], fragment: str) -> None:
    path = script(tmp_path, [["fine"]])
    task = "-" if "--stdin-replies" in extra else "go"
    result = run_exec("--script", str(path), "-C", str(tmp_path), *extra, task)
    assert result.returncode == 2 and fragment in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "text",
    [
        '{"format": "codecoder-script/1", "replies": 5}',
        '[[{"type": "text"}]]',
        '{"format": "codecoder-script/1", "replies": [], "subagents": [{"replies": 3}]}',
    ],
)
def test_malformed_scripts_exit_2(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    result = run_exec("--script", str(path), "-C", str(tmp_path), "go")
    assert result.returncode == 2 and "bad script" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_config_error_leaves_no_session_behind(tmp_path: Path, isolated_home: Path) -> None:
    config = isolated_home / ".config" / "codecoder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[compaction]\nthreshold = 5\n")
    path = script(tmp_path, [["fine"]])
    result = run_exec("--script", str(path), "-C", str(tmp_path), "go")
    assert result.returncode == 2 and "threshold" in result.stderr
    listing = subprocess.run(
        [*CLI, "sessions", "--all"], capture_output=True, text=True, check=False
    )
    assert str(tmp_path) not in listing.stdout and "go" not in listing.stdout


def test_demo_with_a_broken_config_is_a_usage_error(isolated_home: Path) -> None:
    config = isolated_home / ".config" / "codecoder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[permissions\n")
    result = subprocess.run(
        [*CLI, "demo", "--speed", "50"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2 and "config.toml" in result.stderr
    assert "Traceback" not in result.stderr
