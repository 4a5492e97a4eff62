// The protocol client and the chat state against a real `totem lsp` (Node's test runner).

import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { ChatState } from "../src/chatState";
import { PROTOCOL_VERSION, TotemEvent, protocolWarning, serverProtocolVersion } from "../src/protocol";
import { viewModel } from "../src/render";
import { startServer, Server } from "./support/server";
import { textReply, toolReply } from "./support/modelServer";

describe("TotemClient against totem lsp", () => {
  let server: Server;
  const events: TotemEvent[] = [];
  const state = new ChatState();

  before(async () => {
    server = await startServer();
    server.totem.onEvent((e) => {
      events.push(e);
      state.apply(e);
    });
  });

  after(async () => {
    await server?.close();
  });

  it("speaks protocol version 1", () => {
    assert.equal(serverProtocolVersion(server.initializeResult), PROTOCOL_VERSION);
    assert.equal(protocolWarning(server.initializeResult), undefined);
    assert.deepEqual(server.initializeResult.capabilities.executeCommandProvider.commands, [
      "totem.server.ask",
      "totem.server.abort",
      "totem.server.undo",
      "totem.server.redo",
    ]);
  });

  it("streams a turn with an edit the user allows, into the chat state", async () => {
    const file = path.join(server.project, "app.py");
    fs.writeFileSync(file, "print('old')\nx = 1\n");
    server.model.enqueue(toolReply([["edit", { path: "app.py", old_string: "print('old')", new_string: "print('new')" }]], "Let me change app.py."));
    server.model.enqueue(textReply("Changed **app.py**.", "The user wants a new print."));
    server.ui.permissionAnswers.push({ outcome: "allow_once" });

    state.beginTurn("Change the print", "app.py");
    const result = await server.totem.chat({ text: "Change the print", context: { uri: pathToFileURL(file).toString() } });

    assert.equal(result.stopReason, "finished");
    assert.equal(result.text, "Let me change app.py.\n\nChanged **app.py**.");
    assert.equal(fs.readFileSync(file, "utf8"), "print('new')\nx = 1\n");
    // The permission carried the diff and the proposed text.
    assert.equal(server.ui.permissions.length, 1);
    const asked = server.ui.permissions[0];
    assert.equal(asked.tool, "edit");
    assert.equal(asked.title, "Edit app.py");
    assert.match(asked.diff ?? "", /-print\('old'\)\n\+print\('new'\)/);
    assert.deepEqual(asked.proposed, [{ uri: pathToFileURL(file).toString(), text: "print('new')\nx = 1\n" }]);
    // The chat state followed the events.
    assert.equal(state.sessionId, result.sessionId);
    assert.equal(state.busy, false);
    assert.equal(state.model, "sim/test-model");
    // The context the next request takes: the last context event's estimate, not the step's usage (150).
    const contexts = events.filter((e) => e.kind === "context") as any[];
    assert.ok(contexts.length >= 2, "a context event before each step");
    const estimate = contexts[contexts.length - 1].estimate;
    assert.equal(state.contextTokens, estimate);
    const text = state.plainText();
    assert.match(text, /^> Change the print$/m);
    assert.match(text, /^Let me change app\.py\.$/m);
    assert.match(text, /^▸ Edit app\.py → ok/m);
    assert.match(text, /^Changed \*\*app\.py\*\*\.$/m);
    assert.match(text, /— sim\/test-model$/);
    const kinds = events.map((e) => e.kind);
    assert.equal(kinds[0], "turnStart");
    assert.equal(kinds[kinds.length - 1], "turnEnd");
    const toolEnd = events.find((e) => e.kind === "toolEnd") as any;
    assert.deepEqual(toolEnd.changed, ["app.py"]);
    // Rendered: Markdown, reasoning collapsed, tool line, model.
    const view = viewModel(state, "idle");
    assert.match(view.html, /<strong>app\.py<\/strong>/);
    assert.match(view.html, /<details class="reasoning"[^>]*><summary>Reasoning<\/summary>/);
    assert.match(view.html, /▸ Edit app\.py/);
    assert.equal(view.context, `Context: ~${estimate.toLocaleString("en-US")} tokens`);
    assert.equal(view.ring?.label, `~${estimate.toLocaleString("en-US")}`);
  });

  it("lists the session, loads its history and undoes the edit", async () => {
    const sessions = await server.totem.sessions();
    assert.equal(sessions.length, 1);
    assert.equal(sessions[0].sessionId, state.sessionId);
    assert.match(sessions[0].title, /Change the print|app\.py/);

    const loaded = new ChatState();
    loaded.load(await server.totem.session(state.sessionId!));
    const text = loaded.plainText();
    assert.match(text, /^> Change the print$/m);
    assert.match(text, /^▸ Edit app\.py → ok/m);
    assert.match(text, /^Changed \*\*app\.py\*\*\.$/m);
    assert.equal(loaded.entries.find((e) => e.type === "user" && e.context)?.type, "user");

    const undone = await server.totem.undo(state.sessionId!);
    assert.deepEqual(undone.files, [{ path: "app.py", action: "restored" }]);
    assert.equal(fs.readFileSync(path.join(server.project, "app.py"), "utf8"), "print('old')\nx = 1\n");
    const redone = await server.totem.redo(state.sessionId!);
    assert.deepEqual(redone.files, [{ path: "app.py", action: "restored" }]);
    assert.equal(fs.readFileSync(path.join(server.project, "app.py"), "utf8"), "print('new')\nx = 1\n");
  });

  it("puts the ask tool's question to the UI and shows the todo list", async () => {
    server.model.enqueue(toolReply([["todo", { todos: [{ content: "Pick a colour", status: "in_progress" }] }]]));
    server.model.enqueue(toolReply([["ask", { question: "Which colour?", options: ["red", "blue"] }]]));
    server.model.enqueue(textReply("Blue it is."));
    state.beginTurn("Pick a colour");
    const result = await server.totem.chat({ text: "Pick a colour", sessionId: state.sessionId });
    assert.equal(result.stopReason, "finished");
    assert.deepEqual(server.ui.questions.map((q) => [q.question, q.options]), [["Which colour?", ["red", "blue"]]]);
    assert.deepEqual(state.todos, [{ content: "Pick a colour", status: "in_progress" }]);
    assert.match(viewModel(state, "idle").todos, /◐ Pick a colour/);
    assert.match(state.plainText(), /Blue it is\./);
  });

  it("nests a sub-agent's events under its task call, collapsed above the answer", async () => {
    server.model.enqueue(toolReply([["task", { agent: "explore", prompt: "find it", description: "find" }]]));
    server.model.enqueue(textReply("It is in a.py."));
    server.model.enqueue(textReply("Found: a.py."));
    const nested = new ChatState();
    nested.beginTurn("Where is it?");
    const unsubscribe = server.totem.onEvent((e) => nested.apply(e));
    const result = await server.totem.chat({ text: "Where is it?" });
    unsubscribe.dispose();
    assert.equal(result.text, "Found: a.py.");
    assert.ok(events.some((e) => e.parentCallId && e.agent === "explore"), "the server sent the sub-agent's events");
    const task = nested.entries.find((e) => e.type === "tool" && e.tool === "task") as any;
    assert.equal(task.status, "ok");
    assert.equal(task.thread.agent, "explore");
    assert.equal(task.thread.model, "sim/test-model");
    assert.deepEqual(task.thread.entries.filter((e: any) => e.type === "text").map((e: any) => e.text), ["It is in a.py."]);
    // The conversation's own text is the parent's answer only.
    assert.deepEqual(nested.entries.filter((e) => e.type === "text").map((e: any) => e.text), ["Found: a.py."]);
    const html = viewModel(nested, "idle").html;
    assert.match(html, /<details class="agent" data-key="a-[^"]+" data-agent="explore"><summary>explore on sim\/test-model<\/summary>/);
    assert.ok(html.indexOf("It is in a.py.") < html.indexOf("Found: a.py."));
    assert.doesNotMatch(html, /class="msg answer"[^>]*><p>It is in a\.py/);
    // The stored session shows the same thread.
    const loaded = new ChatState();
    loaded.load(await server.totem.session(result.sessionId));
    assert.match(loaded.plainText(), /▸ explore: find → ok[^\n]*\n  │ \[explore on sim\/test-model\]\n  │ It is in a\.py\.\n(— sim\/test-model\n)?Found: a\.py\./);
  });

  it("lists slash commands and agents, and a command's expansion reaches the model", async () => {
    fs.mkdirSync(path.join(server.project, ".totem", "commands"), { recursive: true });
    fs.writeFileSync(path.join(server.project, ".totem", "commands", "fix.md"), "---\ndescription: Fix a bug\n---\nFind and fix $ARGUMENTS.\n");
    const commands = await server.totem.commands();
    const fix = commands.find((c) => c.name === "fix");
    assert.deepEqual([fix?.description, fix?.source], ["Fix a bug", "project"]);
    assert.equal(commands.find((c) => c.name === "undo")?.file, null);
    assert.deepEqual(viewModel(new ChatState(), "idle", commands).commands.find((c) => c.name === "fix"), { name: "fix", description: "Fix a bug" });
    server.model.enqueue(textReply("Fixed."));
    const result = await server.totem.chat({ text: "/fix the login bug" });
    assert.equal(result.stopReason, "finished");
    const sent = server.model.requests[server.model.requests.length - 1].messages;
    assert.equal(sent[sent.length - 1].content, "Find and fix the login bug.");
    const loaded = new ChatState();
    loaded.load(await server.totem.session(result.sessionId));
    assert.match(loaded.plainText(), /^> \/fix the login bug$/m);
    const agents = await server.totem.agents();
    const explore = agents.find((a) => a.name === "explore");
    assert.equal(explore?.source, "built-in");
    assert.match(explore?.file ?? "", /explore\.md$/);
  });

  it("rejects a busy session and reports a config error as an error", async () => {
    await assert.rejects(server.totem.chat({ text: "x", sessionId: "ses_nope" }), (e: any) => e.code === -32602);
    await assert.rejects(server.totem.chat({ text: "x", model: "zz/q" }), (e: any) => e.code === -32003);
  });

  it("lists a job the turn left running and stops it with totem/jobStop", async () => {
    // A unique duration, so no other run's `sleep` is taken for this one.
    const command = `sleep 47.${Math.floor(Math.random() * 1e6)}`;
    const running = () => execFileSync("ps", ["-eo", "args"], { encoding: "utf8" }).split("\n").some((l) => l.trim() === command);
    server.model.enqueue(toolReply([["job", { action: "start", command }]]));
    server.model.enqueue(textReply("It runs in the background."));
    server.ui.permissionAnswers.push({ outcome: "allow_once" });
    const jobs = new ChatState();
    jobs.beginTurn("Start it");
    const listener = server.totem.onEvent((e) => jobs.apply(e));
    const result = await server.totem.chat({ text: "Start it" });
    assert.equal(result.stopReason, "finished");
    assert.equal(server.ui.permissions[server.ui.permissions.length - 1].permission, "bash");
    assert.deepEqual(jobs.jobs.jobs.map((j) => [j.sessionId, j.jobId, j.command, j.state, j.exitCode]), [[result.sessionId, "job1", command, "running", null]]);
    assert.ok(running(), "the job's process runs");
    assert.match(viewModel(jobs, "idle").jobs, /class="job-stop secondary" data-session="[^"]+" data-job="job1"/);

    const stopped = await server.totem.jobStop(result.sessionId, "job1");
    assert.deepEqual(stopped, { jobId: "job1", state: "stopped", exitCode: -15 });
    jobs.jobs.stopped(result.sessionId, stopped);
    assert.equal(running(), false, "no process of the job is left");
    // The job event says the same, after the answer or before it.
    const deadline = Date.now() + 10000;
    while (!events.some((e) => e.kind === "job" && e.sessionId === result.sessionId && e.state === "stopped") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    listener.dispose();
    assert.deepEqual(jobs.jobs.jobs.map((j) => [j.state, j.exitCode]), [["stopped", -15]]);
    assert.match(viewModel(jobs, "idle").jobs, /<span class="job-state">stopped<\/span><span class="job-exit">exit code -15<\/span>(<span class="job-network"[^>]*>no network \(sandbox\)<\/span>)?<button class="job-dismiss/);
    await assert.rejects(server.totem.jobStop(result.sessionId, "job9"), (e: any) => e.code === -32602 && /no job 'job9'/.test(e.message));
  });

  it("aborts a running turn", async () => {
    server.model.enqueue(toolReply([["bash", { command: "sleep 30" }]], "Running it."));
    server.ui.permissionAnswers.push({ outcome: "allow_once" });
    state.beginTurn("Sleep");
    const running = server.totem.chat({ text: "Sleep", sessionId: state.sessionId });
    while (!events.some((e) => e.kind === "toolStart" && (e as any).tool === "bash")) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await server.totem.abort(state.sessionId!), true);
    const result = await running;
    assert.equal(result.stopReason, "aborted");
    assert.equal(state.busy, false);
    assert.match(state.plainText(), /— sim\/test-model \(aborted\)|— sim\/test-model/);
  });
});
