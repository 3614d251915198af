"""One tool of an MCP server as we keep it, capped where it comes in (`intake`).

A server's tool list is untrusted and, as sent, nearly unbounded: a page may be a line of
32 MiB (stdio.py) and a listing a hundred pages. What is kept of it is held for the
session, offered to the model and written to the tool cache (cache.py) that every start
reads; so the caps the model's view needs are applied once, here, before any of that:
a description of at most MAX_DESCRIPTION characters, a schema of at most MAX_SCHEMA bytes
(as JSON) and MAX_SCHEMA_DEPTH levels, at most MAX_TOOLS tools and MAX_LISTING bytes of
them all per server. A tool whose name is longer than MAX_TOOL_NAME is left out (it could
not be called by a cut name).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

MAX_DESCRIPTION = 1024
MAX_SCHEMA = 16 * 1024
"""A schema larger than this (as JSON) is replaced by a plain object schema."""
MAX_SCHEMA_DEPTH = 32
"""Nor may a schema nest deeper than this (objects and arrays)."""
MAX_TOOL_NAME = 256
MAX_TOOLS = 500
"""Tools kept of one server's listing; the rest are left out (and no page past them read)."""
MAX_LISTING = 1024 * 1024
"""Bytes kept of one server's listing (names, descriptions and schemas as JSON)."""
OPEN_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": True}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class ToolEntry(msgspec.Struct, frozen=True):
    """One tool as the server described it, capped (`intake`); its text is still the
    server's, not ours, and is marked as such where the model sees it (tools.py)."""

    name: str
    description: str = ""
    schema: dict[str, Any] = {}

    def size(self) -> int:
        """What the entry costs towards MAX_LISTING."""
        return len(self.name) + len(self.description) + len(msgspec.json.encode(self.schema))


def clean_description(raw: str) -> str:
    """At most MAX_DESCRIPTION characters, control characters (and bidi controls)
    replaced. The raw text is cut first, so a 30 MB description is never scanned."""
    text = _CONTROL.sub(" ", raw[: 4 * MAX_DESCRIPTION]).strip()
    if len(text) > MAX_DESCRIPTION:
        text = text[: MAX_DESCRIPTION - 1].rstrip() + "…"
    return text


def capped_schema(raw: object) -> dict[str, Any]:
    """The schema as sent when it is a JSON object within MAX_SCHEMA_DEPTH and
    MAX_SCHEMA; else OPEN_SCHEMA (any arguments: the server checks its own)."""
    if not isinstance(raw, dict):
        return {}  # tools.schema makes it {"type": "object"}
    if not _shallow(raw):
        return dict(OPEN_SCHEMA)
    try:
        size = len(msgspec.json.encode(raw))
    except (TypeError, ValueError, msgspec.EncodeError):
        return dict(OPEN_SCHEMA)
    return raw if size <= MAX_SCHEMA else dict(OPEN_SCHEMA)


def _shallow(raw: dict[str, Any]) -> bool:
    """No deeper than MAX_SCHEMA_DEPTH and no more nodes than MAX_SCHEMA bytes could hold;
    walked without recursion, and given up as soon as either is passed."""
    stack: list[tuple[object, int]] = [(raw, 1)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if depth > MAX_SCHEMA_DEPTH or nodes > MAX_SCHEMA:
            return False
        if isinstance(value, dict | list) and len(value) > MAX_SCHEMA:
            return False
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
    return True


def intake(name: str, description: str, schema: object) -> ToolEntry | None:
    """The entry kept for a tool as a server sent it; None for one left out."""
    if not name or len(name) > MAX_TOOL_NAME:
        return None
    return ToolEntry(name, clean_description(description), capped_schema(schema))


class Listing:
    """A server's tools as its pages come in, kept within MAX_TOOLS and MAX_LISTING."""

    def __init__(self) -> None:
        self.tools: list[ToolEntry] = []
        self.left_out = 0
        self._size = 0

    @property
    def full(self) -> bool:
        """No further tool would be kept: reading more pages is pointless."""
        return len(self.tools) >= MAX_TOOLS or self._size >= MAX_LISTING

    def add(self, name: str, description: str, schema: object) -> None:
        entry = intake(name, description, schema)
        if entry is None or self.full or self._size + entry.size() > MAX_LISTING:
            self.left_out += 1
            return
        self.tools.append(entry)
        self._size += entry.size()
