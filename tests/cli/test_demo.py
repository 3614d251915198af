"""`codecoder demo`, the README's first command, as a newcomer meets it: in a real
terminal it runs in the terminal client (tests/terminal.py) and leaves by itself; piped,
it prints a readable log. Nothing of it is left running or on disk."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from codecoder.cli.tui.text import MARK
from tests.terminal import Terminal

pytestmark = pytest.mark.timeout(90)

CLI = [sys.executable, "-m", "codecoder"]
ANSWER = (
    "What was wrong: median() in textstats/stats.py always returned ordered[len // 2], "
    "which is the upper of the two middle values when the list has an even length."
)


def temp_folder(tmp_path: Path) -> Path:
    """The demo's own temp folder, to see that its project copy is gone at the end."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


def test_the_demo_runs_in_the_terminal_client_and_leaves_by_itself(tmp_path: Path) -> None:
    temp = temp_folder(tmp_path)
    term = Terminal(["demo", "--speed", "50"], cwd=tmp_path, env={"TMPDIR": str(temp)})
    try:
        assert term.exit_code(timeout=45) == 0
        shown = term.text()
    finally:
        term.close()
    assert "model demo (recorded) · approval full-auto" in shown  # the client's banner
    assert f"{MARK} The tests in this project fail. Find out why and fix it." in shown
    assert "✗ Run $ python3 -m unittest -v · exit code 1" in shown  # the client's tool lines
    assert "✓ Edit textstats/stats.py" in shown and "+        return (ordered" in shown
    assert "✓ Run $ python3 -m unittest -v · exit code 0" in shown
    assert "old_text=" not in shown and "⏎" not in shown
    assert shown.count("FAILED (failures=2)") == 1  # each run's output once
    assert "**" not in shown  # Markdown rendered, not its markup
    assert ANSWER in " ".join(shown.split())  # wrapped between words, never inside one
    assert "That was the demo" in shown and "codecoder -m PROVIDER/MODEL" in shown
    assert not any(temp.iterdir())  # the project copy is removed


def test_ctrl_c_stops_the_demo_in_the_client(tmp_path: Path) -> None:
    term = Terminal(["demo", "--speed", "0.1"], cwd=tmp_path)
    try:
        term.wait_for("I'll start by looking", timeout=30)
        term.send("\x03")
        assert term.exit_code() == 130
        shown = term.text()
    finally:
        term.close()
    assert "⊘ cancelled" in shown and "That was the demo" in shown
    assert "Run $ python3" not in shown


def test_the_piped_demo_is_a_readable_log_that_ends_by_itself(tmp_path: Path) -> None:
    temp = temp_folder(tmp_path)
    result = subprocess.run(
        [*CLI, "demo", "--speed", "50"],
        env={**os.environ, "TMPDIR": str(temp)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\x1b" not in out  # no colours into a file
    assert out.count("run_command") == 2 and "FAILED (failures=2)" in out
    assert "Ran 6 tests" in out and "\n  │ OK" in out
    lines = out.rstrip().splitlines()
    assert lines[-3].startswith("tokens:") and not lines[-2]
    assert re.match(r"That was the demo: .*`codecoder -m PROVIDER/MODEL`\.$", lines[-1])
    assert not any(temp.iterdir())
