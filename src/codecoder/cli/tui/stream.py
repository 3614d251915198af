"""Streamed Markdown cut into blocks: the settled part is rendered once, only the open
block is rendered again as tokens arrive (so a long answer costs linear time, not
quadratic, and the screen never redraws what has not changed).

Pure text in, pieces out: no rendering library here. A block settles at a blank line
once the next non-blank line shows the block is over (an indented line continues a list
item or a quote). A fenced code block is handed out as `Code` (its lines, not Markdown:
it needs no Markdown parser) at its closing fence, and in runs of lines while it keeps
growing, so a 2,000-line file in an answer is never rendered again and again either.
"""

from __future__ import annotations

import re

import msgspec

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
CODE_RUN = 20
"""Lines of an open code block handed out at once."""


class Block(msgspec.Struct, frozen=True):
    """Markdown source of one settled block; `gap`: a blank line separates it from the
    block before (a code run continuing the same fence has none)."""

    source: str
    gap: bool = True


class Code(msgspec.Struct, frozen=True):
    """Lines of a fenced code block that is still open, settled early."""

    lines: tuple[str, ...]
    language: str
    gap: bool = False


Piece = Block | Code


class MarkdownStream(msgspec.Struct):
    """Feed text as it streams; `feed` returns the pieces that settled, `open_source`
    is what is still open (rendered again at each frame)."""

    _lines: list[str] = msgspec.field(default_factory=list)
    """Complete lines of the open block."""
    _partial: str = ""
    """The line being streamed (no newline yet)."""
    _fence: str | None = None
    _language: str = ""
    _fence_head: str = ""
    _indent: int = 0
    _continued: bool = False
    """The open fence already handed out lines (its next piece has no gap)."""
    _blank_seen: bool = False
    """Blank lines followed the open block: the next line decides whether it is over."""
    _settled_any: bool = False

    def feed(self, text: str) -> list[Piece]:
        if not text:
            return []
        pieces: list[Piece] = []
        parts = (self._partial + text).split("\n")
        self._partial = parts.pop()
        for line in parts:
            self._line(line, pieces)
        if self._blank_seen and self._partial[:1].strip() and self._fence is None:
            self._settle(pieces)  # a line begins unindented after a blank: a new block
        return pieces

    def finish(self) -> list[Piece]:
        """The end of the answer: everything left settles."""
        pieces: list[Piece] = []
        if self._partial:
            self._line(self._partial, pieces)
            self._partial = ""
        self._settle(pieces)
        self._fence = None
        self._continued = False
        self._blank_seen = False
        self._settled_any = False
        return pieces

    @property
    def open_source(self) -> str:
        """The open block's Markdown (with the line still streaming)."""
        lines = self._lines + ([self._partial] if self._partial else [])
        if self._fence is not None:
            lines = [self._fence_head, *lines]
        return "\n".join(lines)

    @property
    def empty(self) -> bool:
        return not self._lines and not self._partial

    # --- one line ------------------------------------------------------------------------

    def _line(self, line: str, pieces: list[Piece]) -> None:
        if self._fence is not None:
            self._in_fence(line, pieces)
            return
        if not line.strip():
            if self._lines:
                self._blank_seen = True
            return
        if self._blank_seen and not line[:1].isspace():
            self._settle(pieces)  # a new block begins
        elif self._blank_seen:
            self._lines.append("")  # the blank line inside a list item or quote
        self._blank_seen = False
        fence = _FENCE.match(line)
        if fence is None:
            self._lines.append(line)
            return
        self._settle(pieces)  # what came before the fence
        self._fence = fence.group(1)
        self._language = fence.group(2).strip().split(" ")[0] if fence.group(2) else ""
        self._fence_head = line
        self._indent = len(line) - len(line.lstrip(" "))

    def _in_fence(self, line: str, pieces: list[Piece]) -> None:
        fence = self._fence or ""
        stripped = line.strip()
        if (
            stripped.startswith(fence[0] * len(fence))
            and not stripped.strip(fence[0])
            and len(line) - len(line.lstrip(" ")) < 4
        ):
            self._settle(pieces)  # the closing fence
            return
        if self._indent:  # a fence indented by n spaces takes n spaces off its lines
            line = line[min(self._indent, len(line) - len(line.lstrip(" "))) :]
        self._lines.append(line)
        if len(self._lines) >= CODE_RUN:
            self._emit_code(pieces)
            self._continued = True

    def _emit_code(self, pieces: list[Piece]) -> None:
        if self._lines:
            gap = not self._continued and self._settled_any
            pieces.append(Code(tuple(self._lines), self._language, gap))
            self._settled_any = True
        self._lines = []

    def _settle(self, pieces: list[Piece]) -> None:
        self._blank_seen = False
        if self._fence is not None:
            self._emit_code(pieces)
            self._fence = None
            self._continued = False
            return
        if not self._lines:
            return
        pieces.append(Block("\n".join(self._lines), gap=self._settled_any))
        self._settled_any = True
        self._lines = []
