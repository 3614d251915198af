"""An MCP server of the Python SDK (the low-level Server) whose tool list is as big as it
is told, to show what a client keeps of it:

    many_tools.py PAGES TOOLS_PER_PAGE DESCRIPTION_BYTES SCHEMA

Every page but the last has a next cursor. SCHEMA is `plain` (one property), `wide` (4,096
properties) or `deep` (objects nested 100 levels)."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PAGES, PER_PAGE, DESCRIPTION = (int(arg) for arg in sys.argv[1:4])
SCHEMA_KIND = sys.argv[4]


def schema() -> dict[str, Any]:
    if SCHEMA_KIND == "wide":
        return {
            "type": "object",
            "properties": {f"p{n}": {"type": "string"} for n in range(4096)},
        }
    if SCHEMA_KIND == "deep":
        inner: dict[str, Any] = {"type": "string"}
        for _ in range(50):
            inner = {"type": "object", "properties": {"x": inner}}
        return inner
    return {"type": "object", "properties": {"x": {"type": "string"}}}


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    page = int(params.cursor) if params is not None and params.cursor else 0
    description = "d" * DESCRIPTION
    tools = [
        types.Tool(name=f"t{page}_{n}", description=description, input_schema=schema())
        for n in range(PER_PAGE)
    ]
    more = str(page + 1) if page + 1 < PAGES else None
    return types.ListToolsResult(tools=tools, next_cursor=more)


server = Server("many", on_list_tools=list_tools)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
