"""Typed text is not an answer to a question (issue 29, item 8): "yes please" must not
approve a command with its `y`. A menu takes one key on its own; the client in a real
terminal (tests/terminal.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.cli.test_tui import ARM, call, start
from tests.terminal import Terminal

pytestmark = pytest.mark.timeout(90)


def type_slowly(term: Terminal, text: str, gap: float) -> None:
    """Key by key, `gap` seconds apart, as a person types."""
    for key in text:
        term.send(key)
        term.settle(gap)


def test_typed_text_at_a_question_does_not_answer_it(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    replies = [[call("run_command", command="touch made")], ["Done."]]
    term = start(terminals, tmp_path, replies)
    term.line("make it")
    term.wait_for("Allow it?")
    assert "one key on its own answers" in term.display()  # the menu says how it is answered
    term.settle(ARM)
    term.send("yes please")  # one burst: the terminal delivers it in one read
    term.wait_for("typed text is not an answer")
    term.settle(ARM)
    type_slowly(term, "yes please", 0.12)  # typed, key by key
    term.settle(ARM + 0.3)
    for undo in ("\x7f", "\x1b[D", "\t", "\r"):  # `y` taken back: Backspace, Left, Tab, Enter
        term.send("y")  # these keys have bindings of their own: the menu never sees them
        term.settle(0.05)
        term.send(undo)
        term.settle(ARM + 0.3)
    assert "→ allowed once" not in term.text() and "Done." not in term.text()
    assert not (tmp_path / "made").exists()
    started = time.monotonic()
    term.send("y")  # one key on its own answers
    term.wait_for("Done.")
    assert time.monotonic() - started >= 0.4  # taken once nothing followed it
    assert "→ allowed once" in term.text() and (tmp_path / "made").exists()
