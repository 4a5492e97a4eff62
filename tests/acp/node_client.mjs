// The ACP scenario of tests/acp once more, from the npm SDK's client (@agentclientprotocol/sdk),
// so two independent implementations agree on `totem acp`.
//
//   node node_client.mjs SCENARIO.json   (beside a node_modules holding the SDK)
//
// SCENARIO.json: {agent: [argv...], env: {...}, cwd, project, marker, mcp: {name, command, args, env}}.
// The model's replies are scripted by the Python test; this script only plays the editor and
// prints what it saw as one JSON object on stdout: every update, permission request and answer.
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const scenario = JSON.parse(readFileSync(process.argv[2], "utf8"));
const report = { initialize: null, sessionId: null, prompts: [], permissions: [], updates: [], writes: [], replay: [], leftRunning: null, terminals: [], traffic: [] };
const buffers = new Map(); // the editor's unsaved buffers: what fs/write_text_file wrote
const terminals = new Map(); // the editor's terminals: id -> {child, output, exit, closed, seen}
let answers = [];

function startAgent() {
  const child = spawn(scenario.agent[0], scenario.agent.slice(1), {
    cwd: scenario.cwd, env: scenario.env, stdio: ["pipe", "pipe", "inherit"],
  });
  return { child, stream: recorded(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout))) };
}

// The connection's messages, both ways, into report.traffic as [sender, message]: the Python
// test checks each against ACP's JSON schema.
function recorded(stream) {
  const tap = (sender) => new TransformStream({ transform(message, out) { report.traffic.push([sender, message]); out.enqueue(message); } });
  const outgoing = tap("client");
  outgoing.readable.pipeTo(stream.writable);
  return { readable: stream.readable.pipeThrough(tap("agent")), writable: outgoing.writable };
}

function editor(updates) {
  return acp.client({ name: "node-editor" })
    .onNotification(acp.methods.client.session.update, ({ params }) => { updates.push(params.update); })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      const answer = answers.shift() ?? "reject_once";
      report.permissions.push({ toolCall: params.toolCall, options: params.options.map((o) => o.optionId), answer });
      return { outcome: { outcome: "selected", optionId: answer } };
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      if (buffers.has(params.path)) return { content: buffers.get(params.path) };
      return { content: readFileSync(params.path, "utf8") };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      report.writes.push({ path: params.path, content: params.content });
      buffers.set(params.path, params.content);
      return {};
    })
    .onRequest(acp.methods.client.terminal.create, ({ params }) => {
      const terminalId = `node-term-${terminals.size + 1}`;
      const child = spawn(params.command, params.args ?? [], { cwd: params.cwd, stdio: ["ignore", "pipe", "pipe"], detached: true });
      const seen = { terminalId, command: params.command, args: params.args, cwd: params.cwd, outputByteLimit: params.outputByteLimit, calls: ["create"] };
      const terminal = { child, output: "", exit: null, seen };
      child.stdout.on("data", (data) => { terminal.output += data; });
      child.stderr.on("data", (data) => { terminal.output += data; });
      // "close": the process ended and its output has all been read.
      terminal.closed = new Promise((resolve) => child.on("close", (code, signal) => { terminal.exit = { exitCode: code, signal }; resolve(); }));
      terminals.set(terminalId, terminal);
      report.terminals.push(seen);
      return { terminalId };
    })
    .onRequest(acp.methods.client.terminal.output, ({ params }) => {
      const terminal = terminals.get(params.terminalId);
      terminal.seen.calls.push("output");
      return { output: terminal.output, truncated: false, exitStatus: terminal.exit };
    })
    .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
      const terminal = terminals.get(params.terminalId);
      await terminal.closed;
      return terminal.exit;
    })
    .onRequest(acp.methods.client.terminal.kill, async ({ params }) => {
      const terminal = terminals.get(params.terminalId);
      terminal.seen.calls.push("kill");
      await kill(terminal);
      return {};
    })
    .onRequest(acp.methods.client.terminal.release, async ({ params }) => {
      const terminal = terminals.get(params.terminalId);
      terminal.seen.calls.push("release");
      await kill(terminal);
      return {};
    });
}

async function kill(terminal) {
  if (terminal.exit !== null) return;
  try { process.kill(-terminal.child.pid, "SIGKILL"); } catch { /* gone meanwhile */ }
  await terminal.closed;
}

function running(marker) {
  const found = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmdline.includes(marker) && !cmdline.includes("node_client")) found.push(cmdline);
    } catch { /* gone meanwhile */ }
  }
  return found;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const messageText = () => report.updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");

const capabilities = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };
const first = startAgent();
await editor(report.updates).connectWith(first.stream, async (agent) => {
  report.initialize = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: capabilities, clientInfo: { name: "node-editor", version: "1" },
  });
  const mcp = scenario.mcp;
  const created = await agent.request(acp.methods.agent.session.new, {
    cwd: scenario.project,
    mcpServers: [{ name: mcp.name, command: mcp.command, args: mcp.args, env: Object.entries(mcp.env).map(([name, value]) => ({ name, value })) }],
  });
  const sessionId = created.sessionId;
  report.sessionId = sessionId;
  const prompt = async (text) => {
    try {
      const response = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
      report.prompts.push({ text, stopReason: response.stopReason });
    } catch (error) {
      report.prompts.push({ text, error: String(error?.message ?? error) });
    }
  };

  answers = ["allow_once", "allow_once", "allow_once"]; // the MCP server's start, the edit, the server's tool
  await prompt("say hello and shout it");
  answers = ["reject_once"];
  await prompt("write new.txt");
  answers = ["allow_once"];
  await prompt("compute it in the terminal");
  answers = ["allow_once"];
  const cancelled = prompt("start the server");
  while (!messageText().includes("The server is up and")) await sleep(20);
  await agent.notify(acp.methods.agent.session.cancel, { sessionId });
  await cancelled;
  for (let i = 0; i < 250 && running(scenario.marker).length; i++) await sleep(20);
  report.leftRunning = running(scenario.marker);
});
first.child.stdin.end();
await new Promise((resolve) => first.child.on("exit", resolve));

const second = startAgent();
await editor(report.replay).connectWith(second.stream, async (agent) => {
  await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: capabilities });
  await agent.request(acp.methods.agent.session.load, { sessionId: report.sessionId, cwd: scenario.project, mcpServers: [] });
});
second.child.stdin.end();
await new Promise((resolve) => second.child.on("exit", resolve));
process.stdout.write(JSON.stringify(report) + "\n");
