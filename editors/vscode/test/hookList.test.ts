// How "Totem: Show Hooks" shows each hook of `totem/hooks`, and which file picking it opens.

import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { hookItem } from "../src/hookList";
import type { HookInfo } from "../src/protocol";

const hook = (over: Partial<HookInfo>): HookInfo => ({
  event: "PreToolUse",
  matcher: "Bash",
  command: "python3 ~/hooks/validate.py",
  timeout: 60,
  source: "~/.config/totem/config.toml",
  active: true,
  ignored: null,
  ...over,
});

describe("hookItem", () => {
  it("shows the event and matcher, the command, and an active hook's file under the home directory", () => {
    assert.deepEqual(hookItem(hook({}), "/home/me"), {
      label: "PreToolUse [Bash]",
      description: "python3 ~/hooks/validate.py",
      detail: "~/.config/totem/config.toml · active",
      file: "/home/me/.config/totem/config.toml",
    });
  });

  it("marks a hook of every tool with * and an untrusted project's as ignored, with why", () => {
    const item = hookItem(
      hook({ event: "Stop", matcher: null, command: "make test", source: "/work/app/.totem/config.toml", active: false, ignored: "the project is not trusted" }),
      "/home/me/",
    );
    assert.equal(item.label, "Stop [*]");
    assert.equal(item.detail, "/work/app/.totem/config.toml · ignored: the project is not trusted");
    assert.equal(item.file, "/work/app/.totem/config.toml");
  });

  it("opens no file for a hook of the editor settings", () => {
    assert.equal(hookItem(hook({ source: "editor settings" }), "/home/me").file, undefined);
  });
});
