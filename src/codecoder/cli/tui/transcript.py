"""An earlier conversation, shown compactly when a session is resumed: the user's
messages as typed (an attached file is its `@path` and a line saying so, as when it was
sent), the answers (Markdown, folded after ANSWER_LINES rows), one line per tool call
with how it ended; the last messages only (`codecoder sessions show ID` prints it all)."""

from __future__ import annotations

from collections.abc import Sequence

from codecoder.cli.tui import describe
from codecoder.cli.tui.attachments import typed
from codecoder.cli.tui.text import MARK, cut, safe_line, width_of
from codecoder.cli.tui.view import View
from codecoder.kernel.messages import Message, Text, ToolCall, ToolResult
from codecoder.wording import counted

SHOWN_MESSAGES = 40
ANSWER_LINES = 12
USER_LINES = 4
_MARKS = {"success": ("✓", "green"), "error": ("✗", "red"), "cancelled": ("⊘", "yellow")}


def show(view: View, messages: Sequence[Message], session_id: str) -> None:
    visible = [m for m in messages if m.role in ("user", "assistant", "tool")]
    if not visible:
        return
    hidden = len(visible) - SHOWN_MESSAGES
    view.line("── earlier in this session ──", "dim")
    if hidden > 0:
        view.line(
            f"… {counted(hidden, 'earlier message')} (codecoder sessions show {session_id[:8]})",
            "dim",
        )
        visible = visible[-SHOWN_MESSAGES:]
    results = {
        item.tool_call_id: item.status
        for message in messages
        for item in message.items
        if isinstance(item, ToolResult)
    }
    for message in visible:
        _message(view, message, results)
    view.line("── now ──", "dim")


def _message(view: View, message: Message, results: dict[str, str]) -> None:
    room = max(view.width - 4, 10)
    for item in message.items:
        if isinstance(item, Text) and message.role == "user":
            text, attached = typed(item.text)
            lines = text.strip().splitlines() or [""]
            view.line("")
            for index, line in enumerate(lines[:USER_LINES]):
                view.line((f"{MARK} " if index == 0 else "  ") + cut(safe_line(line), room), "bold")
            if len(lines) > USER_LINES:
                view.line(f"  … {counted(len(lines) - USER_LINES, 'more line')}", "dim")
            for file in attached:
                view.line(
                    f"  attached {cut(safe_line(file.path), room - 20)} ({file.lines} lines)", "dim"
                )
        elif isinstance(item, Text) and message.role == "assistant" and item.text.strip():
            _answer(view, item.text)
        elif isinstance(item, ToolCall):
            status = results.get(item.id, "cancelled")
            mark, colour = _MARKS.get(status, ("?", "yellow"))
            shown = describe.arguments(item.name, item.args)
            label = describe.label(item.name)
            view.line(f"{mark} {label} {cut(shown, room - len(label))}", colour)
    if message.status == "interrupted":
        view.line("  (interrupted)", "dim")


def _answer(view: View, text: str) -> None:
    source, hidden = fold(text.strip(), max(view.width - 2, 10))
    view.line("")
    view.markdown_text(source)
    if hidden:
        view.line(f"  … {counted(hidden, 'more word')}", "dim")


def fold(text: str, room: int) -> tuple[str, int]:
    """The start of an answer that fills ANSWER_LINES rows of `room` cells, and how many
    words are left out. Rows, not lines: an answer cut short by a cancel is often one
    long paragraph, and it folds as a long answer of many short lines does."""
    rows = 0
    lines = text.split("\n")
    for index, line in enumerate(lines):
        need = max(1, -(-width_of(line[: ANSWER_LINES * room + 1]) // room))
        if rows + need <= ANSWER_LINES:
            rows += need
            continue
        head = _words_within(line, (ANSWER_LINES - rows) * room)
        kept = [*lines[:index], head] if head else lines[:index]
        rest = [line[len(head) :], *lines[index + 1 :]]
        return "\n".join(kept).rstrip(), len(" ".join(rest).split())
    return text, 0


def _words_within(line: str, cells: int) -> str:
    """The longest start of `line` that fits `cells` and ends at a space (a word that
    does not fit is left out whole, unless the line has no space to end at)."""
    used = 0
    end = 0
    for index, char in enumerate(line):
        used += width_of(char)
        if used > cells:
            return line[: end or index]
        if char == " ":
            end = index
    return line
