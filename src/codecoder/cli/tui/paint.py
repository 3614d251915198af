"""Rendering to ANSI text with rich: Markdown blocks, code runs, styled lines.

Imported after the first prompt is on the screen (rich, markdown-it and Pygments cost
~100 ms to import), on a warm-up thread. Everything that reaches the terminal from the
model, a tool or a file goes through `visible()` first: control characters are shown
(`^[`), never obeyed, so an escape sequence in an answer cannot move the cursor or
hide what is about to be approved.
"""

from __future__ import annotations

import io
import re
from functools import lru_cache
from typing import Any, ClassVar

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Heading, Markdown, MarkdownElement
from rich.padding import Padding
from rich.syntax import Syntax
from rich.text import Text
from rich.theme import Theme

from codecoder.terminal_text import visible

THEME = Theme(
    {
        "markdown.code": "bold cyan",
        "markdown.code_block": "none",
        "markdown.h1": "bold underline",
        "markdown.h2": "bold",
        "markdown.h3": "bold",
        "markdown.h4": "bold italic",
        "markdown.block_quote": "italic",
        "markdown.hr": "dim",
        "markdown.link": "underline",
        "markdown.link_url": "blue",
        "diff.add": "green",
        "diff.remove": "red",
        "diff.hunk": "cyan",
        "diff.meta": "bold",
    }
)
CODE_THEME = "ansi_dark"
_TRAILING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$")
_VISIBLE = re.compile(r"\x1b\[[0-9;]*m")
"""Pygments colours taken from the terminal's palette: readable on dark and light."""


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt().enable("strikethrough").enable("table")


@lru_cache(maxsize=64)
def _lexer(name: str) -> Any:
    """A Pygments lexer by name, made once (looking one up costs milliseconds)."""
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(name or "text")
    except ClassNotFound:
        return get_lexer_by_name("text")


def code_text(code: str, language: str) -> Text:
    """Highlighted code as one Text, without Syntax's padding and line machinery."""
    syntax = Syntax(code, _lexer(language), theme=CODE_THEME, background_color="default")
    text = syntax.highlight(code)
    text.rstrip()
    text.no_wrap = False
    text.overflow = "fold"
    return text


class _Code(CodeBlock):
    """A fenced block: highlighted, indented by two, no padding (so that a long block
    handed out in runs reads as one)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Padding(code_text(str(self.text).rstrip("\n"), self.lexer_name), (0, 0, 0, 2))


class _Heading(Heading):
    LEVEL_ALIGN: ClassVar[dict[str, Any]] = dict.fromkeys(
        ("h1", "h2", "h3", "h4", "h5", "h6"), "left"
    )


class _Markdown(Markdown):
    """rich's Markdown with one shared parser (building one costs ~1 ms per block), our
    code blocks and left-aligned headings, links shown with their address."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "fence": _Code,
        "code_block": _Code,
        "heading_open": _Heading,
    }

    def __init__(self, markup: str) -> None:
        self.markup = markup
        self.parsed = _parser().parse(markup)
        self.code_theme = CODE_THEME
        self.justify = None
        self.style = "none"
        self.hyperlinks = False
        self.inline_code_lexer = None
        self.inline_code_theme = CODE_THEME


class Painter:
    """Renders to ANSI text at a width; one console, reused."""

    def __init__(self, width: int, *, color: bool) -> None:
        self._buffer = io.StringIO()
        self.color = color
        self.console = Console(
            file=self._buffer,
            width=max(width, 20),
            force_terminal=True,
            color_system="auto" if color else None,
            no_color=not color,
            theme=THEME,
            legacy_windows=False,
            highlight=False,
            emoji=False,
            markup=False,
        )

    @property
    def width(self) -> int:
        return self.console.width

    @width.setter
    def width(self, width: int) -> None:
        self.console.width = max(width, 20)

    def render(self, *renderables: Any) -> str:
        self._buffer.seek(0)
        self._buffer.truncate()
        self.console.print(*renderables, end="\n", soft_wrap=False)
        return self._buffer.getvalue()

    def markdown(self, source: str) -> str:
        """A block as rich renders it, without the blank lines rich puts around a table
        and the spaces it pads lines with (they would wrap when the terminal narrows)."""
        lines = [
            _TRAILING.sub(r"\1", line)
            for line in self.render(_Markdown(visible(source))).split("\n")
        ]
        while lines and not _VISIBLE.sub("", lines[0]).strip():
            lines.pop(0)
        while lines and not _VISIBLE.sub("", lines[-1]).strip():
            lines.pop()
        return "".join(line + "\n" for line in lines)

    def code(self, lines: tuple[str, ...] | list[str], language: str) -> str:
        return self.render(Padding(code_text(visible("\n".join(lines)), language), (0, 0, 0, 2)))

    def text(self, text: Any) -> str:
        """A rich Text (or plain str, made safe) as ANSI lines."""
        if isinstance(text, str):
            text = Text(visible(text))
        return self.render(text)
