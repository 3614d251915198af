"""A call's elapsed time is the call's own: the time a person took to approve it is not
part of it (an edit waiting three seconds for its `y` did not take three seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_tui import ARM, call, start
from tests.terminal import Terminal

pytestmark = pytest.mark.timeout(90)


def test_an_edits_elapsed_time_starts_after_its_approval(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    edit = call("edit_file", path="notes.txt", old_text="beta\n", new_text="BETA\n")
    term = start(terminals, tmp_path, [[edit], ["Edited."]])
    term.line("edit the notes")
    term.wait_for("Allow it?")
    term.settle(ARM + 2.0)  # the person reads the diff before answering
    term.send("y")
    term.wait_for("Edited.")
    done = next(line for line in term.text().splitlines() if line.startswith("✓ Edit"))
    assert done.rstrip() == "✓ Edit notes.txt", done  # no `· 2.5s`: the edit took no time
    assert (tmp_path / "notes.txt").read_text() == "alpha\nBETA\n"
