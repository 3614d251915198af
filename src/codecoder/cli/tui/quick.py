"""The Markdown an answer is mostly made of, read without a parser: a paragraph, a
heading, a list whose items are one line each, a table, with `code`, **strong**,
*emphasis* and ~~strike~~ inside. The tokens are the ones markdown-it makes (types,
tags, nesting), so markdown.py renders both the same way; anything else (a link, an
underscore at a word's edge, an escape, an entity, HTML, a hard break, a quote, a list
item of several lines) returns None and goes to markdown-it.

Why: markdown-it's inline parser took ~0.2 ms a paragraph, half the time of rendering a
20,000-token answer; this takes a fraction of that. tests/cli/test_tui_markdown.py checks
that both render generated blocks alike.
"""

from __future__ import annotations

import re
from typing import Any

_ITEM = re.compile(r"( {0,12})([-*+]|\d{1,9}[.)])( {1,4})(\S.*)$")
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_BLOCK_START = re.compile(
    r" {0,3}(?:[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|#|>|```|~~~|<"
    r"|[-=*_][ \t]*[-=*_][ \t]*[-=*_])"
)
_DELIMITER_ROW = re.compile(r"\s*\|?\s*:?-+:?\s*(?:\|\s*:?-*:?\s*)*\|?\s*$")
_SPAN = re.compile(
    r"(?P<code>(`+)(?P<code_text>.+?)(?<!`)\2(?!`))"
    r"|\*\*(?P<strong>(?=\S).+?(?<=\S))\*\*(?!\*)"
    r"|(?<!\*)\*(?P<em>(?=[^\s*]).+?(?<=[^\s*]))\*(?!\*)"
    r"|~~(?P<strike>(?=\S).+?(?<=\S))~~"
)
_UNSURE = re.compile(r"[`*\[\]<\\&]|~~|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|!\[")


class Token:
    """The fields of markdown_it.token.Token that markdown.py reads."""

    __slots__ = ("attrs", "children", "content", "hidden", "info", "tag", "type")

    def __init__(
        self,
        type: str,
        tag: str = "",
        content: str = "",
        *,
        children: list[Token] | None = None,
        attrs: dict[str, Any] | None = None,
        hidden: bool = False,
    ) -> None:
        self.type = type
        self.tag = tag
        self.content = content
        self.children = children
        self.attrs = attrs or {}
        self.hidden = hidden
        self.info = ""

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {self.tag!r}, {self.content!r})"


def quick_tokens(source: str) -> list[Token] | None:
    """The block's tokens, or None when it is not of the simple kind."""
    lines = source.split("\n")
    tokens: list[Token] = []
    heading = _HEADING.match(lines[0])
    if heading is not None:
        inline = _inline(heading.group(2) or "")
        if inline is None:
            return None
        tag = f"h{len(heading.group(1))}"
        tokens += [Token("heading_open", tag), inline, Token("heading_close", tag)]
        lines = lines[1:]
        if not lines:
            return tokens
    if _ITEM.match(lines[0]):
        listed = _list(lines)
        return None if listed is None else tokens + listed
    if not tokens and len(lines) > 1 and "|" in lines[0] and _DELIMITER_ROW.match(lines[1]):
        return _table(lines)
    paragraph = _paragraph(lines)
    return None if paragraph is None else tokens + paragraph


def _paragraph(lines: list[str]) -> list[Token] | None:
    if lines[0].startswith("    ") or lines[0].startswith("\t"):
        return None  # indented code
    for index, line in enumerate(lines):
        if _BLOCK_START.match(line) or not line.strip():
            return None
        if index < len(lines) - 1 and (line.endswith("  ") or line.endswith("\\")):
            return None  # a hard break
        if "|" in line and index + 1 < len(lines) and _DELIMITER_ROW.match(lines[index + 1]):
            return None  # a table
    inline = _inline("\n".join(line.strip() for line in lines))
    if inline is None:
        return None
    return [Token("paragraph_open", "p"), inline, Token("paragraph_close", "p")]


def _cells(line: str) -> list[str] | None:
    stripped = line.strip()
    if "\\" in stripped or "`" in stripped:
        return None  # an escaped pipe, a pipe inside code: left to markdown-it
    stripped = stripped.removeprefix("|")
    stripped = stripped.removesuffix("|")
    return [cell.strip() for cell in stripped.split("|")]


def _table(lines: list[str]) -> list[Token] | None:
    head = _cells(lines[0])
    rule = _cells(lines[1])
    if head is None or rule is None or len(head) != len(rule) or not lines[0].strip():
        return None
    aligns = []
    for cell in rule:
        left, right = cell.startswith(":"), cell.endswith(":")
        aligns.append("center" if left and right else "right" if right else "left" if left else "")
    header = _row(head, aligns, "th")
    if header is None:
        return None
    tokens = [Token("table_open", "table"), Token("thead_open", "thead"), *header]
    tokens.append(Token("thead_close", "thead"))
    body = lines[2:]
    if body:
        tokens.append(Token("tbody_open", "tbody"))
        for line in body:
            cells = _cells(line) if line.strip() and "|" in line else None
            row = _row((cells + [""] * len(head))[: len(head)], aligns, "td") if cells else None
            if row is None:
                return None
            tokens += row
        tokens.append(Token("tbody_close", "tbody"))
    tokens.append(Token("table_close", "table"))
    return tokens


def _row(cells: list[str], aligns: list[str], tag: str) -> list[Token] | None:
    out = [Token("tr_open", "tr")]
    for cell, align in zip(cells, aligns, strict=True):
        inline = _inline(cell)
        if inline is None:
            return None
        attrs = {"style": f"text-align:{align}"} if align else {}
        out += [Token(f"{tag}_open", tag, attrs=attrs), inline, Token(f"{tag}_close", tag)]
    return [*out, Token("tr_close", "tr")]


class _List:
    def __init__(self, indent: int, offset: int, marker: str) -> None:
        self.indent = indent
        self.offset = offset  # where an item's text begins: a child list indents to it
        self.marker = marker
        self.items: list[tuple[str, list[_List]]] = []

    @property
    def ordered(self) -> bool:
        return self.marker[0].isdigit()


def _list(lines: list[str]) -> list[Token] | None:
    roots: list[_List] = []
    stack: list[_List] = []
    for line in lines:
        item = _ITEM.match(line)
        if item is None:
            return None
        spaces, marker, gap, text = item.groups()
        indent = len(spaces)
        while stack and indent < stack[-1].indent:
            stack.pop()
        offset = indent + len(marker) + len(gap)
        if stack and indent == stack[-1].indent:
            current = stack[-1]
            if not _same_kind(current.marker, marker):
                return None  # another list begins: left to markdown-it
            current.offset = offset
        elif stack and indent >= stack[-1].offset:
            if marker[0].isdigit() and int(marker[:-1]) != 1:
                return None  # it cannot interrupt the item's text: a lazy line, markdown-it's
            current = _List(indent, offset, marker)
            stack[-1].items[-1][1].append(current)
            stack.append(current)
        elif not stack and indent <= 3 and not roots:
            current = _List(indent, offset, marker)
            roots.append(current)
            stack.append(current)
        else:
            return None
        current.items.append((text.rstrip(), []))
    tokens: list[Token] = []
    for root in roots:
        if not _emit(root, tokens):
            return None
    return tokens


def _same_kind(first: str, other: str) -> bool:
    if first[0].isdigit() != other[0].isdigit():
        return False
    return first[-1] == other[-1]  # the same bullet, or the same `.` or `)`


def _emit(node: _List, tokens: list[Token]) -> bool:
    if node.ordered:
        start = int(node.marker[:-1])
        attrs = {"start": start} if start != 1 else {}
        kind = "ordered_list"
        tag = "ol"
    else:
        attrs, kind, tag = {}, "bullet_list", "ul"
    tokens.append(Token(f"{kind}_open", tag, attrs=attrs))
    for text, children in node.items:
        inline = _inline(text)
        if inline is None:
            return False
        tokens += [
            Token("list_item_open", "li"),
            Token("paragraph_open", "p", hidden=True),
            inline,
            Token("paragraph_close", "p", hidden=True),
        ]
        for child in children:
            if not _emit(child, tokens):
                return False
        tokens.append(Token("list_item_close", "li"))
    tokens.append(Token(f"{kind}_close", tag))
    return True


def _inline(text: str) -> Token | None:
    children = _spans(text)
    return None if children is None else Token("inline", children=children)


def _spans(text: str) -> list[Token] | None:
    out: list[Token] = []
    position = 0
    for match in _SPAN.finditer(text):
        if not _plain(text[position : match.start()], out):
            return None
        kind = match.lastgroup
        if match.group("code") is not None:
            out.append(Token("code_inline", "code", _code(match.group("code_text"))))
        else:
            inner = _spans(match.group(kind or ""))
            if inner is None:
                return None
            name = {"strong": ("strong", "strong"), "em": ("em", "em"), "strike": ("s", "s")}
            token, tag = name[kind or ""]
            out += [Token(f"{token}_open", tag), *inner, Token(f"{token}_close", tag)]
        position = match.end()
    if not _plain(text[position:], out):
        return None
    return out


def _plain(text: str, out: list[Token]) -> bool:
    """Text without markup, split at line ends (soft breaks); False if it holds any
    markup character this reader does not handle."""
    if not text:
        return True
    if _UNSURE.search(text):
        return False
    for index, line in enumerate(text.split("\n")):
        if index:
            out.append(Token("softbreak", "br"))
        if line:
            out.append(Token("text", "", line))
    return True


def _code(text: str) -> str:
    text = text.replace("\n", " ")
    if len(text) > 2 and text[0] == " " and text[-1] == " " and text.strip():
        return text[1:-1]
    return text
