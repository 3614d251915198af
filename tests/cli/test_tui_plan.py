"""`/plan PLAN.toml` in the interactive client, in a real terminal (tests/terminal.py)
against the scripted provider: the live checklist, a failed gate's output reaching the
model, Ctrl+C during a gate, what is typed meanwhile waiting for the plan's end."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_tui import start, user_messages
from tests.procfs import alive
from tests.terminal import Terminal

pytestmark = pytest.mark.timeout(90)

FULL_AUTO = ("--approval", "full-auto")


def write(path: str, content: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": "write_file", "args": {"path": path, "content": content}}


PLAN = """\
title = "Fix a.txt"
max_attempts = 2

[[milestones]]
name = "fix"
task = "Make a.txt say fixed."
gates = ["test -f a.txt", "grep -q fixed a.txt || { echo MARK-tui says $(cat a.txt); exit 2; }"]

[[milestones]]
name = "notes"
task = "Write NOTES.md."
gates = ["test -s NOTES.md"]
"""


def test_a_plan_runs_with_a_live_checklist_and_the_session_goes_on(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    (tmp_path / "PLAN.toml").write_text(PLAN)
    replies = [
        [write("a.txt", "broken")],
        ["Wrote a.txt."],
        [write("a.txt", "fixed")],
        ["Fixed it."],
        [write("NOTES.md", "notes")],
        ["Notes written."],
        ["After the plan."],
    ]
    term = start(terminals, tmp_path, replies, *FULL_AUTO)
    term.line("/plan PLAN.toml")
    term.wait_for("▶ plan Fix a.txt")
    term.line("typed during the plan")  # waits for the plan's end
    term.wait_for("plan passed: 2 of 2 milestones passed", timeout=30)
    term.wait_for("After the plan.")
    shown = term.text()
    for expected in (
        "○ fix — test -f a.txt, grep -q fixed a.txt",
        "○ notes — test -s NOTES.md",
        "● milestone 1/2 fix (attempt 1 of 2)",
        "✓ gate 1/2 test -f a.txt",
        "✗ gate 2/2 grep -q fixed a.txt",
        "│ MARK-tui says broken",
        "● milestone 1/2 fix (attempt 2 of 2)",
        "✓ fix passed (2 attempts)",
        "✓ notes passed (1 attempt)",
        "  ✓ fix — ",
        "  ✓ notes — ",
    ):
        assert expected in shown, expected
    assert shown.index("plan passed") < shown.index("typed during the plan")
    messages = user_messages(tmp_path)
    assert len(messages) == 4
    assert messages[0].startswith("Plan: Fix a.txt\nMilestone 1 of 2: fix")
    assert "MARK-tui says broken" in messages[1]  # the gate's output reached the model
    assert messages[3] == "typed during the plan"
    assert (tmp_path / "a.txt").read_text() == "fixed"


def test_ctrl_c_during_a_gate_stops_the_plan_and_kills_the_gate(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    pidfile = tmp_path / "gate.pid"
    (tmp_path / "PLAN.toml").write_text(
        '[[milestones]]\nname = "slow"\ntask = "t"\n'
        f'gates = ["echo $$ > {pidfile}; exec sleep 60"]\n'
        '[[milestones]]\nname = "never"\ntask = "t"\n'
    )
    term = start(terminals, tmp_path, [["Done."], ["After the stop."]])
    term.line("/plan PLAN.toml")
    term.wait_for("Gate 1/1: echo")
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, "the gate never started"
        time.sleep(0.02)
    pid = int(pidfile.read_text())
    term.send("\x03")
    term.wait_for("plan cancelled: 0 of 2 milestones passed")
    term.wait_idle()
    assert not alive(pid)
    assert "milestone 2/2" not in term.text()
    term.line("go on")
    term.wait_for("After the stop.")


def test_a_bad_plan_file_is_said_and_nothing_runs(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    (tmp_path / "PLAN.toml").write_text('[[milestones]]\nname = "a"\n')
    term = start(terminals, tmp_path, [["Still here."]])
    term.line("/plan PLAN.toml")
    term.wait_for('PLAN.toml:1: milestone 1 ("a") has no task')
    term.line("/plan")
    term.wait_for("usage: /plan PLAN.toml")
    term.line("hello")
    term.wait_for("Still here.")
    assert user_messages(tmp_path) == ["hello"]
