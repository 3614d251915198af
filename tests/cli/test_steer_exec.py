"""`exec --stdin-replies` takes `{"type": "steer", "text": …}` lines (issue 18, item 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-m", "codecoder"]


def steered_run(tmp_path: Path, replies: list[Any], after: str) -> list[dict[str, Any]]:
    """Run the script; when a line of type `after` comes, steer."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(replies))
    proc = subprocess.Popen(
        [*CLI, "exec", "--json", "--stdin-replies", "--approval", "full-auto", "--sandbox",
         "off", "--script", str(script), "-C", str(tmp_path), "go"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    lines: list[dict[str, Any]] = []
    for raw in proc.stdout:
        lines.append(json.loads(raw))
        if lines[-1]["type"] == after and not any(x["type"] == "steered" for x in lines):
            proc.stdin.write(json.dumps({"type": "steer", "text": "and check the docs"}) + "\n")
            proc.stdin.flush()
    proc.stdin.close()
    assert proc.wait(30) == 0, proc.stderr.read()
    proc.stderr.close()
    return lines


def test_a_steer_joins_the_running_turn(tmp_path: Path) -> None:
    sleep = {"type": "tool_call", "name": "run_command", "args": {"command": "sleep 0.5"}}
    lines = steered_run(tmp_path, [[sleep], ["done"]], after="tool_started")
    kinds = [line["type"] for line in lines]
    steered = kinds.index("steered")
    assert kinds.index("tool_finished") < steered < len(kinds) - 1
    assert lines[steered] == {
        "type": "steered", "turn": 1, "text": "and check the docs", "next_turn": False,
        "by": "user",
    }  # fmt: skip
    assert kinds.count("done") == 1


def test_a_steer_too_late_for_its_turn_runs_as_the_next(tmp_path: Path) -> None:
    replies = [["the answer", {"type": "sleep", "seconds": 0.5}], ["the second answer"]]
    lines = steered_run(tmp_path, replies, after="new_token")
    steered = next(line for line in lines if line["type"] == "steered")
    assert steered["next_turn"] is True and steered["turn"] == 1
    dones = [line for line in lines if line["type"] == "done"]
    assert [d["turn"] for d in dones] == [1, 2]
    second = [line["text"] for line in lines if line["type"] == "new_token" and line["turn"] == 2]
    assert "".join(second) == "the second answer"
