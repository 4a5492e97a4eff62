// Issue 37 in VS Code: a command card shows its command and marks a failed command as failed; a
// dismissed modal answers nothing; questions name their chat; an unknown vision is said.

import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { ChatState } from "../src/chatState";
import { OpenQuestions } from "../src/openQuestions";
import { askNotice, permissionHeading } from "../src/notices";
import type { PermissionParams } from "../src/protocol";
import { viewModel } from "../src/render";
import { callCommand, callOutcome } from "../src/toolCard";

function bashTurn(summary: string, status = "ok", output = "boom\n[exit code 1]"): ChatState {
  const s = new ChatState();
  s.beginTurn("run it");
  s.apply({ sessionId: "ses_1", kind: "turnStart", turnId: "t", model: "m/a" });
  s.apply({ sessionId: "ses_1", kind: "toolStart", callId: "c1", tool: "bash", title: "Try total and average", input: { command: "python3 stats.py" } } as any);
  s.apply({ sessionId: "ses_1", kind: "toolEnd", callId: "c1", tool: "bash", status, summary, output } as any);
  return s;
}

describe("the bash card", () => {
  it("shows the command under the description and a non-zero exit as a failure", () => {
    const s = bashTurn("exit 1");
    const html = viewModel(s, "").html;
    assert.match(html, /<div class="tool-title">▸ Try total and average<\/div><pre class="tool-command"><code>\$ python3 stats\.py<\/code><\/pre>/);
    assert.match(html, /class="tool ok failed"/);
    assert.match(html, /<div class="tool-result">failed: exit 1<\/div>/);
    assert.doesNotMatch(html, /ok: exit 1/);
    assert.match(html, /<details class="output" data-key="o-c1" open>/);
    assert.match(s.plainText(), /^▸ Try total and average \(\$ python3 stats\.py\) → failed: exit 1$/m);
  });

  it("calls exit 0 a success, a timeout and a kill failures", () => {
    assert.deepEqual(callOutcome("bash", "ok", "exit 0", "fine"), { failed: false, text: "ok: exit 0" });
    assert.deepEqual(callOutcome("bash", "error", "timed out after 5 s"), { failed: true, text: "failed: timed out after 5 s" });
    assert.deepEqual(callOutcome("bash", "ok", "exit -9", "[exit code -9]"), { failed: true, text: "failed: killed (signal 9)" });
    // No summary the card knows: the output's exit line says it.
    assert.deepEqual(callOutcome("bash", "ok", undefined, "x\n[exit code 2]"), { failed: true, text: "failed: exit 2" });
    assert.deepEqual(callOutcome("edit", "ok", "1 replacement"), { failed: false, text: "ok: 1 replacement" });
    assert.equal(callCommand("edit", { command: "x" }), undefined);
    const ok = viewModel(bashTurn("exit 0", "ok", "fine"), "").html;
    assert.doesNotMatch(ok, /failed/);
    assert.match(ok, /<div class="tool-result">ok: exit 0<\/div>/);
  });

  it("says an interrupted call once", () => {
    const s = bashTurn("interrupted", "interrupted", "");
    assert.match(viewModel(s, "").html, /<div class="tool-result">interrupted<\/div>/);
    assert.doesNotMatch(s.plainText(), /interrupted: interrupted/);
  });

  it("shows a stored call's command, and no command twice when the title is the command", () => {
    const s = new ChatState();
    s.load({
      sessionId: "ses_1", title: "run", model: "m/a", messages: [
        { role: "user", id: "msg_1", parts: [{ id: "p1", type: "text", data: { text: "run" } }] },
        { role: "assistant", id: "msg_2", parts: [
          { id: "p2", type: "tool", status: "ok", data: { callId: "c1", tool: "bash", title: "$ ls -la", input: { command: "ls -la" }, summary: "exit 3", output: "[exit code 3]" } },
        ] },
      ],
    } as any);
    const html = viewModel(s, "").html;
    assert.doesNotMatch(html, /tool-command/);
    assert.match(html, /failed: exit 3/);
  });
});

const params = (callId: string, sessionId = "ses_1"): PermissionParams =>
  ({ sessionId, callId, tool: "bash", permission: "bash", title: "$ ls", input: { command: "ls" }, rule: null, alwaysPattern: "ls", paths: ["ls"] }) as PermissionParams;

describe("a permission asked in a modal", () => {
  it("stays open when the modal is dismissed, and is answered from the panel", async () => {
    const open = new OpenQuestions();
    let settled: unknown;
    const answer = open.ask(params("c1")).then((a) => (settled = a));
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, undefined); // dismissing the modal answered nothing
    assert.equal(open.get("c1")?.title, "$ ls"); // "Show question" puts it up again
    assert.equal(open.answer("c1", "reject_once", "not now"), true);
    await answer;
    assert.deepEqual(settled, { outcome: "reject_once", feedback: "not now" });
    assert.equal(open.answer("c1", "allow_once"), false);
    assert.equal(open.get("c1"), undefined);
  });

  it("is moot when its turn ends, and only its session's", async () => {
    const open = new OpenQuestions();
    const one = open.ask(params("c1", "ses_1"));
    open.ask(params("c2", "ses_2"));
    open.drop("ses_1");
    assert.deepEqual(await one, { outcome: "reject_once" });
    assert.ok(open.get("c2"));
  });

  it("names the chat that asks", () => {
    assert.equal(permissionHeading("$ ls", "Fix the tests"), 'Totem wants to: $ ls (asked in the chat "Fix the tests")');
    assert.equal(askNotice("permission", "$ ls", "Fix the tests"), 'Totem waits for your permission (chat "Fix the tests"): $ ls');
  });
});

describe("the attach button", () => {
  it("says when the model's vision is unknown", () => {
    const s = new ChatState();
    s.model = "local/qwen";
    assert.deepEqual([viewModel(s, "", [], { unsure: ["local/qwen"] }).visionUnknown, viewModel(s, "", [], { unsure: ["local/qwen"] }).vision], [true, true]);
    assert.equal(viewModel(s, "", [], { blind: ["local/qwen"] }).vision, false);
    assert.equal(viewModel(s, "", [], {}).visionUnknown, false);
  });
});
