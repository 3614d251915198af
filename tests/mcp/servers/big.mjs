// An MCP server of the TypeScript SDK (McpServer), whose responses end with their id
// ({"result":…,"jsonrpc":"2.0","id":7}): `big` answers with a text of 40 MiB, `pid`
// with its process id. argv[2] is the SDK's folder (in the tests' node_modules).
const sdk = process.argv[2];
const { McpServer } = await import(`${sdk}/dist/esm/server/mcp.js`);
const { StdioServerTransport } = await import(`${sdk}/dist/esm/server/stdio.js`);

const server = new McpServer({ name: "big", version: "1.0.0" });
server.registerTool("big", { description: "A text of 40 MiB" }, async () => ({
  content: [{ type: "text", text: "x".repeat(40 << 20) }],
}));
server.registerTool("pid", { description: "The server's pid" }, async () => ({
  content: [{ type: "text", text: `pid ${process.pid}` }],
}));
await server.connect(new StdioServerTransport());
