// The chat state's rules that a real server seldom triggers: discarded attempts, turns started
// elsewhere, unknown event kinds, stored context blocks.

import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { ChatList } from "../src/chatList";
import { ChatState, callResult, errorHint, sessionTitle, splitContext, statusText } from "../src/chatState";
import { cappedOutput, escapeHtml, highlight, viewModel } from "../src/render";
import { configurationSettings, protocolWarning } from "../src/protocol";

describe("ChatState", () => {
  it("drops a discarded attempt and keeps the retry", () => {
    const s = new ChatState();
    s.beginTurn("hi");
    s.apply({ sessionId: "ses_1", kind: "turnStart", turnId: "trn_1", model: "m/a" });
    s.apply({ sessionId: "ses_1", kind: "textDelta", partId: "prt_1", text: "Half an ans" });
    s.apply({ sessionId: "ses_1", kind: "stepDiscarded", step: 1, reason: "boom" });
    s.apply({ sessionId: "ses_1", kind: "notice", level: "warning", message: "Retrying" });
    s.apply({ sessionId: "ses_1", kind: "textDelta", partId: "prt_2", text: "Whole " });
    s.apply({ sessionId: "ses_1", kind: "textDelta", partId: "prt_2", text: "answer." });
    s.apply({ sessionId: "ses_1", kind: "stepEnd", step: 1, model: "m/a", usage: { inputTokens: 5, outputTokens: 2 } });
    s.apply({ sessionId: "ses_1", kind: "turnEnd", turnId: "trn_1", stopReason: "finished", text: "Whole answer.", model: "m/a" });
    assert.equal(s.plainText(), "> hi\nRetrying\nWhole answer.\n— m/a");
    assert.equal(s.sessionId, "ses_1");
  });

  it("gives a turn started elsewhere a chat of its own, shown unless the shown one is busy", () => {
    const chats = new ChatList();
    const first = chats.current;
    // A chat's first turn: the session is the one of the first turnStart after beginTurn.
    first.beginTurn("hi");
    assert.equal(chats.apply({ sessionId: "ses_1", kind: "turnStart", turnId: "t", model: "m/a" }), first);
    assert.equal(first.sessionId, "ses_1");
    // Another session's turn while this one runs: a new tab, not shown.
    const other = chats.apply({ sessionId: "ses_2", kind: "turnStart", turnId: "t", model: "m/b" });
    assert.ok(other && other !== first);
    assert.equal(other!.sessionId, "ses_2");
    assert.equal(chats.current, first);
    assert.match(other!.plainText(), /^> \(asked from the editor\)$/m);
    assert.equal(chats.apply({ sessionId: "ses_2", kind: "somethingNew" } as any), undefined);
    assert.equal(chats.apply({ sessionId: "ses_9", kind: "textDelta", partId: "p", text: "x" }), undefined);
    // Events go to their own chat; the tabs say which runs.
    chats.apply({ sessionId: "ses_2", kind: "textDelta", partId: "p", text: "Other answer" });
    assert.doesNotMatch(first.plainText(), /Other answer/);
    assert.deepEqual(chats.tabs().map((t) => [t.title, t.busy, t.current]), [["hi", true, true], ["Session", true, false]]);
    // A busy chat's tab does not close; an idle one does, and the shown one moves on.
    assert.equal(chats.close(first.key), false);
    chats.apply({ sessionId: "ses_1", kind: "turnEnd", turnId: "t", stopReason: "finished", text: "", model: "m/a" });
    assert.equal(chats.close(first.key), true);
    assert.equal(chats.current, other);
    // New Chat reuses a shown empty chat, else adds one.
    const fresh = chats.newChat();
    assert.notEqual(fresh, other);
    assert.equal(chats.newChat(), fresh);
    assert.equal(chats.select(other!.key), true);
  });

  it("splits a stored context block", () => {
    assert.deepEqual(splitContext('<context file="a.py" lines="2-3">\nx\ny\n</context>\n\nWhy?'), { body: "Why?", context: "a.py:2-3" });
    assert.deepEqual(splitContext('<context file="a.py"/>\n\nWhy?'), { body: "Why?", context: "a.py" });
    assert.deepEqual(splitContext("plain"), { body: "plain" });
    assert.equal(sessionTitle('<context file="app.py"/> Change the greeting'), "Change the greeting");
    assert.equal(sessionTitle('<context file="app.py"/>'), "app.py");
  });

  it("renders no raw HTML from the model", () => {
    const s = new ChatState();
    s.beginTurn("x");
    s.apply({ sessionId: "s", kind: "turnStart", turnId: "t", model: "m" });
    s.apply({ sessionId: "s", kind: "textDelta", partId: "p", text: "<img src=x onerror=alert(1)> `code`" });
    const html = viewModel(s, statusText("m", "thinking")).html;
    assert.doesNotMatch(html, /<img/);
    assert.match(html, /<code>code<\/code>/);
    assert.equal(escapeHtml(`<a href="x">`), "&lt;a href=&quot;x&quot;&gt;");
  });

  it("builds settings and version warnings", () => {
    assert.deepEqual(configurationSettings("a/b", { max_steps: 3 }), { totem: { config: { max_steps: 3 }, model: "a/b" } });
    assert.deepEqual(configurationSettings(undefined, undefined), { totem: { config: {} } });
    assert.match(protocolWarning({ capabilities: { experimental: { totem: { protocolVersion: 2 } } } })!, /version 2/);
    assert.match(protocolWarning({ capabilities: {} })!, /did not announce/);
  });

  it("draws a stored session with one footer per turn, whatever its steps", () => {
    const part = (type: string, data: any, status: string | null = null) => ({ id: `p${Math.random()}`, messageId: "m", seq: 0, type, data, status, discarded: false });
    const s = new ChatState();
    s.load({
      sessionId: "ses_1",
      title: "Run it",
      messages: [
        { role: "user", parts: [part("text", { text: "Run it" })] },
        { role: "assistant", parts: [part("step", { step: 1, model: "m/a" }), part("tool", { callId: "c1", tool: "bash", title: "$ ls", output: "a.py\n", summary: "exit 0" }, "ok")] },
        { role: "assistant", parts: [part("step", { step: 2, model: "m/a" }), part("tool", { callId: "c2", tool: "write", title: "Create b", output: "The user rejected this action. Their feedback: not b" }, "denied")] },
        { role: "assistant", parts: [part("step", { step: 3, model: "m/a" }), part("text", { text: "Done." })] },
        { role: "user", parts: [part("text", { text: "Again" })] },
        { role: "assistant", parts: [part("error", { stopReason: "error", text: "bad key" })] },
      ],
    });
    assert.deepEqual(s.entries.filter((e) => e.type === "end"), [
      { type: "end", model: "m/a", stopReason: "finished" },
      { type: "end", model: "m/a", stopReason: "error" },
    ]);
    assert.match(s.plainText(), /▸ \$ ls → ok: exit 0\n  │ a\.py/);
    assert.match(s.plainText(), /feedback: not b/);
  });

  it("draws a stored notice at the level it came with", () => {
    const part = (type: string, data: any) => ({ id: `p${Math.random()}`, messageId: "m", seq: 0, type, data, status: null, discarded: false });
    const s = new ChatState();
    s.load({
      sessionId: "ses_1",
      title: "hello",
      messages: [
        { role: "user", parts: [part("text", { text: "hello" })] },
        { role: "assistant", parts: [part("notice", { text: "MCP server time started, 2 tools." })] },
        { role: "assistant", parts: [part("notice", { text: "MCP server gone did not start: not found.", level: "warning" })] },
        { role: "assistant", parts: [part("notice", { stopReason: "guard", text: "The same call three times." })] },
      ],
    });
    assert.deepEqual(s.entries.filter((e) => e.type === "notice").map((e: any) => e.level), ["info", "warning", "warning"]);
  });

  it("reads a call's output and feedback, hints at a refused key", () => {
    assert.deepEqual(callResult("bash", "42\n"), { output: "42\n" });
    assert.deepEqual(callResult("read", "1\tx"), {});
    assert.deepEqual(callResult("bash", "The user rejected this action. Their feedback: no"), { feedback: "no" });
    assert.deepEqual(callResult("edit", "whatever", "said so"), { feedback: "said so" });
    assert.match(errorHint("AuthenticationError", "work/gpt")!, /\[providers\.work\].*totem auth set work/);
    assert.equal(errorHint("ServerError", "work/gpt"), undefined);
    assert.equal(statusText("m/a", "answering"), "m/a · answering");
  });

  it("highlights code, caps output", () => {
    assert.equal(highlight("return 'a' # c", "python"), `<span class="hl-keyword">return</span> <span class="hl-string">&#39;a&#39;</span> <span class="hl-comment"># c</span>`);
    assert.equal(highlight("<b>", ""), "&lt;b&gt;");
    const long = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n");
    const capped = cappedOutput(long).split("\n");
    assert.equal(capped.length, 41);
    assert.equal(capped[20], "… 60 more lines …");
    assert.equal(capped[40], "line 99");
  });
});
