// Issue 21 against a real `totem lsp`: a change reviewed hunk by hunk, regenerate and variants,
// mentions and completion, rewind with the files, retry of a failed turn; the chat state and
// its HTML as the chat view shows them.

import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { ChatState } from "../src/chatState";
import { applyHunks, describeOutcome, reviewOutcome } from "../src/hunks";
import type { TotemEvent } from "../src/protocol";
import { contextRing, viewModel } from "../src/render";
import { startServer, Server } from "./support/server";
import { textReply, toolReply } from "./support/modelServer";

/** A 1x1 PNG. */
const DOT = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const ORIGINAL = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\n";
const PROPOSED = "a = 1\nb = 20\nc = 3\nd = 4\ne = 5\nf = 6\ng = 70\n";

describe("issue 21 against totem lsp", () => {
  let server: Server;
  const events: TotemEvent[] = [];

  before(async () => {
    server = await startServer();
    server.totem.onEvent((e) => events.push(e));
  });

  after(async () => {
    await server?.close();
  });

  const load = async (sessionId: string) => {
    const state = new ChatState();
    state.load(await server.totem.session(sessionId));
    return state;
  };

  it("applies only the hunks the user took, and says so", async () => {
    const file = path.join(server.project, "values.py");
    fs.writeFileSync(file, ORIGINAL);
    server.model.enqueue(toolReply([["read", { path: "values.py" }]]));
    server.model.enqueue(toolReply([["write", { path: "values.py", content: PROPOSED }]]));
    server.model.enqueue(textReply("Kept your version."));
    let taken = "";
    server.ui.permissionAnswers.push((p) => {
      const proposed = p.proposed![0];
      taken = applyHunks(ORIGINAL, proposed.text, (i) => i === 0);
      return { outcome: "allow_once", accepted: [{ uri: proposed.uri, text: taken }] };
    });
    const result = await server.totem.chat({ text: "Change the values" });
    assert.equal(result.stopReason, "finished");
    assert.equal(taken, "a = 1\nb = 20\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\n");
    assert.equal(fs.readFileSync(file, "utf8"), taken);
    const end = events.find((e) => e.kind === "toolEnd" && e.sessionId === result.sessionId && e.tool === "write") as any;
    assert.match(end.summary, /applied as reviewed: values\.py changed by the user/);
    // The model's next request holds what the user changed of its proposal.
    const sent = JSON.stringify(server.model.requests[server.model.requests.length - 1].messages);
    assert.match(sent, /-g = 70/);
    // The chat says what was taken, under the call, and keeps it when the session reloads.
    const line = describeOutcome("values.py", reviewOutcome(ORIGINAL, PROPOSED, taken));
    assert.equal(line, "took 1 of 2 hunks of values.py");
    const state = new ChatState();
    state.sessionId = result.sessionId;
    state.reviews.set(end.callId, [line]);
    state.load(await server.totem.session(result.sessionId));
    assert.match(state.plainText(), /▸ Write values\.py → ok[^\n]*\n  you took 1 of 2 hunks of values\.py/);
    assert.match(viewModel(state, "idle").html, /<div class="review">You took 1 of 2 hunks of values\.py<\/div>/);
  });

  it("regenerates an answer and switches between its variants", async () => {
    server.model.enqueue(textReply("First answer."));
    const first = await server.totem.chat({ text: "Say something" });
    let state = await load(first.sessionId);
    const request = state.entries.find((e) => e.type === "user");
    assert.ok(request?.type === "user" && request.messageId);
    const requestId = request.messageId!;
    assert.deepEqual(state.entries.filter((e) => e.type === "end").map((e: any) => [e.requestId, e.variant]), [[requestId, undefined]]);

    server.model.enqueue(textReply("Second answer."));
    const live = new ChatState();
    live.load(await server.totem.session(first.sessionId));
    live.beginAgain(requestId);
    // The answer so far goes from the live chat; the request stays.
    assert.equal(live.plainText(), "> Say something");
    const again = await server.totem.regenerate(first.sessionId, requestId);
    assert.equal(again.text, "Second answer.");
    state = await load(first.sessionId);
    assert.match(state.plainText(), /Second answer\./);
    assert.doesNotMatch(state.plainText(), /First answer\./);
    const footer = state.entries.find((e) => e.type === "end") as any;
    assert.deepEqual(footer.variant, { request: requestId, index: 1, count: 2 });
    const html = viewModel(state, "idle").html;
    assert.match(html, /<span class="variant-count">2\/2<\/span>/);
    assert.match(html, /data-index="0" title="The previous answer"/);
    assert.match(html, /data-index="2" disabled title="The next answer"/);

    assert.deepEqual(await server.totem.variant(first.sessionId, requestId, 0), { request: requestId, index: 0, count: 2 });
    state = await load(first.sessionId);
    assert.match(state.plainText(), /First answer\./);
    assert.doesNotMatch(state.plainText(), /Second answer\./);
    assert.match(viewModel(state, "idle").html, /<span class="variant-count">1\/2<\/span>/);
  });

  it("completes mentions, attaches them, shows them as chips, and rings the context", async () => {
    fs.writeFileSync(path.join(server.project, "app.py"), "print('hi')\n");
    const files = await server.totem.complete("look at @ap", 11);
    assert.deepEqual([files.start, files.end], [8, 11]);
    assert.ok(files.items.some((i) => i.label === "app.py" && i.kind === "file" && i.insertText === "@app.py"), JSON.stringify(files));
    const buffers = await server.totem.complete("#bu", 3);
    assert.deepEqual(buffers.items.map((i) => i.insertText), ["#buffer"]);

    server.model.enqueue(textReply("It prints hi."));
    const live = new ChatState();
    live.beginTurn("What does @app.py print?");
    assert.deepEqual((live.entries[0] as any).chips, ["@app.py"]);
    const listener = server.totem.onEvent((e) => live.apply(e));
    const result = await server.totem.chat({ text: "What does @app.py print?" });
    listener.dispose();
    const sent = server.model.requests[server.model.requests.length - 1].messages;
    assert.match(JSON.stringify(sent[sent.length - 1].content), /<context file=\\"app\.py\\">[^<]*print\('hi'\)/);
    // The stored message: what was typed, its mention as a chip.
    const state = await load(result.sessionId);
    const user = state.entries.find((e) => e.type === "user") as any;
    assert.equal(user.text, "What does @app.py print?");
    assert.deepEqual(user.chips, ["@app.py"]);
    assert.match(viewModel(state, "idle").html, /<span class="chip mention"[^>]*>@app\.py<\/span>/);
    // The context event drove the ring: its estimate, before the step's usage replaced it.
    const context = events.find((e) => e.kind === "context" && e.sessionId === result.sessionId) as any;
    assert.equal(typeof context.estimate, "number");
    const ringed = new ChatState();
    ringed.sessionId = context.sessionId;
    ringed.apply({ ...context, window: context.estimate * 4, breakdown: { history: 7, tools: 3 } });
    const ring = contextRing(ringed)!;
    assert.equal(ring.percent, 25);
    assert.equal(ring.label, "25%");
    const n = (x: number) => x.toLocaleString("en-US");
    assert.equal(ring.tooltip, `${n(context.estimate)} of ${n(context.estimate * 4)} tokens (25%)\nhistory: 7\ntools: 3`);
    assert.ok(contextRing(live), "the live chat has a ring");
  });

  it("sends an image with a message and shows it in the chat", async () => {
    // The attach button: for a model not known to be blind (the config says this one sees images).
    const chat = Object.assign(new ChatState(), { model: "sim/test-model" });
    assert.equal(viewModel(chat, "idle").vision, true);
    assert.equal(viewModel(chat, "idle", [], { blind: ["sim/test-model"] }).vision, false);
    server.model.enqueue(textReply("A single dot."));
    const result = await server.totem.chat({ text: "What is in it?", attachments: [{ type: "image", mimeType: "image/png", data: DOT, name: "dot.png" }] });
    assert.equal(result.stopReason, "finished");
    const sent = JSON.stringify(server.model.requests[server.model.requests.length - 1].messages);
    assert.match(sent, /"type":"image_url"/);
    assert.ok(sent.includes(DOT), "the model got the image's bytes");
    const state = await load(result.sessionId);
    const user = state.entries.find((e) => e.type === "user") as any;
    assert.deepEqual(user.images, [{ name: "dot.png", src: `data:image/png;base64,${DOT}` }]);
    assert.match(viewModel(state, "idle").html, /<img class="attachment" src="data:image\/png;base64,[^"]+" alt="dot\.png" title="dot\.png">/);
  });

  it("rewinds the conversation and the files to before a message", async () => {
    const file = path.join(server.project, "notes.txt");
    fs.writeFileSync(file, "one\n");
    server.model.enqueue(textReply("Noted."));
    const first = await server.totem.chat({ text: "Remember notes.txt" });
    server.model.enqueue(toolReply([["read", { path: "notes.txt" }]]));
    server.model.enqueue(toolReply([["write", { path: "notes.txt", content: "two\n" }]]));
    server.model.enqueue(textReply("Wrote two."));
    server.ui.permissionAnswers.push({ outcome: "allow_once" });
    await server.totem.chat({ text: "Write two into notes.txt", sessionId: first.sessionId });
    assert.equal(fs.readFileSync(file, "utf8"), "two\n");
    let state = await load(first.sessionId);
    const second = state.entries.filter((e) => e.type === "user")[1] as any;
    assert.equal(second.text, "Write two into notes.txt");
    assert.match(viewModel(state, "idle").html, new RegExp(`<button class="rewind icon" data-message="${second.messageId}"`));

    const dry = await server.totem.rewind({ sessionId: first.sessionId, messageId: second.messageId, files: true, dryRun: true });
    assert.deepEqual(dry.files, [{ path: "notes.txt", action: "restored" }]);
    assert.equal(fs.readFileSync(file, "utf8"), "two\n");
    const done = await server.totem.rewind({ sessionId: first.sessionId, messageId: second.messageId, files: true });
    assert.ok(done.rewound.includes(second.messageId));
    assert.equal(fs.readFileSync(file, "utf8"), "one\n");
    state = await load(first.sessionId);
    assert.equal(state.plainText(), "> Remember notes.txt\nNoted.\n— sim/test-model");
  });

  it("forks from a message: a new session up to the end of its answer, the original unchanged", async () => {
    server.model.enqueue(toolReply([["read", { path: "notes.txt" }]]));
    server.model.enqueue(textReply("It says one."));
    const first = await server.totem.chat({ text: "What is in notes.txt?" });
    server.model.enqueue(textReply("Nothing more."));
    await server.totem.chat({ text: "And then?", sessionId: first.sessionId });
    const original = await server.totem.session(first.sessionId);
    const state = await load(first.sessionId);
    const asked = state.entries.find((e) => e.type === "user") as any;
    // The first exchange: the request, the read's step and the answer's.
    assert.equal(asked.exchangeEnd, original.messages[2].id);
    assert.equal(original.messages[3].role, "user");
    assert.match(viewModel(state, "idle").html, new RegExp(`<button class="fork icon" data-message="${asked.exchangeEnd}"`));

    const forked = await server.totem.fork(first.sessionId, asked.exchangeEnd);
    assert.notEqual(forked.sessionId, first.sessionId);
    assert.ok((await server.totem.sessions()).some((s) => s.sessionId === forked.sessionId));
    const copy = await server.totem.session(forked.sessionId);
    const shape = (m: any) => [m.role, m.parts.map((p: any) => [p.type, p.data?.text ?? null])];
    assert.deepEqual(copy.messages.map(shape), original.messages.slice(0, 3).map(shape));
    const shown = (await load(forked.sessionId)).plainText();
    assert.match(shown, /^> What is in notes\.txt\?$/m);
    assert.match(shown, /It says one\.\n— sim\/test-model$/);
    assert.doesNotMatch(shown, /And then\?/);
    assert.equal((await server.totem.session(first.sessionId)).messages.length, original.messages.length);
    const whole = await server.totem.fork(first.sessionId);
    assert.deepEqual((await server.totem.session(whole.sessionId)).messages.map(shape), original.messages.map(shape));
  });

  it("retries a failed turn without sending the request again", async () => {
    server.model.enqueueStatus(401, "Incorrect API key provided");
    const failed = await server.totem.chat({ text: "Try it" });
    assert.equal(failed.stopReason, "error");
    let state = await load(failed.sessionId);
    const error = state.entries.find((e) => e.type === "error") as any;
    assert.equal(error.retry, true);
    assert.match(viewModel(state, "idle").html, /<button class="retry secondary" title="Take up the failed turn again">Retry<\/button>/);

    server.model.enqueue(textReply("Works now."));
    state.beginAgain();
    assert.equal(state.plainText(), "> Try it");
    const retried = await server.totem.retry(failed.sessionId);
    assert.equal(retried.stopReason, "finished");
    state = await load(failed.sessionId);
    assert.equal(state.plainText(), "> Try it\nWorks now.\n— sim/test-model");
    await assert.rejects(server.totem.retry(failed.sessionId), (e: any) => e.code === -32602 && /nothing to retry/.test(e.message));
  });
});
