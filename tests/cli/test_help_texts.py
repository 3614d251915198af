"""`--help` says what each option does and what it defaults to, as the code does it:
`--approval` lists its modes and the default of the command it is on, `--max-rounds`
what a round is, `undo --session` which session it picks without one."""

from __future__ import annotations

import subprocess
import sys

import pytest


def help_of(*command: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "codecoder", *command, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())  # argparse's wrapping aside


@pytest.mark.parametrize(
    ("command", "default"),
    [
        ((), "default: ask on a terminal, else never-ask"),
        (("resume",), "default: ask on a terminal, else never-ask"),
        (("exec",), "default: never-ask"),
    ],
)
def test_approval_and_max_rounds_say_what_they_do(command: tuple[str, ...], default: str) -> None:
    shown = help_of(*command)
    for mode in (
        "ask: what no rule allows is asked",
        "auto-edit: edits inside the workspace are allowed, commands ask",
        "full-auto: everything inside the workspace is allowed",
        "read-only: only tools that read",
        "never-ask: what would ask is denied",
    ):
        assert mode in shown, (mode, shown)
    assert default in shown, shown
    assert "--max-rounds N stop a turn after N requests to the model (default 100)" in shown


def test_undo_session_says_which_session_it_takes() -> None:
    shown = help_of("undo")
    assert (
        "--session ID the session (its id, or the start of it); default: this folder's "
        "latest session that has something to undo (or redo)"
    ) in shown, shown
