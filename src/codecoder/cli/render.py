"""Rendering events as lines of a log: `codecoder demo` when its output is not a
terminal (piped, CI). In a terminal the demo runs in the terminal client (cli/tui/).

Plain ANSI escapes rather than a rendering library: the demo must start fast and the
output must stay readable when piped (colours only on a terminal).
"""

from __future__ import annotations

import re
import sys
from typing import IO, Any

from codecoder.kernel.events import (
    AgentEvent,
    ConfirmRequest,
    Done,
    Error,
    NewReasoning,
    NewToken,
    StatusUpdate,
    Steered,
    Subagent,
    TodoUpdated,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    Usage,
)
from codecoder.terminal_text import visible
from codecoder.wording import counted

_STYLES = {
    "dim": "\x1b[2m",
    "bold": "\x1b[1m",
    "cyan": "\x1b[36m",
    "green": "\x1b[32m",
    "red": "\x1b[31m",
    "yellow": "\x1b[33m",
    "italic": "\x1b[3m",
}
_RESET = "\x1b[0m"
_LINE_END = re.compile(r"\r\n|\n|\r")
_LONG_LINE = 4096
_MARKS = {"success": ("✓", "green"), "error": ("✗", "red"), "cancelled": ("⊘", "yellow")}


class Renderer:
    def __init__(self, out: IO[str] | None = None, *, color: bool | None = None) -> None:
        self.out = out or sys.stdout
        self.color = self.out.isatty() if color is None else color
        self.mode = "idle"  # what the last output was: idle, text, reasoning, output
        self.input_tokens = 0
        self.output_tokens = 0
        self.streamed: set[str] = set()
        self.partial: dict[str, str] = {}

    def style(self, text: str, *names: str) -> str:
        """Untrusted text made safe (control characters shown, not obeyed), then styled."""
        text = visible(text)
        if not self.color or not names:
            return text
        return "".join(_STYLES[n] for n in names) + text + _RESET

    def line(self, text: str, *styles: str) -> None:
        self._enter("idle")
        self._write(self.style(text, *styles) + "\n")

    def user(self, text: str) -> None:
        self._write(self.style("> ", "bold", "cyan") + self.style(text, "bold") + "\n\n")

    def show(self, event: AgentEvent) -> None:
        handler = getattr(self, f"_on_{type(event).__name__}", None)
        if handler is not None:
            handler(event)

    def summary(self) -> None:
        if self.input_tokens or self.output_tokens:
            line = f"tokens: {self.input_tokens:,} in, {self.output_tokens:,} out"
            self._write(self.style(line, "dim") + "\n")

    # --- per event ---------------------------------------------------------------------

    def _on_NewToken(self, event: NewToken) -> None:
        self._enter("text")
        self._write(self.style(event.text))

    def _on_NewReasoning(self, event: NewReasoning) -> None:
        if self.mode != "reasoning":
            self._enter("reasoning")
            self._write(self.style("thinking: ", "dim", "italic"))
        self._write(self.style(event.text, "dim", "italic"))

    def _on_ToolStarted(self, event: ToolStarted) -> None:
        self._enter("idle")
        head = self.style("● ", "cyan") + self.style(event.name, "bold")
        self._write(f"{head} {self.style(_brief(event.args), 'dim')}\n")

    def _on_ToolOutput(self, event: ToolOutput) -> None:
        """Chunks end anywhere; only whole lines are shown, the rest waits for more (a
        carriage return ends a line too, and a line is shown once it grows long)."""
        self.mode = "output"
        self.streamed.add(event.id)
        text = self.partial.get(event.id, "") + event.chunk
        *lines, rest = _LINE_END.split(text)
        if len(rest) > _LONG_LINE:
            lines.append(rest)
            rest = ""
        self.partial[event.id] = rest
        for line in lines:
            self._write(self.style(f"  │ {line}", "dim") + "\n")

    def _on_ToolFinished(self, event: ToolFinished) -> None:
        rest = self.partial.pop(event.id, "")
        if rest:
            self._write(self.style(f"  │ {rest}", "dim") + "\n")
        mark, colour = _MARKS[event.status]
        if event.error is not None:
            detail = f"{event.error.kind}: {event.error.message}"
        elif event.id in self.streamed:  # the output was shown live: say how it ended
            self.streamed.discard(event.id)
            detail = _last_line(event.result.text if event.result else "")
        else:
            detail = _first_line(event.result.text if event.result else "")
        self._write(f"  {self.style(mark, colour)} {self.style(detail, 'dim')}\n\n")
        self.mode = "idle"

    def _on_StatusUpdate(self, event: StatusUpdate) -> None:
        if event.notice is not None or event.status == "retrying":
            self._enter("idle")
            said = event.notice or event.status
            self._write(self.style(f"[{said}] {event.detail}", "yellow") + "\n")

    def _on_Steered(self, event: Steered) -> None:
        self._enter("idle")
        when = "the next turn" if event.next_turn else "this turn"
        self._write(self.style(f"↳ for {when}: {event.text}", "dim") + "\n")

    def _on_ConfirmRequest(self, event: ConfirmRequest) -> None:
        self._enter("idle")
        self._write(self.style(f"? {event.tool_call.name}: {event.reason}", "yellow") + "\n")

    def _on_Usage(self, event: Usage) -> None:
        self.input_tokens += event.input_tokens
        self.output_tokens += event.output_tokens

    def _on_TodoUpdated(self, event: TodoUpdated) -> None:
        self._enter("idle")
        boxes = {"pending": "☐", "in_progress": "◐", "done": "☑"}
        for item in event.items:
            self._write(f"  {boxes[item.status]} {self.style(item.content)}\n")

    def _on_Subagent(self, event: Subagent) -> None:
        inner = event.event
        if isinstance(inner, ToolStarted):
            self._enter("idle")
            self._write(
                self.style(f"  ↳ [{event.agent_id}] {inner.name} {_brief(inner.args)}", "dim")
                + "\n"
            )

    def _on_Error(self, event: Error) -> None:
        self._enter("idle")
        self._write(self.style(f"error: {event.message}", "red") + "\n")

    def _on_Done(self, event: Done) -> None:
        self._enter("idle")
        if event.cancelled:
            self._write(self.style(f"[{event.reason}]", "yellow") + "\n")

    # --- plumbing ----------------------------------------------------------------------

    def _enter(self, mode: str) -> None:
        if self.mode in ("text", "reasoning") and mode != self.mode:
            self._write("\n\n" if mode == "text" or self.mode == "text" else "\n")
        self.mode = mode

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()


def _brief(args: dict[str, Any]) -> str:
    parts = []
    for key, value in args.items():
        text = str(value).replace("\n", "⏎")
        parts.append(f"{key}={text if len(text) <= 60 else text[:57] + '…'}")
    return " ".join(parts)


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "done"


def _first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return "done"
    more = f" (+{counted(len(lines) - 1, 'line')})" if len(lines) > 1 else ""
    first = lines[0] if len(lines[0]) <= 90 else lines[0][:87] + "…"
    return first + more
