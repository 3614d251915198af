"""The MCP client (docs/mcp.md): tools of Model Context Protocol servers, offered to the
model as `mcp__SERVER__TOOL` and gated by the same permission chain as the built-ins.

The official `mcp` SDK is asyncio-only; the kernel runs on OS threads. So the SDK lives
on one event-loop thread of its own (`loop.LoopThread`), behind a thread-safe facade
(`manager.McpManager`) that the kernel sees only as a `kernel.ports.ToolSource` and its
tools as `kernel.ports.Tool`s. Who imports what:

    config      which servers a session starts (user config; a trusted project's, once
                the user approved that exact definition): no SDK
    cache       the tools each server offered last time (offered before it is up): no SDK
    manager     McpManager, the servers' states, the call path: no SDK
    tools       McpTool (kernel.ports.Tool), names, capped untrusted descriptions: no SDK
    loop        the event-loop thread: asyncio only
    session     everything that touches the SDK and anyio, imported on the loop thread
                only, once a server is configured (~1 s of import on this machine)
    stdio       the stdio transport (a child process in its own process group)

Nothing here is imported by a session that has no server configured.
"""
