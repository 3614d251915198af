"""An MCP server of the Python SDK (MCPServer) that sends more than a line may hold:
`big` answers with a text of MIB MiB, `shout` first logs one that long (a notification,
no answer to anything); `echo` is the proof it is still the same server."""

from __future__ import annotations

import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("big")


@server.tool()
def big(mib: int) -> str:
    """A text of `mib` MiB."""
    return "x" * (mib << 20)


@server.tool()
async def shout(mib: int, ctx: Context) -> str:
    """Log a message of `mib` MiB, then answer briefly."""
    await ctx.info("y" * (mib << 20))
    return "shouted"


@server.tool()
def echo(message: str) -> str:
    """The message back, with the server's pid."""
    return f"Echo: {message} from {os.getpid()}"


if __name__ == "__main__":
    server.run("stdio")
