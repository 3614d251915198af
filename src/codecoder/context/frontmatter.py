"""The `---`-delimited front matter of SKILL.md files and agent profiles.

A small line-based reader for the part of YAML these files use — `key: value`, quoted
strings, `[a, b]` and `- item` lists, `|`/`>` blocks, one level of nested mapping — so
that no YAML library has to be installed or imported at start-up. Every value is kept as
text (no numbers, booleans or nulls); the typed getters say what a field must be.
Anything else is reported as a FrontMatterError naming the file and line, which callers
turn into a warning: a broken file is left out, it never breaks the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec

FrontMatterValue = str | list[str] | dict[str, "FrontMatterValue"]

_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*))?$")
_ITEM = re.compile(r"-(?:\s+(.*))?$")
_LOOKS_LIKE_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\s*:(\s|$)")
_ESCAPES = {"\\": "\\", '"': '"', "/": "/", "n": "\n", "t": "\t", "r": "\r", "0": "\0"}
_CLOSERS = ("---", "...")
QUOTE_CAP = 80
"""Characters of a file's text an error message quotes: errors become warnings in the
prompt, and a line may be 32 KiB long."""


def clip(text: str) -> str:
    """At most QUOTE_CAP characters of `text`, ending in `…` when cut."""
    return text if len(text) <= QUOTE_CAP else text[: QUOTE_CAP - 1] + "…"


class FrontMatterError(Exception):
    """Front matter that cannot be read; `str()` is `SOURCE:LINE: message`."""

    def __init__(self, source: str, line: int, message: str) -> None:
        super().__init__(f"{source}:{line}: {message}")
        self.source = source
        self.line = line
        self.message = message


_Fail = Callable[[str], FrontMatterError]


class FrontMatter(msgspec.Struct, frozen=True):
    """The fields of a file's front matter, the line each key is on, and the body."""

    source: str
    fields: dict[str, FrontMatterValue]
    body: str
    lines: dict[str, int] = msgspec.field(default_factory=dict)

    def text(self, key: str) -> str | None:
        """A text field, None when absent."""
        value = self.fields.get(key)
        if value is None or isinstance(value, str):
            return value
        raise self.error(key, f"`{key}` should be text, not a {_kind(value)}")

    def names(self, key: str) -> tuple[str, ...] | None:
        """A list of names: `[a, b]`, `- a` lines, or `a, b` (Claude Code's form)."""
        value = self.fields.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, list):
            return tuple(item for item in value if item)
        raise self.error(key, f"`{key}` should be a list, not a {_kind(value)}")

    def error(self, key: str, message: str) -> FrontMatterError:
        return FrontMatterError(self.source, self.lines.get(key, 1), message)


def _kind(value: FrontMatterValue) -> str:
    return "list" if isinstance(value, list) else "mapping"


def parse(text: str, source: str) -> FrontMatter:
    """Split `text` into front matter and body. No opening `---` means no front matter."""
    rows = _split_lines(text.removeprefix("\ufeff"))
    if not rows or rows[0].rstrip() != "---":
        return FrontMatter(source=source, fields={}, body=text)
    close = next((i for i in range(1, len(rows)) if rows[i].rstrip() in _CLOSERS), None)
    if close is None:
        raise FrontMatterError(source, 1, "front matter opened here is never closed with `---`")
    block = [(number, row.rstrip("\r\n")) for number, row in enumerate(rows[1:close], start=2)]
    reader = _Reader(block, source)
    fields = reader.mapping(0)
    body = "".join(rows[close + 1 :])
    return FrontMatter(source=source, fields=fields, body=body, lines=reader.key_lines)


def _split_lines(text: str) -> list[str]:
    """Lines with their ends, split at \n only (str.splitlines also splits at U+2028 and
    other characters that may sit inside a value)."""
    parts = text.split("\n")
    rows = [part + "\n" for part in parts[:-1]]
    return [*rows, parts[-1]] if parts[-1] else rows


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


class _Reader:
    """Reads the block's lines top to bottom; each method consumes what it parsed."""

    def __init__(self, block: list[tuple[int, str]], source: str) -> None:
        self.block = block
        self.source = source
        self.pos = 0
        self.key_lines: dict[str, int] = {}

    def fail(self, number: int, message: str) -> FrontMatterError:
        return FrontMatterError(self.source, number, message)

    def peek(self) -> tuple[int, str] | None:
        """The next line that is not blank or a comment (skipping those)."""
        while self.pos < len(self.block) and _blank(self.block[self.pos][1]):
            self.pos += 1
        return self.block[self.pos] if self.pos < len(self.block) else None

    def mapping(self, indent: int) -> dict[str, FrontMatterValue]:
        result: dict[str, FrontMatterValue] = {}
        while (row := self.peek()) is not None:
            number, line = row
            if line.startswith("\t"):
                raise self.fail(number, "tabs are not allowed for indentation; use spaces")
            if _indent(line) < indent:
                break
            if _indent(line) > indent:
                raise self.fail(number, "unexpected indentation")
            match = _KEY.match(line.strip())
            if match is None:
                raise self.fail(number, f"expected `key: value`, found {clip(line.strip())!r}")
            key = match.group(1)
            if key in result:
                raise self.fail(number, f"duplicate key `{clip(key)}`")
            self.pos += 1
            if indent == 0:
                self.key_lines[key] = number
            result[key] = self.value(number, indent, (match.group(2) or "").strip())
        return result

    def value(self, number: int, indent: int, rest: str) -> FrontMatterValue:
        if rest.startswith("#"):
            rest = ""
        if rest.startswith("["):
            return self.flow_list(number, rest)
        if rest.startswith("{"):
            raise self.fail(number, "`{…}` mappings are not supported; use indented lines")
        if rest[:1] in ("|", ">") and rest.lstrip("|>+-") == "":
            return self.block_scalar(indent, folded=rest.startswith(">"))
        if rest:
            return self.scalar(number, indent, rest)
        following = self.peek()
        if following is None:
            return ""
        inner = _indent(following[1])
        if _ITEM.match(following[1].strip()) and inner >= indent:
            return self.item_list(inner)
        if inner > indent:
            return self.mapping(inner)
        return ""

    def scalar(self, number: int, indent: int, rest: str) -> str:
        if rest[0] in "\"'":
            return _quoted(rest, self.fail_at(number))
        parts = [_strip_comment(rest)]
        while self.pos < len(self.block):
            next_number, line = self.block[self.pos]
            if _blank(line) or _indent(line) <= indent:
                break
            if _LOOKS_LIKE_KEY.match(line.strip()):
                raise self.fail(next_number, "unexpected indentation")
            parts.append(_strip_comment(line.strip()))
            self.pos += 1
        return " ".join(parts)

    def block_scalar(self, indent: int, *, folded: bool) -> str:
        lines: list[str] = []
        while self.pos < len(self.block):
            line = self.block[self.pos][1]
            if line.strip() and _indent(line) <= indent:
                break
            lines.append(line)
            self.pos += 1
        while lines and not lines[-1].strip():
            lines.pop()
        depth = min((_indent(line) for line in lines if line.strip()), default=0)
        text = [line[depth:] for line in lines]
        if folded:
            return " ".join(part.strip() for part in text if part.strip())
        return "\n".join(text)

    def item_list(self, indent: int) -> list[str]:
        items: list[str] = []
        while (row := self.peek()) is not None and _indent(row[1]) == indent:
            number, line = row
            match = _ITEM.match(line.strip())
            if match is None:
                break
            self.pos += 1
            rest = (match.group(1) or "").strip()
            if _LOOKS_LIKE_KEY.match(rest) or rest.startswith(("[", "{", "- ")):
                raise self.fail(number, "only simple list items (text) are supported")
            items.append(self.scalar(number, indent, rest) if rest else "")
        return items

    def flow_list(self, number: int, rest: str) -> list[str]:
        fail = self.fail_at(number)
        inner, close = _split_flow(rest[1:], fail)
        if _strip_comment(rest[1 + close + 1 :]):
            raise fail("unexpected text after `]`")
        items = [item.strip() for item in inner]
        if items and not items[-1]:
            items.pop()
        if any(not item for item in items):
            raise fail("empty item in `[…]` list")
        return [_quoted(item, fail) if item[0] in "\"'" else item for item in items]

    def fail_at(self, number: int) -> _Fail:
        return lambda message: self.fail(number, message)


def _strip_comment(text: str) -> str:
    """Plain scalars end at ` #` (YAML's comment rule)."""
    cut = text.find(" #")
    return (text[:cut] if cut >= 0 else text).strip()


def _split_flow(text: str, fail: _Fail) -> tuple[list[str], int]:
    """Items of `a, "b, c"]` and the index of the closing bracket."""
    items: list[str] = []
    start = 0
    quote = ""
    escaped = False
    for index, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif quote == '"' and char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == ",":
            items.append(text[start:index])
            start = index + 1
        elif char in "[{":
            raise fail("nested lists and mappings are not supported")
        elif char == "]":
            items.append(text[start:index])
            return items, index
    raise fail("`[` is never closed on this line")


def _quoted(text: str, fail: _Fail) -> str:
    """A quoted scalar that must end on its line (only a comment may follow)."""
    quote = text[0]
    value, end = _double(text, fail) if quote == '"' else _single(text, fail)
    if _strip_comment(text[end:]):
        raise fail(f"unexpected text after the closing {quote}")
    return value


def _double(text: str, fail: _Fail) -> tuple[str, int]:
    out: list[str] = []
    index = 1
    while index < len(text):
        char = text[index]
        if char == '"':
            return "".join(out), index + 1
        if char == "\\":
            escape = text[index + 1 : index + 2]
            if escape not in _ESCAPES:
                raise fail(f"unknown escape \\{escape} in a quoted string")
            out.append(_ESCAPES[escape])
            index += 2
            continue
        out.append(char)
        index += 1
    raise fail('a quoted string is never closed with "')


def _single(text: str, fail: _Fail) -> tuple[str, int]:
    out: list[str] = []
    index = 1
    while index < len(text):
        if text[index] == "'":
            if text[index + 1 : index + 2] == "'":
                out.append("'")
                index += 2
                continue
            return "".join(out), index + 1
        out.append(text[index])
        index += 1
    raise fail("a quoted string is never closed with '")


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")


class Named(msgspec.Struct, frozen=True):
    """A skill's or profile's identity: the name the model calls it by, and the one-line
    description it chooses by."""

    name: str
    description: str
    front: FrontMatter


def parse_named(text: str, source: str, default_name: str) -> Named:
    """Front matter with a `description` (required) and a `name` (default: the folder or
    file name) made of letters, digits, `-`, `_` and `.`."""
    front = parse(text, source)
    name = (front.text("name") or default_name).strip()
    if not _NAME.match(name):
        raise front.error(
            "name", f"name {clip(name)!r} must be 1-64 letters, digits, '-', '_' or '.'"
        )
    description = " ".join((front.text("description") or "").split())
    if not description:
        raise front.error("description", "a `description` is required in the front matter")
    return Named(name=name, description=description, front=front)
