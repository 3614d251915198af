"""A session store that fills mid-turn ends the run with one line and exit code 1, and
what was committed before stays loadable (docs/headless.md; issue 32, item 4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codecoder.kernel.messages import Text
from codecoder.sessions import SessionStore
from tests.smalldisk import small_disk

pytestmark = pytest.mark.timeout(120)

FILL = "python3 -c \"import os; open(os.environ['XDG_DATA_HOME'] + '/filler', 'wb').write(bytes(8 << 20))\""  # noqa: E501


def test_a_store_that_fills_mid_turn_ends_the_run_in_one_line_and_keeps_what_was_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    calls = [
        [{"type": "tool_call", "name": "run_command", "args": {"command": "echo first"}}],
        [{"type": "tool_call", "name": "run_command", "args": {"command": FILL}}],
        ["never reached"],
    ]
    script.write_text(json.dumps(calls))
    with small_disk(tmp_path / "data", 4 << 20) as data:
        monkeypatch.setenv("XDG_DATA_HOME", str(data))
        result = subprocess.run(
            [sys.executable, "-m", "codecoder", "exec", "--json", "--approval", "full-auto",
             "--sandbox", "off", "--script", str(script), "-C", str(workspace), "go"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        failures = [line for line in result.stderr.splitlines() if "session store" in line]
        assert len(failures) == 1, result.stderr
        assert failures[0].startswith("codecoder: cannot write to the session store ")
        assert failures[0].endswith("disk is full")
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        assert [x["kind"] for x in lines if x["type"] == "error"] == ["store"]
        assert lines[-1]["type"] == "done" and lines[-1]["reason"] == "error"
        session = lines[0]["session_id"]
        (data / "filler").unlink()
        with SessionStore() as store:
            messages = store.load_messages(session)
    assert [m.role for m in messages[:3]] == ["user", "assistant", "tool"]
    assert messages[2].tool_results[0].content[0] == Text("first\n[exit code 0]")
