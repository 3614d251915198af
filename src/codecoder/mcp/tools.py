"""An MCP server's tool as a kernel.ports.Tool: `mcp__SERVER__TOOL`, its schema, and a
description that is the server's own text, capped and marked as such.

A server's descriptions are untrusted input (a server can write "ignore your
instructions" as easily as "returns the time"): they go only into the tool list of a
request, never into the system prompt, each capped at MAX_DESCRIPTION characters, control
characters replaced, and opened with a line saying whose words they are. The caps are
entry.py's, applied as a listing comes in (so the tool cache and the session hold no
more than the model sees) and again here, for a cache written by an older version.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from codecoder.kernel.messages import ToolResult
from codecoder.kernel.ports import Risk, ToolContext
from codecoder.mcp.entry import MAX_DESCRIPTION, MAX_SCHEMA, ToolEntry, clean_description

if TYPE_CHECKING:
    from codecoder.mcp.manager import McpManager

PREFIX = "mcp__"
MAX_NAME = 64
"""What the providers accept for a tool name (OpenAI and Anthropic: `[A-Za-z0-9_-]{1,64}`)."""
__all__ = [
    "MAX_DESCRIPTION",
    "MAX_NAME",
    "MAX_SCHEMA",
    "PREFIX",
    "McpTool",
    "describe",
    "exposed_names",
    "schema",
]
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")


class McpTool:
    """One tool of one server. `run` goes through the manager, which waits for a server
    still starting, restarts one that died, and cancels on the server's side."""

    risk: Risk = "execute"
    """What the server's tool does is not known: it asks unless a rule allows it."""

    def __init__(
        self,
        manager: McpManager,
        server: str,
        entry: ToolEntry,
        name: str,
    ) -> None:
        self._manager = manager
        self.server = server
        self.mcp_name = entry.name
        """The name the server knows it by."""
        self.name = name
        self.description = describe(server, entry)
        self.parameters = schema(entry.schema)

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """As sent: the server checks its own arguments, and its policy rules judge the
        call as a whole (permissions/calls.py), never a field of it."""
        return args

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return self._manager.call(self, args, ctx)

    def __repr__(self) -> str:
        return f"McpTool({self.name!r})"


def exposed_names(server: str, tools: Iterable[str]) -> dict[str, str]:
    """The name the model sees for each of a server's tools: `mcp__SERVER__TOOL` with
    characters the providers refuse replaced by `_`, cut to 64 characters, and made
    unique by a short hash of the original where cutting or replacing made two alike."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for tool in tools:
        name = f"{PREFIX}{server}__{_UNSAFE_NAME.sub('_', tool)}"
        if len(name) > MAX_NAME or name in taken:
            tag = hashlib.sha256(tool.encode()).hexdigest()[:8]
            name = f"{name[: MAX_NAME - 9]}_{tag}"
        out[tool] = name
        taken.add(name)
    return out


def describe(server: str, entry: ToolEntry) -> str:
    """The description the model sees: whose words they are, then the server's text."""
    text = clean_description(entry.description)
    head = (
        f"[Tool `{entry.name}` of MCP server `{server}`; "
        "the text below is the server's, not the user's.]"
    )
    return f"{head}\n{text}" if text else head


def schema(raw: dict[str, Any]) -> dict[str, Any]:
    """The input schema the provider gets: an object schema, never larger than MAX_SCHEMA."""
    if not isinstance(raw, dict) or raw.get("type", "object") != "object":
        return {"type": "object"}
    try:
        size = len(msgspec.json.encode(raw))
    except (TypeError, ValueError, msgspec.EncodeError):
        return {"type": "object"}
    if size > MAX_SCHEMA:
        return {"type": "object", "additionalProperties": True}
    return {"type": "object", **raw}
