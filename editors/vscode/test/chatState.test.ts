// The chat state's rules that a real server seldom triggers: discarded attempts, turns started
// elsewhere, unknown event kinds, stored context blocks.

import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { ChatState, sessionTitle, splitContext, statusText } from "../src/chatState";
import { escapeHtml, viewModel } from "../src/render";
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

  it("follows a turn started elsewhere while idle, ignores other sessions while busy", () => {
    const s = new ChatState();
    assert.equal(s.apply({ sessionId: "ses_2", kind: "turnStart", turnId: "t", model: "m/b" }), true);
    assert.equal(s.sessionId, "ses_2");
    assert.equal(s.apply({ sessionId: "ses_3", kind: "turnStart", turnId: "t", model: "m/b" }), false);
    assert.equal(s.apply({ sessionId: "ses_2", kind: "somethingNew" } as any), false);
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
});
