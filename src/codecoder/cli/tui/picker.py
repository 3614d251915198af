"""The session picker: `/resume` with no id and `codecoder resume --pick` (issue 29,
item 9). One implementation for both: a list drawn in the client's layout, above the
input (screen.py), with its own keys while it is open, so that the start-up path and
the slash command behave alike and neither needs a second prompt_toolkit Application.

Each row is what tells sessions apart at a glance: the title (the first words of the
first prompt), how long ago it was used, how many turns it had, and its model, newest
first. ↑↓ (and Page Up/Down, Home/End) choose, Enter takes one, Esc or Ctrl+C cancels;
what is typed meanwhile is not text for the prompt.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from codecoder.cli.sessions_cmd import cells, fit
from codecoder.cli.tui.text import MARK
from codecoder.sessions.export import age
from codecoder.sessions.records import SessionInfo
from codecoder.terminal_text import visible
from codecoder.wording import counted

LIMIT = 200
"""Sessions offered at most: older ones are still reachable by id (`codecoder sessions`)."""
SHOWN = 10
"""Rows shown at once; the list scrolls with the selection."""
HINT = "↑↓ choose · Enter resumes · Esc cancels"

Done = Callable[[str | None], None]
"""Called once with the chosen session's id, or None when the picker was cancelled."""


class SessionPicker:
    def __init__(self, sessions: Sequence[SessionInfo], done: Done) -> None:
        self.sessions = list(sessions)
        self.done = done
        self.index = 0
        self.top = 0
        """The first row shown: the window follows the selection."""

    def move(self, rows: int) -> None:
        """The selection `rows` down (up when negative), stopping at either end."""
        self.index = max(0, min(len(self.sessions) - 1, self.index + rows))
        if self.index < self.top:
            self.top = self.index
        elif self.index >= self.top + SHOWN:
            self.top = self.index - SHOWN + 1

    @property
    def chosen(self) -> SessionInfo:
        return self.sessions[self.index]

    def fragments(self, columns: int) -> list[tuple[str, str]]:
        """The picker as (style, text) fragments: a heading, then a row per session in
        the window, columns aligned by display width (a CJK title takes two columns a
        character, as in `codecoder sessions`)."""
        now = time.time()
        window = self.sessions[self.top : self.top + SHOWN]
        rows = [
            (
                visible(info.title or "(untitled)", one_line=True),
                age(now - info.updated_at),
                counted(info.turns, "turn"),
                visible(info.model, one_line=True),
            )
            for info in window
        ]
        age_w = max(len(row[1]) for row in rows)
        turns_w = max(len(row[2]) for row in rows)
        model_w = min(max(len(row[3]) for row in rows), 30)
        room = columns - 1 - 2 - (age_w + 2) - (turns_w + 2) - (model_w + 2)
        title_w = max(10, min(room, max(cells(row[0]) for row in rows)))
        where = ""
        if len(self.sessions) > SHOWN:
            where = f" ({self.index + 1} of {len(self.sessions)})"
        out: list[tuple[str, str]] = [
            ("class:question", "Resume which session?"),
            ("class:queued", f"{where}  {HINT}"),
        ]
        for offset, (title, ago, turns, model) in enumerate(rows):
            selected = self.top + offset == self.index
            line = (
                f"{fit(title, title_w)}  {ago:<{age_w}}  {turns:>{turns_w}}  {fit(model, model_w)}"
            )
            out += [
                ("", "\n"),
                ("class:picked" if selected else "", f"{MARK if selected else ' '} {line}"),
            ]
        return out
