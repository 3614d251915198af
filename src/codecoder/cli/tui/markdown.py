"""Markdown blocks to ANSI text, fast: paragraphs, headings, lists, code, rules and
tables are rendered here from markdown-it's tokens (or quick.py's, the same tokens made
without a parser); a quote, HTML, or a table too wide for the screen goes to rich
(paint.py), which wraps its cells.

Why not rich for everything: rich renders ~200 KB of Markdown a second here, so a
20,000-token answer (~100 KB) took ~0.5 s against ~0.15 s to print it raw, and the issue
allows twice the raw time (bench/bench_tui.py, docs/benchmarks.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from codecoder.cli.tui.quick import quick_tokens
from codecoder.cli.tui.text import RESET, sgr, width_of

Style = tuple[str, ...]

_FALLBACK = frozenset({"blockquote_open", "html_block"})
_CELL_GAP = 2
_WORDS = re.compile(r"\S+|\s+")
_HEADINGS: dict[str, Style] = {"h1": ("1", "4"), "h2": ("1",), "h3": ("1",)}
_SMALL_HEADING: Style = ("1", "3")
_CODE: Style = ("36",)
_URL: Style = ("2",)
_BREAK = ("\n", ())


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    rules = ["heading", "list", "fence", "code", "hr", "paragraph", "table", "blockquote"]
    rules += ["emphasis", "backticks", "link", "image", "strikethrough", "escape", "newline"]
    rules += ["html_block", "text_join"]
    return MarkdownIt("zero").enable(rules)  # no entities, references, setext: ~8% less


def warm_up() -> None:
    """Import and build what the first answer needs (on the warm-up thread): the
    Markdown parser, and rich, for the first table or quote."""
    render("# a\n\n- *b* `c`\n\n```python\nx = 1\n```", 80, color=True)
    from codecoder.cli.tui.paint import Painter

    Painter(80, color=True).markdown("| a |\n|---|\n| b |")


def highlight(code: str, language: str, *, color: bool) -> list[str]:
    """Code lines with ANSI colours (plain without colour or a known language)."""
    if not color or not language:
        return code.split("\n")
    from codecoder.cli.tui import highlight as colours

    return colours.highlight(code, language)


def render(source: str, width: int, *, color: bool, quick: bool = True) -> str | None:
    """A block's ANSI lines (each ending in a newline), or None when rich must render it
    (a quote, HTML, a table too wide). `source` must already be `visible` (terminal_text).
    The common blocks are read by quick.py (markdown-it's tokens, without its parser); the
    rest by markdown-it."""
    tokens = quick_tokens(source) if quick else None
    if tokens is None:
        tokens = _parser().parse(source)
        if any(token.type in _FALLBACK for token in tokens):
            return None
    blocks = _Blocks(max(width, 20), color)
    blocks.walk(tokens)
    return None if blocks.too_wide else "".join(blocks.out)


def code_lines(lines: Sequence[str], language: str, width: int, *, color: bool) -> str:
    """A run of a code block that is still open (stream.Code)."""
    blocks = _Blocks(max(width, 20), color)
    blocks.code("\n".join(lines), language)
    return "".join(blocks.out)


class _Blocks:
    """Walks a block's tokens, writing lines to `out`."""

    def __init__(self, width: int, color: bool) -> None:
        self.out: list[str] = []
        self.width = width
        self.color = color
        self.lists: list[tuple[list[int | None], str]] = []  # (its next number, its indent)
        self.prefix = ""  # the indent of the lines of the current list item
        self.marker: str | None = None  # the next line's prefix when it starts an item
        self.base: Style = ()
        self.table: _Table | None = None
        self.too_wide = False  # a table that does not fit: rich wraps its cells

    def walk(self, tokens: Sequence[Any]) -> None:
        for token in tokens:
            kind = token.type
            if self.table is not None:
                self._in_table(token)
            elif kind == "table_open":
                self.table = _Table()
            elif kind == "heading_open":
                self.gap()
                self.base = _HEADINGS.get(token.tag, _SMALL_HEADING)
            elif kind == "heading_close":
                self.base = ()
            elif kind == "paragraph_open" and not token.hidden:
                self.gap()
            elif kind == "inline":
                _Inline(self).run(token.children or [])
            elif kind in ("fence", "code_block"):
                self.gap()
                self.code(token.content.rstrip("\n"), (token.info or "").strip().split(" ")[0])
            elif kind == "hr":
                self.gap()
                self.line(sgr(("2",), self.color) + "─" * min(self.width, 80), styled=True)
            elif kind in ("bullet_list_open", "ordered_list_open"):
                if not self.lists:
                    self.gap()
                start = token.attrs.get("start", 1) if kind == "ordered_list_open" else None
                self.lists.append(([None if start is None else int(start)], self.prefix))
            elif kind in ("bullet_list_close", "ordered_list_close"):
                _, self.prefix = self.lists.pop()
            elif kind == "list_item_open":
                self.item()

    def _in_table(self, token: Any) -> None:
        table = self.table
        assert table is not None
        kind = token.type
        if kind == "tr_open":
            table.rows.append([])
        elif kind in ("th_open", "td_open"):
            style = str(token.attrs.get("style", ""))
            table.aligns.setdefault(len(table.rows[-1]), style.removeprefix("text-align:"))
            if kind == "th_open":
                table.header = len(table.rows)
        elif kind == "inline":
            inline = _Inline(self)
            for child in token.children or []:
                inline.child(child)
            cell = _Cell(inline.segments, self.color)
            table.rows[-1].append(cell)
        elif kind == "table_close":
            self.table = None
            self.gap()
            lines = table.lines(self.width, self.color)
            if lines is None:
                self.too_wide = True
                return
            self.out += [line + "\n" for line in lines]

    def gap(self) -> None:
        """A blank line between blocks (not before the first, nor at a list item's
        first line)."""
        if self.out and self.marker is None and self.out[-1] != "\n":
            self.out.append("\n")

    def item(self) -> None:
        numbers, indent = self.lists[-1]
        if numbers[0] is None:
            bullet = "• " if len(self.lists) % 2 else "◦ "
        else:
            bullet = f"{numbers[0]}. "
            numbers[0] += 1
        self.marker = indent + bullet
        self.prefix = indent + " " * len(bullet)

    def take_prefix(self) -> str:
        if self.marker is not None:
            marker, self.marker = self.marker, None
            return marker
        return self.prefix

    def code(self, code: str, language: str) -> None:
        for text in highlight(code, language, color=self.color):
            room = self.width - width_of(self.prefix) - 2
            for row in wrap_code(text, room):
                self.line(self.take_prefix() + "  " + row, styled=False)

    def line(self, text: str, *, styled: bool) -> None:
        self.out.append(text + (RESET if styled else "") + "\n")


_CODE_SGR = re.compile(r"\x1b\[[0-9;]*m")


def wrap_code(line: str, room: int) -> list[str]:
    """A (highlighted) code line in rows of at most `room` cells, each continuation
    indented as the line is and in the colour it was in. Left to the terminal, a long
    line wraps at the screen's edge, mid-word and back at the first column, and the
    indent that is a block's structure is lost. Rows break after a space where there
    is one; a run without one is cut where the row is full."""
    if width_of(_CODE_SGR.sub("", line) if "\x1b" in line else line) <= room:
        return [line]
    chars: list[tuple[str, str]] = []  # (char, the SGR in force there)
    style, position = RESET, 0
    for match in _CODE_SGR.finditer(line):
        chars += [(c, style) for c in line[position : match.start()]]
        style, position = match.group(), match.end()
    chars += [(c, style) for c in line[position:]]
    plain = "".join(c for c, _ in chars)
    indent = plain[: len(plain) - len(plain.lstrip(" \t"))][: max(room // 2, 0)]
    rows: list[str] = []
    start = 0
    while start < len(chars):
        limit = room if not rows else room - width_of(indent)
        end, used, space, words = start, 0, 0, False
        while end < len(chars) and used + width_of(chars[end][0]) <= limit:
            char = chars[end][0]
            used += width_of(char)
            end += 1
            if char == " " and words:  # not in the indent: a row is never empty
                space = end
            words = words or not char.isspace()
        if end < len(chars) and space > start:
            end = space
        end = max(end, start + 1)
        rows.append(_code_row(chars[start:end], indent if rows else ""))
        start = end
    return rows


def _code_row(chars: list[tuple[str, str]], indent: str) -> str:
    out = [indent]
    style = RESET
    for char, wanted in chars:
        if wanted != style:
            out.append(wanted)
            style = wanted
        out.append(char)
    return "".join(out).rstrip(" ") + ("" if style == RESET else RESET)


class _Cell:
    """A table cell: its text on one line, styled, and the columns it takes."""

    def __init__(self, segments: list[tuple[str, Style]], color: bool) -> None:
        parts: list[str] = []
        style: Style = ()
        width = 0
        for text, segment_style in segments:
            flat = " ".join(text.split("\n"))
            if segment_style != style:
                parts.append(sgr(segment_style, color) if segment_style else RESET)
                style = segment_style
            parts.append(flat)
            width += width_of(flat)
        if style:
            parts.append(RESET)
        self.text = "".join(parts)
        self.width = width


class _Table:
    """A table's rows, rendered as aligned columns (rich renders one too wide for the
    screen: it wraps the cells)."""

    def __init__(self) -> None:
        self.rows: list[list[_Cell]] = []
        self.aligns: dict[int, str] = {}
        self.header = 0  # rows that are the header

    def lines(self, width: int, color: bool) -> list[str] | None:
        columns = max((len(row) for row in self.rows), default=0)
        widths = [
            max((row[c].width for row in self.rows if c < len(row)), default=0)
            for c in range(columns)
        ]
        if sum(widths) + _CELL_GAP * max(columns - 1, 0) > width:
            return None
        out: list[str] = []
        rule = sgr(("2",), color) + "─" * (sum(widths) + _CELL_GAP * (columns - 1)) + RESET
        for index, row in enumerate(self.rows):
            cells = []
            for c in range(columns):
                cell = row[c] if c < len(row) else _Cell([], color)
                room = widths[c] - cell.width
                align = self.aligns.get(c, "")
                if align == "right":
                    text = " " * room + cell.text
                elif align == "center":
                    text = " " * (room // 2) + cell.text + " " * (room - room // 2)
                else:
                    text = cell.text + " " * room
                if index < self.header and color:
                    text = sgr(("1",), color) + text + RESET
                cells.append(text)
            out.append((" " * _CELL_GAP).join(cells).rstrip())
            if index == self.header - 1:
                out.append(rule)
        return out


class _Inline:
    """One inline run (a paragraph, a heading, an item's line): styled words, wrapped."""

    def __init__(self, blocks: _Blocks) -> None:
        self.blocks = blocks
        self.color = blocks.color
        self.segments: list[tuple[str, Style]] = []
        self.active: list[str] = []
        self.links: list[tuple[str, int]] = []

    def run(self, children: Sequence[Any]) -> None:
        for child in children:
            self.child(child)
        self.wrap()

    def add(self, text: str, extra: Style = ()) -> None:
        if text:
            self.segments.append((text, (*self.blocks.base, *self.active, *extra)))

    def child(self, child: Any) -> None:
        kind = child.type
        if kind == "text":
            self.add(child.content)
        elif kind == "code_inline":
            self.add(child.content, _CODE)
        elif kind == "softbreak":
            self.add(" ")
        elif kind == "hardbreak":
            self.segments.append(_BREAK)
        elif kind in ("strong_open", "em_open", "s_open"):
            self.active.append({"strong_open": "1", "em_open": "3", "s_open": "9"}[kind])
        elif kind in ("strong_close", "em_close", "s_close") and self.active:
            self.active.pop()
        elif kind == "link_open":
            self.links.append((str(child.attrs.get("href", "")), len(self.segments)))
            self.active.append("4")
        elif kind == "link_close" and self.links:
            self.active.pop()
            href, start = self.links.pop()
            shown = "".join(text for text, _ in self.segments[start:])
            if href and href != shown and not href.startswith("#"):
                self.add(f" ({href})", _URL)
        elif kind == "image":
            self.add(f"[image: {child.content or 'image'}]")
        elif child.content:
            self.add(child.content)

    def wrap(self) -> None:  # noqa: C901, PLR0915 - the hot loop, its state in locals
        """Fill lines word by word (a word may span styles: `**bold**,`). One loop with
        its state in locals: it runs for every word of every answer (as methods on an
        object it took ~10% longer, bench/bench_tui.py)."""
        blocks = self.blocks
        out = blocks.out
        color = self.color
        prefix = blocks.take_prefix()
        room = blocks.width - width_of(prefix)
        parts: list[str] = []  # the line being filled
        used = 0
        current: Style = ()
        word: list[tuple[str, Style]] = []
        word_width = 0
        space = False

        def end_line() -> None:
            nonlocal parts, used, current, prefix, room
            if current:
                parts.append(RESET)
                current = ()
            out.append(prefix + "".join(parts) + "\n")
            parts = []
            used = 0
            prefix = blocks.take_prefix()
            room = blocks.width - width_of(prefix)

        def put_word() -> None:
            nonlocal used, current
            if used and used + space + word_width > room:
                end_line()
            elif space and used:
                if word[0][1] != current and current:
                    parts.append(RESET)
                    current = ()
                parts.append(" ")
                used += 1
            if word_width > room:  # longer than a line: folded
                for text, style in word:
                    for char in text:
                        cells = width_of(char)
                        if used + cells > room:
                            end_line()
                        if style != current:
                            parts.append(sgr(style, color) if style else RESET)
                            current = style
                        parts.append(char)
                        used += cells
                return
            for text, style in word:
                if style != current:
                    parts.append(sgr(style, color) if style else RESET)
                    current = style
                parts.append(text)
            used += word_width

        for text, style in self.segments:
            if text == "\n" and not style:  # a hard break
                if word:
                    put_word()
                    word, word_width, space = [], 0, False
                end_line()
                continue
            for piece in _WORDS.findall(text):
                if piece[0].isspace():
                    if word:
                        put_word()
                        word, word_width = [], 0
                    space = True
                else:
                    word.append((piece, style))
                    word_width += len(piece) if piece.isascii() else width_of(piece)
        if word:
            put_word()
        if parts or not used:
            end_line()
