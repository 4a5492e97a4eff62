// How "Totem: Show Session Tools" shows `totem/tools`: the title, the narrowing first, one item a tool.

import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { toolItems, toolsTitle } from "../src/toolList";
import type { SessionToolsInfo } from "../src/protocol";

const listed = (over: Partial<SessionToolsInfo>): SessionToolsInfo => ({
  sessionId: "ses_1",
  model: "local/qwen",
  mode: "build",
  contextWindow: 32768,
  tools: [{ name: "bash", description: "Run a shell command.", refused: null }],
  leftOut: [],
  narrowed: null,
  scripts: false,
  ...over,
});

describe("session tools", () => {
  it("names the model, mode and window in the title", () => {
    assert.equal(toolsTitle(listed({})), "Tools of local/qwen (build mode, window 32,768 tokens)");
    assert.equal(toolsTitle(listed({ contextWindow: null, mode: "plan" })), "Tools of local/qwen (plan mode)");
  });

  it("puts why the set was narrowed and what it left out first, then each tool", () => {
    const items = toolItems(listed({ narrowed: "the model's window is small", leftOut: ["fetch", "job"] }));
    assert.deepEqual(items, [
      { label: "$(warning) Narrowed", description: "the model's window is small", detail: "Left out: fetch, job" },
      { label: "bash", description: "Run a shell command." },
    ]);
  });

  it("marks what plan mode refuses", () => {
    const items = toolItems(listed({ tools: [{ name: "write", description: "Write a file.", refused: "plan mode refuses it" }] }));
    assert.deepEqual(items, [{ label: "write", description: "Write a file.", detail: "plan mode refuses it" }]);
  });
});
