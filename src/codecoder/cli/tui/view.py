"""Kernel events as the terminal shows them.

Two outputs: `settled`, text that is final and printed once above the prompt (it goes
into the terminal's scrollback), and `live()`, the part still changing (the open
Markdown block, reasoning as it streams, running tools with a spinner, their output
tail, sub-agents), redrawn in place below it. Nothing settled is ever drawn again.
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path
from typing import Any

import msgspec

from codecoder.cli.tui import describe
from codecoder.cli.tui.diffs import SHOWN_LINES, Diff
from codecoder.cli.tui.stream import Block, MarkdownStream, Piece
from codecoder.cli.tui.text import MARK, safe_line, styled, width_of, without_colours
from codecoder.cli.tui.text import cut as cut_cells
from codecoder.kernel.events import (
    AgentEvent,
    Compacted,
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
)
from codecoder.terminal_text import visible
from codecoder.wording import counted

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TAIL_LINES = 10
"""Lines of a command's output shown (live, and when it has finished)."""
PROMPT_LINES = 12
"""Lines of another client's prompt shown (its sender saw it whole as it typed it)."""
KEPT_OUTPUT = 4 * 1024 * 1024
"""Characters of a command's output kept for Ctrl+O."""
TAIL_LINE = 4096
"""Characters a line of a running call's tail keeps (its end, for the line still being
written): more than a terminal shows, and a command that prints no newline (`yes |
tr -d '\\n'`) no longer grows the line it is writing without bound."""
_MARKS = {"success": ("✓", "green"), "error": ("✗", "red"), "cancelled": ("⊘", "yellow")}
_TODO = {"pending": "☐", "in_progress": "◐", "done": "☑"}
_SILENT_TOOLS = ("todo_write",)
"""Tools whose result shows in its own way (the checklist): no line of their own."""


class _Tool(msgspec.Struct):
    id: str
    name: str
    args: dict[str, Any]
    started: float
    tail: deque[str] = msgspec.field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    partial: str = ""
    lines: int = 0
    output: list[str] = msgspec.field(default_factory=list)
    kept: int = 0
    streamed: bool = False


class _Child(msgspec.Struct):
    """A sub-agent, nested under the agent call that started it."""

    id: str
    activity: str = "starting"
    tools: int = 0
    state: str = "running"


class Output(msgspec.Struct):
    """The full output of the last command (Ctrl+O)."""

    title: str
    text: str
    lines: int


class View:
    def __init__(self, workspace: Path, *, color: bool, width: int) -> None:
        self.workspace = workspace
        self.color = color
        self.width = width
        self.settled: list[str] = []
        self.markdown = MarkdownStream()
        self._open: tuple[str, int, str] = ("", 0, "")
        self._open_cost = 0.0
        self._open_at = 0.0
        self.reasoning: list[str] = []
        self.reasoning_started: float | None = None
        self.last_reasoning = ""
        self.show_reasoning = False
        self.tools: dict[str, _Tool] = {}
        self.children: dict[str, _Child] = {}
        self.last_output: Output | None = None
        self.diffs_shown: set[str] = set()
        self.diffs: dict[str, Diff] = {}
        self.status = ""
        self.painter: Any = None
        self._last = "\n"  # the end of what was printed last (a blank line: the start)

    # --- settled output ------------------------------------------------------------

    def take(self) -> str:
        """The settled text not yet printed."""
        text = "".join(self.settled)
        if text:
            self._last = self.settled[-1]
        self.settled.clear()
        return text

    def line(self, text: str, *styles: str) -> None:
        """A line of our own (already safe), settled."""
        self.settled.append(styled(text, *styles, color=self.color) + "\n")

    def gap(self) -> None:
        """A blank line, unless the last line was one."""
        last = self.settled[-1] if self.settled else self._last
        if last != "\n" and not last.endswith("\n\n"):
            self.settled.append("\n")

    def note(self, text: str, *styles: str) -> None:
        """A notice: the answer so far settles first, so the order stays."""
        self._end_text()
        self.line(text, *styles)

    def block(self, lines: list[str], *styles: str) -> None:
        """Lines of our own (already safe) as a block of their own, between blank lines.
        What is still open stays open: a report asked for while the answer streams
        (/cost) settles above the live area and never cuts the paragraph being written."""
        self.gap()
        for text in lines:
            self.line(text, *styles)
        self.settled.append("\n")

    def said(self, text: str, client: str, steer: str = "") -> None:
        """Another client's message to this session, marked with who sent it: a prompt as
        ours is shown (MARK), a steer as the steer lines are (`↪ joined the turn …`)."""
        self._end_text()
        who = safe_line(client)
        first = safe_line(text.strip().split("\n")[0]) if text.strip() else ""
        if steer:
            what = "for the next turn" if steer == "next_turn" else "joined the turn"
            head = f"↪ {what} (from {who}): "
            self.line(head + cut_cells(first, max(self.width - len(head), 10)), "dim")
            return
        self.gap()
        lines = text.rstrip().split("\n")
        for index, line in enumerate(lines[:PROMPT_LINES]):
            self.line((f"{MARK} " if index == 0 else "  ") + safe_line(line), "bold")
        if len(lines) > PROMPT_LINES:
            self.line(f"  … {counted(len(lines) - PROMPT_LINES, 'more line')}", "dim")
        self.line(f"  sent from {who}", "dim")
        self.line("")

    def markdown_text(self, source: str) -> None:
        """Markdown of our own (help, a transcript), settled."""
        self.settled.append(self._render(Block(visible(source))))

    # --- events ----------------------------------------------------------------------

    def show(self, event: AgentEvent, diff: Diff | None = None) -> None:
        handler = getattr(self, f"_on_{type(event).__name__}", None)
        if handler is not None:
            if isinstance(event, ToolFinished):
                handler(event, diff)
            else:
                handler(event)

    def _on_NewToken(self, event: NewToken) -> None:
        self.status = "Writing"
        self._end_reasoning()
        for piece in self.markdown.feed(visible(event.text)):
            self.settled.append(self._render(piece))

    def _on_NewReasoning(self, event: NewReasoning) -> None:
        if self.reasoning_started is None:
            self._end_text()
            self.reasoning_started = time.monotonic()
        self.reasoning.append(event.text)

    def _on_ToolStarted(self, event: ToolStarted) -> None:
        self._end_text()
        self.tools[event.id] = _Tool(event.id, event.name, event.args, time.monotonic())
        self.status = ""

    def approved(self, call_id: str) -> None:
        """A call's question was answered: its elapsed time starts now, since the time a
        person took to read the diff and answer is not the call's."""
        tool = self.tools.get(call_id)
        if tool is not None:
            tool.started = time.monotonic()

    def _on_ToolOutput(self, event: ToolOutput) -> None:
        tool = self.tools.get(event.id)
        if tool is None:
            return
        tool.streamed = True
        if tool.kept < KEPT_OUTPUT:
            tool.output.append(event.chunk)
            tool.kept += len(event.chunk)
        text = tool.partial + event.chunk.replace("\r\n", "\n").replace("\r", "\n")
        *lines, partial = text.split("\n")
        tool.partial = partial[-TAIL_LINE:]
        tool.lines += len(lines)
        tool.tail.extend(line[:TAIL_LINE] for line in lines[-TAIL_LINES:])

    def _on_ToolFinished(self, event: ToolFinished, diff: Diff | None) -> None:
        tool = self.tools.pop(event.id, None) or _Tool(event.id, event.name, {}, time.monotonic())
        children = list(self.children.values()) if tool.name == "agent" else []
        if tool.name == "agent":
            self.children.clear()
        self._end_text()
        if tool.name in _SILENT_TOOLS and event.status == "success":
            return
        mark, colour = _MARKS[event.status]
        elapsed = time.monotonic() - tool.started
        head = self._call_line(tool.name, tool.args, mark, colour)
        detail = self._detail(event, tool)
        timing = f" · {elapsed:.1f}s" if elapsed >= 0.5 else ""
        self.settled.append(head + styled(f"{detail}{timing}", "dim", color=self.color) + "\n")
        for child in children:  # the sub-agents, under the call that started them
            self.line(
                f"  ↳ {child.id}: {child.activity} · {counted(child.tools, 'tool call')}", "dim"
            )
        if event.error is not None:
            message = safe_line(event.error.message)
            self.line(f"  {cut_cells(message, max(self.width - 2, 10))}", "red")
            return
        if tool.name == "run_command":
            self._command_output(event, tool)
        shown = diff or self.diffs.pop(event.id, None)
        if shown is not None:
            self._diff_after(event.id, shown)

    def _on_StatusUpdate(self, event: StatusUpdate) -> None:
        status, detail = event.status, safe_line(event.detail)
        if event.notice == "compact":
            self.note(f"compaction: {detail}", "dim")
        elif event.notice is not None:
            self.note(f"[{event.notice}] {detail}", "yellow")
        elif status == "thinking":
            self.status = "Thinking"
        elif status == "running_tool" and detail:
            self.status = describe.doing(detail)
        elif status == "compacting":
            self.note(f"compaction: {detail}", "dim")
        elif status == "retrying":
            self.note(f"[retrying] {detail}", "yellow")

    def _on_Compacted(self, event: Compacted) -> None:
        self.note(
            f"compacted the history: ~{event.before_tokens:,} → ~{event.after_tokens:,} tokens "
            "(the full history stays in the session store)",
            "dim",
        )

    def _on_Error(self, event: Error) -> None:
        self.note(f"error: {safe_line(event.message)}", "red")

    def _on_TodoUpdated(self, event: TodoUpdated) -> None:
        self._end_text()
        for item in event.items:
            box = _TODO[item.status]
            text = safe_line(item.content)
            if item.status == "done":
                self.line(f"  {box} {text}", "dim", "strike")
            elif item.status == "in_progress":
                self.line(f"  {box} {text}", "bold")
            else:
                self.line(f"  {box} {text}")

    def _on_Steered(self, event: Steered) -> None:
        self._end_text()
        first = safe_line(event.text.strip().split("\n")[0]) if event.text.strip() else ""
        if event.by == "hook":
            self.line(f"↪ a stop hook goes on: {cut_cells(first, self.width - 26)}", "dim")
        elif event.next_turn:
            self.line(f"↪ for the next turn: {cut_cells(first, self.width - 22)}", "dim")
        else:
            self.line(f"↪ joined the turn: {cut_cells(first, self.width - 20)}", "dim")

    def _on_Subagent(self, event: Subagent) -> None:
        inner = event.event
        while isinstance(inner, Subagent):
            inner = inner.event
        child = self.children.setdefault(event.agent_id, _Child(event.agent_id))
        if isinstance(inner, ToolStarted):
            child.tools += 1
            child.activity = (
                f"{describe.label(inner.name)} {describe.arguments(inner.name, inner.args)}"
            )
        elif isinstance(inner, Done):
            child.state = inner.reason
            child.activity = "done" if inner.reason == "completed" else inner.reason
        elif isinstance(inner, Error):
            child.activity = f"error: {safe_line(inner.message)}"
        elif isinstance(inner, NewToken) and child.activity in ("starting", "thinking"):
            child.activity = "writing its answer"

    def _on_Done(self, event: Done) -> None:
        self.finish()
        if event.cancelled and event.reason == "cancelled":
            self.line("⊘ cancelled", "yellow")
        elif event.reason == "max_rounds":
            self.line("stopped: the round limit was reached", "yellow")
        self.gap()

    def finish(self) -> None:
        """The turn is over: whatever is open settles."""
        self._end_text()
        for tool in list(self.tools.values()):  # left without an end (a remote session)
            self.settled.append(self._call_line(tool.name, tool.args, "⊘", "yellow") + "\n")
        self.tools.clear()
        self.children.clear()
        self.status = ""

    # --- pieces ------------------------------------------------------------------------

    def _end_text(self) -> None:
        self._end_reasoning()
        for piece in self.markdown.finish():
            self.settled.append(self._render(piece))
        self._open = ("", 0, "")

    def _end_reasoning(self) -> None:
        if self.reasoning_started is None:
            return
        text = "".join(self.reasoning).strip()
        seconds = time.monotonic() - self.reasoning_started
        self.reasoning.clear()
        self.reasoning_started = None
        if not text:
            return
        self.last_reasoning = text
        if self.show_reasoning:
            self.reasoning_block(text)
            return
        words = counted(len(text.split()), "word")
        self.line(f"∴ thought for {seconds:.0f}s ({words}) · ctrl+t shows it", "dim", "italic")

    def reasoning_block(self, text: str) -> None:
        self.line("∴ thinking", "dim", "italic")
        for line in visible(text).splitlines():
            self.line(f"  {line}", "dim", "italic")

    def _render(self, piece: Piece) -> str:
        from codecoder.cli.tui import markdown

        gap = "\n" if piece.gap else ""
        if isinstance(piece, Block):
            rendered = markdown.render(piece.source, self.width, color=self.color)
            if rendered is None:
                rendered = self._rich(piece.source)
            return gap + rendered
        return gap + markdown.code_lines(piece.lines, piece.language, self.width, color=self.color)

    def _rich(self, source: str) -> str:
        from codecoder.cli.tui.paint import Painter

        if self.painter is None:
            self.painter = Painter(self.width, color=self.color)
        self.painter.width = self.width
        return str(self.painter.markdown(source))

    def _call_line(self, name: str, args: dict[str, Any], mark: str, colour: str) -> str:
        label = describe.label(name)
        shown = describe.arguments(name, args)
        room = max(self.width - width_of(label) - 4, 10)
        return (
            styled(mark, colour, color=self.color)
            + " "
            + styled(label, "bold", color=self.color)
            + " "
            + cut_cells(shown, room)
        )

    def _detail(self, event: ToolFinished, tool: _Tool) -> str:
        if event.error is not None:
            return f" · {event.error.kind}"
        text = event.result.text if event.result is not None else ""
        if tool.name == "run_command":
            status = text.rstrip().rsplit("\n", 1)[-1]
            return f" · {status.strip('[]')}" if status.startswith("[") else ""
        summary = describe.result_summary(tool.name, text)
        if tool.name in ("edit_file", "write_file") or not summary:
            return ""
        return f" · {cut_cells(summary, 60)}"

    def _command_output(self, event: ToolFinished, tool: _Tool) -> None:
        if tool.streamed:
            if tool.partial:
                tool.lines += 1
                tool.tail.append(tool.partial)
            lines, total = list(tool.tail), tool.lines
            full = "".join(tool.output)
        else:
            text = event.result.text if event.result is not None else ""
            body = text.rstrip("\n").split("\n")
            if body and body[-1].startswith("["):
                body = body[:-1]  # the status line, shown on the call's line
            if body == ["(no output)"]:
                body = []
            lines, total, full = body[-TAIL_LINES:], len(body), "\n".join(body)
        self.last_output = Output(describe.arguments(tool.name, tool.args), full, total)
        hidden = total - len(lines)
        if hidden > 0:
            self.line(f"  … {counted(hidden, 'earlier line')} · ctrl+o shows all", "dim")
        room = max(self.width - 4, 10)
        for line in lines:
            self.line(f"  │ {cut_cells(safe_line(without_colours(line)), room)}", "dim")

    def _diff_after(self, call_id: str, diff: Diff) -> None:
        if call_id in self.diffs_shown:  # shown at the question: only the count now
            self.diffs_shown.discard(call_id)
            self.line(f"  {safe_line(diff.path)}: +{diff.added} -{diff.removed}", "dim")
            return
        self.diff_lines(diff, limit=SHOWN_LINES)

    def diff_lines(self, diff: Diff, limit: int | None = None) -> None:
        """A coloured unified diff, settled (cut after `limit` lines)."""
        if diff.empty:
            self.line(f"  {safe_line(diff.path)}: no change", "dim")
            return
        what = "new file" if diff.created else "changed"
        self.line(f"  {safe_line(diff.path)} ({what}: +{diff.added} -{diff.removed})", "dim")
        shown = diff.lines if limit is None else diff.lines[:limit]
        colours = {"add": ("green",), "remove": ("red",), "hunk": ("cyan",), "meta": ("bold",)}
        room = max(self.width - 4, 10)
        for kind, text in shown:
            self.line(f"  {cut_cells(safe_line(text), room)}", *colours.get(kind, ()))
        if limit is not None and len(diff.lines) > limit:
            self.line(f"  … {counted(len(diff.lines) - limit, 'more diff line')}", "dim")

    # --- the live part -----------------------------------------------------------------

    def busy(self) -> bool:
        return bool(self.tools or self.reasoning_started is not None or not self.markdown.empty)

    def live(self, rows: int, now: float) -> str:
        """What is still changing, as ANSI lines (at most `rows`)."""
        lines: list[str] = []
        if self.reasoning_started is not None:
            lines += self._live_reasoning(now)
        if not self.markdown.empty:
            lines += self._live_markdown(now)
        for tool in self.tools.values():
            lines += self._live_tool(tool, now)
        return "\n".join(lines[-rows:]) if rows > 0 else ""

    def _live_reasoning(self, now: float) -> list[str]:
        assert self.reasoning_started is not None
        seconds = now - self.reasoning_started
        out = [styled(f"∴ thinking… {seconds:.0f}s", "dim", "italic", color=self.color)]
        text = "".join(self.reasoning)[-2000:]
        tail = [line for line in text.splitlines() if line.strip()][-3:]
        room = max(self.width - 2, 10)
        out += [
            styled(f"  {cut_cells(safe_line(t), room)}", "dim", "italic", color=self.color)
            for t in tail
        ]
        return out

    def _live_markdown(self, now: float) -> list[str]:
        """The open block, rendered again only when it changed and not more often than
        four times its own render cost (a huge open block cannot eat the CPU)."""
        source = self.markdown.open_source
        cached_source, cached_width, cached = self._open
        stale = source != cached_source or cached_width != self.width
        if stale and (now - self._open_at >= 4 * self._open_cost or not cached):
            from codecoder.cli.tui import markdown

            started = time.perf_counter()
            rendered = markdown.render(visible(source), self.width, color=self.color)
            if rendered is None:
                rendered = self._rich(source)
            self._open_cost = time.perf_counter() - started
            self._open_at = now
            self._open = (source, self.width, rendered)
            cached = rendered
        return cached.rstrip("\n").split("\n")

    def _live_tool(self, tool: _Tool, now: float) -> list[str]:
        frame = SPINNER[int(now * 10) % len(SPINNER)]
        elapsed = now - tool.started
        head = self._call_line(tool.name, tool.args, frame, "cyan")
        out = [head + styled(f" · {elapsed:.0f}s", "dim", color=self.color)]
        room = max(self.width - 4, 10)
        hidden = tool.lines - len(tool.tail)
        if hidden > 0:
            out.append(styled(f"  … {counted(hidden, 'earlier line')}", "dim", color=self.color))
        for line in [*tool.tail, *([tool.partial] if tool.partial else [])][-TAIL_LINES:]:
            shown = cut_cells(safe_line(without_colours(line)), room)
            out.append(styled(f"  │ {shown}", "dim", color=self.color))
        if tool.name == "agent":
            for child in self.children.values():
                text = f"  ↳ {child.id}: {cut_cells(child.activity, room - 20)} · {child.tools}"
                out.append(styled(text, "dim", color=self.color))
        return out
