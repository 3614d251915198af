"""An MCP server of the Python SDK (the low-level Server) with one tool, `lookup`, whose
result is JSON spread over several lines, as many servers answer."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
}


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    tool = types.Tool(name="lookup", description="Finds records.", input_schema=SCHEMA)
    return types.ListToolsResult(tools=[tool])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    found = {"found": 2, "records": ["alpha", "beta"], "query": (params.arguments or {})}
    text = json.dumps(found, indent=2)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("lookup", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
