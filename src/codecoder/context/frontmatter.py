"""The `---`-delimited front matter of SKILL.md files and agent profiles, read as YAML.

PyYAML composes the block (libyaml's parser when it is there); we build the values from
its nodes, so every value is kept as text (no numbers, booleans or nulls, as YAML's
BaseLoader keeps them) and the typed getters say what a field must be. Refused besides
what YAML refuses: a duplicate key, a key that is not text, anchors and aliases (an alias
can make a tiny file a huge value), nesting deeper than 16 levels. yaml is imported by
`parse` once a file has front matter, so its ~8 ms are paid only when a SKILL.md or an
agent profile exists.

Every problem is a FrontMatterError naming the file and line, which callers turn into a
warning: a broken file is left out, it never breaks the prompt.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from yaml import MarkedYAMLError, Node

FrontMatterValue = str | list["FrontMatterValue"] | dict[str, "FrontMatterValue"]

_CLOSERS = ("---", "...")
_MAX_DEPTH = 16
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
        if isinstance(value, dict):
            raise self.error(key, f"`{key}` should be a list, not a mapping")
        names: list[str] = []
        for item in value:
            if not isinstance(item, str):
                raise self.error(key, f"`{key}` should be a list of names, not of a {_kind(item)}")
            if item:
                names.append(item)
        return tuple(names)

    def error(self, key: str, message: str) -> FrontMatterError:
        return FrontMatterError(self.source, self.lines.get(key, 1), message)


def _kind(value: FrontMatterValue) -> str:
    return "list" if isinstance(value, list) else "mapping" if isinstance(value, dict) else "text"


def parse(text: str, source: str) -> FrontMatter:
    """Split `text` into front matter and body. No opening `---` means no front matter."""
    rows = _split_lines(text.removeprefix("\ufeff"))
    if not rows or rows[0].rstrip() != "---":
        return FrontMatter(source=source, fields={}, body=text)
    close = next((i for i in range(1, len(rows)) if rows[i].rstrip() in _CLOSERS), None)
    if close is None:
        raise FrontMatterError(source, 1, "front matter opened here is never closed with `---`")
    block = rows[1:close]
    fields, lines = _Builder(source, block).document()
    return FrontMatter(source=source, fields=fields, body="".join(rows[close + 1 :]), lines=lines)


def _split_lines(text: str) -> list[str]:
    """Lines with their ends, split at \n only (str.splitlines also splits at U+2028 and
    other characters that may sit inside a value)."""
    parts = text.split("\n")
    rows = [part + "\n" for part in parts[:-1]]
    return [*rows, parts[-1]] if parts[-1] else rows


class _Builder:
    """The block's YAML nodes made into values; line numbers are the file's (the block
    starts on line 2)."""

    def __init__(self, source: str, block: list[str]) -> None:
        import yaml  # ~8 ms: only once a file with front matter exists

        self.yaml = yaml
        self.source = source
        self.block = block
        self.seen: set[int] = set()

    def document(self) -> tuple[dict[str, FrontMatterValue], dict[str, int]]:
        yaml = self.yaml
        loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
        try:
            root = yaml.compose("".join(self.block), Loader=loader)
        except yaml.MarkedYAMLError as exc:
            raise self._yaml_error(exc) from None
        except (yaml.YAMLError, RecursionError) as exc:  # no position: the first line
            raise FrontMatterError(self.source, 2, clip(str(exc))) from None
        if root is None:
            return {}, {}
        if not isinstance(root, yaml.MappingNode):
            found = clip(self.block[root.start_mark.line].strip())
            raise self.fail(root, f"expected `key: value` lines, found {found!r}")
        fields = self.value(root, 0)
        assert isinstance(fields, dict)
        lines = {key.value: 2 + key.start_mark.line for key, _ in root.value}
        return fields, lines

    def value(self, node: Node, depth: int) -> FrontMatterValue:
        yaml = self.yaml
        if id(node) in self.seen:
            raise self.fail(node, "anchors and aliases (`&name`, `*name`) are not supported")
        self.seen.add(id(node))
        if depth > _MAX_DEPTH:
            raise self.fail(node, f"nested more than {_MAX_DEPTH} levels deep")
        if isinstance(node, yaml.ScalarNode):
            return str(node.value)
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, depth + 1) for item in node.value]
        result: dict[str, FrontMatterValue] = {}
        for key, item in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise self.fail(key, "a key must be text")
            if key.value in result:
                raise self.fail(key, f"duplicate key `{clip(key.value)}`")
            result[key.value] = self.value(item, depth + 1)
        return result

    def fail(self, node: Node, message: str) -> FrontMatterError:
        return FrontMatterError(self.source, 2 + node.start_mark.line, message)

    def _yaml_error(self, exc: MarkedYAMLError) -> FrontMatterError:
        """YAML's problem on the line where it was found, or, when that is the end of the
        front matter (a quote or a bracket never closed), where the unclosed part began."""
        mark = exc.problem_mark
        if exc.context_mark is not None and (mark is None or mark.line >= len(self.block)):
            mark = exc.context_mark
        line = mark.line if mark is not None and mark.line < len(self.block) else 0
        problem = exc.problem or exc.context or "not YAML"
        found = clip(self.block[line].strip()) if self.block else ""
        return FrontMatterError(self.source, 2 + line, f"{problem} in {found!r}")


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
