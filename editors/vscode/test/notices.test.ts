// When the extension shows a notice (notices.ts), and the step-limit preset as the server gets it.

import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { OPEN_CHAT, askNotice, noticeDue, turnEndNotice } from "../src/notices";
import { MAX_STEPS_PRESETS, configurationSettings, editorConfig } from "../src/protocol";
import { startServer, Server } from "./support/server";
import { textReply, toolReply } from "./support/modelServer";

const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));

describe("notices", () => {
  it("are due when the chat is out of sight, and on unless turned off", () => {
    assert.equal(noticeDue(true, { viewVisible: false, windowFocused: true }), true);
    assert.equal(noticeDue(true, { viewVisible: true, windowFocused: false }), true);
    assert.equal(noticeDue(true, { viewVisible: true, windowFocused: true }), false);
    assert.equal(noticeDue(false, { viewVisible: false, windowFocused: false }), false);
    assert.equal(pkg.contributes.configuration.properties["totem.notify"].default, true);
  });

  it("say how a turn ended, not for a sub-agent or a turn the user stopped", () => {
    assert.equal(turnEndNotice("finished", "Fix the greeting"), "Totem finished: Fix the greeting");
    assert.equal(turnEndNotice("step_limit", ""), "Totem stopped at the step limit.");
    assert.equal(turnEndNotice("error", "x"), "Totem failed: x");
    assert.equal(turnEndNotice("aborted", "x"), undefined);
    assert.equal(turnEndNotice("finished", "x", "call_1"), undefined);
  });

  it("say what waits for the user", () => {
    assert.equal(askNotice("permission", "Edit app.py"), "Totem waits for your permission: Edit app.py");
    assert.equal(askNotice("question", "Which colour?"), "Totem asks: Which colour?");
    assert.equal(OPEN_CHAT, "Open Chat");
  });
});

describe("the step-limit setting (totem.maxSteps)", () => {
  it("offers the presets 20, 60 and 0 (no cap) besides the config's default", () => {
    const setting = pkg.contributes.configuration.properties["totem.maxSteps"];
    assert.deepEqual(setting.enum, [...MAX_STEPS_PRESETS]);
    assert.deepEqual(setting.enum, ["default", "20", "60", "0"]);
    assert.equal(setting.default, "default");
    assert.ok(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations.includes("totem.maxSteps"));
  });

  it("is max_steps of the editor's config layer, over totem.config's", () => {
    assert.deepEqual(editorConfig({ max_steps: 40, mode: "plan" }, "20"), { max_steps: 20, mode: "plan" });
    assert.deepEqual(editorConfig({}, "0"), { max_steps: 0 });
    assert.deepEqual(editorConfig({ max_steps: 40 }, "default"), { max_steps: 40 });
    assert.deepEqual(editorConfig(undefined, undefined), {});
    assert.deepEqual(configurationSettings("a/b", { max_steps: 3 }, "60"), { totem: { config: { max_steps: 60 }, model: "a/b" } });
  });
});

describe("a step-limit preset against totem lsp", () => {
  let server: Server;

  before(async () => {
    server = await startServer();
  });

  after(async () => {
    await server?.close();
  });

  it("stops a turn at 20 steps once the editor sends the preset", async () => {
    await server.connection.sendNotification("workspace/didChangeConfiguration", { settings: configurationSettings(undefined, {}, "20") });
    // One file read a step, a new file each time (no change, no repetition): the config's 50 steps
    // would read all 21 and take the answer.
    for (let n = 0; n <= 20; n++) {
      fs.writeFileSync(path.join(server.project, `f${n}.txt`), `${n}\n`);
      server.model.enqueue(toolReply([["read", { path: `f${n}.txt` }]]));
    }
    server.model.enqueue(textReply("Read them all."));
    const result = await server.totem.chat({ text: "Read every file" });
    assert.equal(result.stopReason, "step_limit");
    assert.equal(server.model.requests.length, 20);
  });
});
