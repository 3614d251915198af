"""The completion pop-up in a real terminal (tests/terminal.py) of a few sizes (issue
29, item 16): it opens in rows kept for it under the input, so it shows its choices
and never covers the status line or the footer."""

from __future__ import annotations

from pathlib import Path

import pytest

from codecoder.cli.tui.text import MARK
from tests.cli.test_tui import start
from tests.terminal import Terminal

pytestmark = pytest.mark.timeout(90)

FOOTER = "scripted · approval ask · context"
COMMANDS = ["/approval", "/clear", "/compact", "/cost", "/exit", "/help", "/model", "/new"]
"""The first eight slash commands: as many as the pop-up shows at once."""


def screen_lines(term: Terminal) -> list[str]:
    """The screen's lines down to its last written one."""
    lines = term.display().splitlines()
    while lines and not lines[-1]:
        lines.pop()
    return lines


def menu_rows(term: Terminal, words: list[str]) -> list[str]:
    return [line for line in term.display().splitlines() if line.strip().startswith(tuple(words))]


@pytest.mark.parametrize("rows", [24, 30])
def test_the_pop_up_opens_above_the_footer_at_the_bottom_of_the_screen(
    terminals: list[Terminal], tmp_path: Path, rows: int
) -> None:
    for number in range(12):
        (tmp_path / f"file{number:02}.txt").write_text("x\n")
    long = "\n\n".join(f"Paragraph {number}." for number in range(rows))
    term = start(terminals, tmp_path, [[long]], rows=rows)
    term.line("fill the screen")  # the input ends up on the terminal's last rows
    term.wait_for(f"Paragraph {rows - 1}.")
    term.wait_idle()
    term.settle(0.3)
    assert screen_lines(term)[-1].startswith(FOOTER)
    assert len(screen_lines(term)) == rows

    term.send("/")
    term.wait(lambda: "/new" in term.display(), what="the pop-up's eighth command")
    term.settle(0.3)
    lines = screen_lines(term)
    assert lines[-1].startswith(FOOTER)  # the footer is whole, on the last row
    shown = menu_rows(term, COMMANDS)
    assert [row.split()[0] for row in shown] == COMMANDS  # eight rows, in order
    assert lines[-10:-1] == [lines[-10], *shown]  # under the input, over nothing else
    assert lines[-10].startswith(f"{MARK} /")

    term.send("\x15")  # Ctrl+U: the menu closes, and the footer follows the input
    term.wait(lambda: "/new" not in term.display(), what="the pop-up closed")
    term.settle(0.3)
    lines = screen_lines(term)
    assert lines[-2].rstrip() == MARK and lines[-1].startswith(FOOTER)

    term.send("look at @file")  # the file completion, the same way
    term.wait(lambda: "file07.txt" in term.display(), what="the files")
    term.settle(0.3)
    lines = screen_lines(term)
    assert lines[-1].startswith(FOOTER)
    shown = menu_rows(term, ["file"])
    assert [row.split()[0] for row in shown] == [f"file{n:02}.txt" for n in range(8)]
    assert lines[-10].startswith(f"{MARK} look at @file")


def test_during_a_turn_in_a_short_terminal_the_status_line_stays(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    block = "```\n" + "\n".join(f"row {number}" for number in range(30))
    term = start(terminals, tmp_path, [[block, {"type": "sleep", "seconds": 30}]], rows=16)
    term.line("go")
    term.wait_for("row 29")  # the open block: the live part, above the status line
    term.send("/")
    term.wait(lambda: "/new" in term.display(), what="the pop-up")
    term.settle(0.3)
    lines = screen_lines(term)
    assert lines[-1].startswith(FOOTER)
    assert [row.split()[0] for row in menu_rows(term, COMMANDS)] == COMMANDS
    status = next(n for n, line in enumerate(lines) if "ctrl+c stops" in line)
    assert lines[status + 1].startswith(f"{MARK} /")  # the status line, whole, over the input
    assert lines[status - 1].strip() == "row 29"  # the live part's newest line still shows
