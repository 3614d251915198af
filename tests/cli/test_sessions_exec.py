"""Sessions through `codecoder exec`: continue, resume, and SIGKILL at any moment."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codecoder.sessions import SessionLog, SessionStore
from tests.invariants import check_history

CLI = [sys.executable, "-m", "codecoder"]


def script(path: Path, replies: list[Any]) -> Path:
    path.write_text(json.dumps({"format": "codecoder-script/1", "replies": replies}))
    return path


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args}


def exec_json(workspace: Path, script_path: Path, *extra: str) -> tuple[int, list[dict[str, Any]]]:
    result = subprocess.run(
        [
            *CLI,
            "exec",
            "--json",
            "--approval",
            "full-auto",
            "--script",
            str(script_path),
            "-C",
            str(workspace),
            *extra,
            "next step",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return result.returncode, lines


def test_continue_and_resume_go_on_with_the_same_session(tmp_path: Path) -> None:
    first = script(tmp_path / "one.json", [[call("list_dir")], ["first answer"]])
    code, lines = exec_json(tmp_path, first)
    assert code == 0
    session = lines[0]["session_id"]
    second = script(tmp_path / "two.json", [["second answer"]])
    code, lines = exec_json(tmp_path, second, "--continue")
    assert code == 0 and lines[0]["session_id"] == session
    assert {line["turn"] for line in lines[1:]} == {2}
    third = script(tmp_path / "three.json", [["third answer"]])
    code, lines = exec_json(tmp_path, third, "--resume", session[:8])
    assert code == 0 and lines[0]["session_id"] == session
    assert {line["turn"] for line in lines[1:]} == {3}
    store = SessionStore()
    try:
        messages = store.load_messages(session)
        info = store.get(session)
    finally:
        store.close()
    texts = [m.text for m in messages if m.role == "assistant" and m.text]
    assert texts == ["first answer", "second answer", "third answer"]
    assert info.turns == 3 and info.title == "next step"
    check_history(messages)


def test_continue_without_a_session_is_a_usage_error(tmp_path: Path) -> None:
    path = script(tmp_path / "s.json", [["x"]])
    code, _ = exec_json(tmp_path, path, "--continue")
    assert code == 2
    code, _ = exec_json(tmp_path, path, "--resume", "deadbeefdeadbeef")
    assert code == 2


LONG_SESSION = [
    {"token_delay": 0.002, "parts": ["Looking around the project first. " * 5, call("list_dir")]},
    [call("run_command", command="for i in 1 2 3; do echo $i; sleep 0.05; done")],
    {
        "token_delay": 0.002,
        "parts": [
            "Now writing the file. " * 4,
            call("write_file", path="out.txt", content="x\n" * 50),
        ],
    },
    [call("read_file", path="out.txt"), call("run_command", command="sleep 0.1; echo done")],
    {"token_delay": 0.003, "parts": ["All finished, here is a long explanation. " * 20]},
]


def _kill_and_resume(tmp_path: Path, delay: float) -> None:
    workspace = tmp_path / f"ws-{delay:.3f}"
    workspace.mkdir()
    path = script(tmp_path / "long.json", LONG_SESSION)
    proc = subprocess.Popen(
        [
            *CLI,
            "exec",
            "--json",
            "--approval",
            "full-auto",
            "--script",
            str(path),
            "-C",
            str(workspace),
            "do the work",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    session = json.loads(proc.stdout.readline())["session_id"]
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    store = SessionStore()
    try:
        stored = store.load_messages(session)
        ids = [m.id for m in stored]
        assert ids == list(range(1, len(ids) + 1)), "a completed message went missing"
        assert all(m.status == "complete" for m in stored if m.role != "assistant")
        view = SessionLog(store, session).resume()
        check_history(view)
    finally:
        store.close()
    resumed = script(tmp_path / "resumed.json", [["picked up again"]])
    code, lines = exec_json(workspace, resumed, "--resume", session)
    assert code == 0
    assert lines[-1]["type"] == "done" and lines[-1]["reason"] == "completed"
    store = SessionStore()
    try:
        final = store.load_messages(session)
    finally:
        store.close()
    check_history(final)
    assert final[-1].text == "picked up again"


@pytest.mark.parametrize("delay", [0.15, 0.35, 0.6, 0.9, 1.3])
def test_sigkill_at_a_point_then_resume(tmp_path: Path, delay: float) -> None:
    _kill_and_resume(tmp_path, delay)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sigkill_at_fifty_random_points_then_resume(tmp_path: Path) -> None:
    rng = random.Random(1234)
    for _ in range(50):
        _kill_and_resume(tmp_path, rng.uniform(0.05, 1.6))


def test_resume_after_repair_dropped_the_last_stored_message(tmp_path: Path) -> None:
    """A stored tail that repair leaves out (an orphan result) must not block new ids."""
    from codecoder.kernel.messages import Message, user_message
    from codecoder.sessions.repair import cancelled_result

    store = SessionStore()
    try:
        session = store.create(tmp_path, "scripted")
        store.append(session, user_message("first", id=1))
        store.append(session, Message(id=2, role="assistant", items=()))
        store.append(session, Message(id=3, role="tool", items=(cancelled_result("ghost"),)))
    finally:
        store.close()
    path = script(tmp_path / "s.json", [["fine"]])
    code, lines = exec_json(tmp_path, path, "--resume", session)
    assert code == 0 and lines[-1]["reason"] == "completed"
    store = SessionStore()
    try:
        ids = [m.id for m in store.load_messages(session)]
    finally:
        store.close()
    assert ids == [1, 2, 3, 4, 5]
