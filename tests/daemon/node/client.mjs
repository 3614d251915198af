// A real ACP client we did not write: the official TypeScript SDK
// (@agentclientprotocol/sdk, its stable v1 client app, the successor of the
// ClientSideConnection removed in 2.4) drives `codecoder acp` over the child's stdio.
//
//   node client.mjs SCRIPT WORKSPACE
//
// It runs initialize, session/new, a prompt turn whose tool call needs permission
// (answered by the SDK client's session/request_permission handler), then a turn it
// cancels while the model is silent, and prints one JSON summary line on stdout for
// tests/daemon/test_node_client.py. The agent is `$CODECODER_PYTHON -m codecoder acp`.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [scriptPath, workspace] = process.argv.slice(2);
const python = process.env.CODECODER_PYTHON || "python3";
const child = spawn(python, ["-m", "codecoder", "acp", "--script", scriptPath], {
  cwd: workspace,
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));

const summary = {
  sdk: "@agentclientprotocol/sdk",
  protocolVersion: null,
  agentName: null,
  modes: [],
  permissions: [],
  updates: [],
  extensions: [],
  stops: [],
  cancelMs: null,
  exitCode: null,
};

let turn = 0;
let chunkSeen = () => {};

const app = acp
  .client({ name: "codecoder-node-test" })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    summary.permissions.push({
      turn,
      toolCallId: params.toolCall.toolCallId,
      title: params.toolCall.title ?? null,
      kind: params.toolCall.kind ?? null,
      options: params.options.map((o) => `${o.optionId}:${o.kind}`),
    });
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const update = params.update;
    const entry = { turn, kind: update.sessionUpdate };
    if (update.toolCallId) entry.toolCallId = update.toolCallId;
    if (update.status) entry.status = update.status;
    if (update.title) entry.title = update.title;
    if (update.content && !Array.isArray(update.content)) entry.text = update.content.text;
    summary.updates.push(entry);
    if (update.sessionUpdate === "agent_message_chunk") chunkSeen();
  })
  .onNotification("*", ({ method }) => {
    if (!summary.extensions.includes(method)) summary.extensions.push(method);
  });

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

try {
  await app.connectWith(stream, async (agent) => {
    const init = await agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    summary.protocolVersion = init.protocolVersion;
    summary.agentName = init.agentInfo?.name ?? null;

    const session = await agent.request(acp.methods.agent.session.new, {
      cwd: workspace,
      mcpServers: [],
    });
    summary.modes = (session.modes?.availableModes ?? []).map((m) => m.id);
    const sessionId = session.sessionId;

    turn = 1;
    const first = await agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Make a build folder." }],
    });
    summary.stops.push(first.stopReason);

    turn = 2;
    const chunk = new Promise((resolve) => {
      chunkSeen = resolve;
    });
    const second = agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Now something long." }],
    });
    await chunk;
    const sent = performance.now();
    await agent.notify(acp.methods.agent.session.cancel, { sessionId });
    const stopped = await second;
    summary.cancelMs = Math.round(performance.now() - sent);
    summary.stops.push(stopped.stopReason);
  });
} catch (error) {
  summary.error = String(error?.stack ?? error);
}
child.stdin.end();
summary.exitCode = await exited;
process.stdout.write(JSON.stringify(summary) + "\n");
