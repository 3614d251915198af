"""An earlier conversation, shown compactly when a session is resumed: the user's
messages, the answers (Markdown, long ones cut), one line per tool call with how it
ended; the last messages only (`codecoder sessions show ID` prints it all)."""

from __future__ import annotations

from collections.abc import Sequence

from codecoder.cli.tui import describe
from codecoder.cli.tui.text import MARK, cut, safe_line
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
            lines = item.text.strip().splitlines() or [""]
            view.line("")
            for index, line in enumerate(lines[:USER_LINES]):
                view.line((f"{MARK} " if index == 0 else "  ") + cut(safe_line(line), room), "bold")
            if len(lines) > USER_LINES:
                view.line(f"  … {counted(len(lines) - USER_LINES, 'more line')}", "dim")
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
    lines = text.strip().split("\n")
    view.line("")
    if len(lines) > ANSWER_LINES:
        view.markdown_text("\n".join(lines[:ANSWER_LINES]))
        view.line(f"  … {counted(len(lines) - ANSWER_LINES, 'more line')}", "dim")
    else:
        view.markdown_text(text.strip())
