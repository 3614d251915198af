"""The terminal client's view of a running command holds a bounded tail of its output,
whatever the command prints: no newline at all (`yes | tr -d '\\n'`), or one huge line."""

from __future__ import annotations

from pathlib import Path

from codecoder.cli.tui.view import TAIL_LINE, TAIL_LINES, View
from codecoder.kernel.events import ToolOutput, ToolStarted


def test_output_without_newlines_keeps_a_bounded_line(tmp_path: Path) -> None:
    view = View(tmp_path, color=False, width=80)
    view.show(ToolStarted(id="c", name="run_command", args={"command": "yes | tr -d '\\n'"}))
    chunk = "y" * 65536
    for _ in range(200):  # 13 MB on one line that never ends
        view.show(ToolOutput("c", chunk))
    tool = view.tools["c"]
    assert len(tool.partial) == TAIL_LINE  # before: all 13 MB
    view.show(ToolOutput("c", "z" * 100_000 + "\nend"))  # a huge line ends
    assert all(len(line) <= TAIL_LINE for line in tool.tail) and len(tool.tail) <= TAIL_LINES
    assert tool.partial == "end" and tool.lines == 1
