"""The line-mode interactive client: questions on the terminal, resume, /compact, /exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from codecoder.sessions import SessionStore

CLI = [sys.executable, "-m", "codecoder"]


def interactive(tmp_path: Path, replies: list[Any], lines: list[str], *args: str) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(replies))
    result = subprocess.run(
        [*CLI, *args, "--script", str(path), "-C", str(tmp_path)],
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_session_asks_on_the_terminal_and_resume_goes_on(tmp_path: Path) -> None:
    made = tmp_path / "made.txt"
    replies = [
        [{"type": "tool_call", "name": "run_command", "args": {"command": f"touch {made}"}}],
        ["Made it."],
        ["Second answer."],
    ]
    out = interactive(tmp_path, replies, ["make a file", "y", "and now?", "/exit"])
    assert "allow?" in out and "Made it." in out and "Second answer." in out
    assert made.exists()
    out = interactive(tmp_path, [["Resumed answer."]], ["again"], "resume")
    assert "Resumed answer." in out
    store = SessionStore()
    try:
        (session,) = store.list_sessions(tmp_path)
        texts = [m.text for m in store.load_messages(session.id) if m.role == "user"]
    finally:
        store.close()
    assert texts == ["make a file", "and now?", "again"]
    assert session.turns == 3


def test_end_of_input_denies_and_leaves(tmp_path: Path) -> None:
    made = tmp_path / "made.txt"
    replies = [
        [{"type": "tool_call", "name": "run_command", "args": {"command": f"touch {made}"}}],
        ["Not made."],
    ]
    out = interactive(tmp_path, replies, ["make a file"])
    assert "denied" in out and "Not made." in out
    assert not made.exists()


def test_compact_without_history_says_so(tmp_path: Path) -> None:
    out = interactive(tmp_path, [], ["/compact", "/exit"])
    assert "nothing to compact" in out


def test_ctrl_c_while_streaming_cancels_the_turn_and_the_session_goes_on(tmp_path: Path) -> None:
    import signal
    import threading
    import time

    path = tmp_path / "script.json"
    slow = {"token_delay": 0.02, "parts": ["word " * 500]}
    path.write_text(json.dumps([slow, ["After the cancel."]]))
    proc = subprocess.Popen(
        [*CLI, "--script", str(path), "-C", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    seen = bytearray()
    stdout = proc.stdout

    def read() -> None:
        while chunk := os.read(stdout.fileno(), 4096):
            seen.extend(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    proc.stdin.write(b"talk a lot\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 10
    while seen.count(b"word") < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    for _ in range(3):  # land in the middle of rendering, more than once
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
    proc.stdin.write(b"again\n/exit\n")
    proc.stdin.flush()
    proc.stdin.close()
    proc.wait(timeout=20)
    reader.join()
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    out = seen.decode()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "[cancelled]" in out and "After the cancel." in out
    assert out.count("word") < 500
