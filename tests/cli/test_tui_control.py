"""Steering and undo in the interactive client (issue 18), in a real terminal
(tests/terminal.py): Enter queues, Ctrl+G and /steer steer, and the screen says which;
/undo and /redo put files back and show what they restored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codecoder.sessions import SessionStore
from tests.cli.test_tui import call, start, user_messages
from tests.terminal import Terminal

pytestmark = pytest.mark.timeout(120)


def roles(folder: Path) -> list[tuple[str, str]]:
    with SessionStore() as store:
        (info,) = store.list_sessions(folder)
        return [(m.role, m.text) for m in store.load_messages(info.id)]


def long_command(seconds: float) -> dict[str, Any]:
    return call("run_command", command=f"sleep {seconds}")


def test_ctrl_g_steers_the_running_turn_between_rounds_once(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    replies = [[long_command(1.5)], [call("run_command", command="true")], ["Done, with docs."]]
    term = start(terminals, tmp_path, replies, "--approval", "full-auto", "--sandbox", "off")
    term.line("fix it")
    term.wait_for("sleep 1.5")
    term.send("and update the docs")
    term.settle(0.1)
    term.send("\x07")  # Ctrl+G
    term.wait_for("⇢ steer sent")
    term.wait_for("↪ joined the turn: and update the docs")
    term.wait_for("Done, with docs.")
    term.wait_idle()
    history = roles(tmp_path)
    assert history.count(("user", "and update the docs")) == 1
    steered = history.index(("user", "and update the docs"))
    assert [r for r, _ in history[steered - 2 : steered + 2]] == [
        "assistant",
        "tool",
        "user",
        "assistant",
    ]  # after the first command's result, before the next request's reply
    assert "⏎ queued" not in term.text()


def test_enter_queues_and_slash_steer_steers_and_the_screen_says_which(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    replies = [[long_command(1.5)], ["First turn done."], ["Queued one answered."]]
    term = start(terminals, tmp_path, replies, "--approval", "full-auto", "--sandbox", "off")
    term.line("start")
    term.wait_for("sleep 1.5")
    term.line("then this")  # Enter: queued for after the turn
    term.wait_for("⏎ queued: then this")
    term.line("/steer use python 3.11")  # steers this turn
    term.wait_for("↪ joined the turn: use python 3.11")
    term.wait_for("Queued one answered.")
    term.wait_idle()
    users = user_messages(tmp_path)
    assert users == ["start", "use python 3.11", "then this"]


def test_a_steer_too_late_for_its_turn_is_the_next_turn(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    replies = [["The answer.", {"type": "sleep", "seconds": 1.5}], ["In French: la réponse."]]
    term = start(terminals, tmp_path, replies)
    term.line("answer")
    term.wait_for("The answer.")
    term.line("/steer in French")
    term.wait_for("↪ for the next turn: in French")
    term.wait_for("la réponse.")
    term.wait_idle()
    assert user_messages(tmp_path) == ["answer", "in French"]


def test_steering_with_no_turn_sends_a_message(terminals: list[Terminal], tmp_path: Path) -> None:
    term = start(terminals, tmp_path, [["Hello."]])
    term.send("hi there")
    term.send("\x07")
    term.wait_for("no turn is running: sent as a message instead")
    term.wait_for("Hello.")
    assert user_messages(tmp_path) == ["hi there"]


def test_undo_and_redo_put_files_back_and_show_the_diff(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("alpha\n")
    replies = [
        [call("edit_file", path="notes.txt", old_text="alpha", new_text="beta"),
         call("write_file", path="made.txt", content="new file\n")],
        ["Changed."],
    ]  # fmt: skip
    term = start(terminals, tmp_path, replies, "--approval", "full-auto", "--sandbox", "off")
    term.line("change them")
    term.wait_for("Changed.")
    term.wait_idle()
    term.line("/undo")
    term.wait_for("undid turn 1: made.txt (deleted), notes.txt (restored)")
    assert "-beta" in term.text() and "+alpha" in term.text()
    assert (tmp_path / "notes.txt").read_text() == "alpha\n" and not (
        tmp_path / "made.txt"
    ).exists()
    term.line("/undo")
    term.wait_for("nothing to undo")
    term.line("/redo")
    term.wait_for("redid turn 1")
    assert (tmp_path / "notes.txt").read_text() == "beta\n"
    assert (tmp_path / "made.txt").read_text() == "new file\n"
    (tmp_path / "made.txt").write_text("edited by me\n")
    term.line("/undo")
    term.wait_for("made.txt: changed since the turn")
    assert (tmp_path / "made.txt").read_text() == "edited by me\n"
