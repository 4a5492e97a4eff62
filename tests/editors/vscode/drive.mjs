// Drives a running code-server with Playwright in Debian's headless Chromium, as a person would:
// open the file, run "Totem: Ask", accept the proposed edit in the diff editor, read the chat
// view and the Problems view, take screenshots. Prints one JSON object with what it saw; the
// pytest test (tests/editors/test_vscode.py) asserts on it.
//
//   node drive.mjs '{"url": ..., "file": "controllers/api.js", "question": ..., "answer": ..., "finding": ...,
//                    "chromium": "/usr/bin/chromium", "artifacts": DIR, "docsImage": PATH}'

import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "..", "..", "editors", "vscode", "package.json"));
const { chromium } = require("playwright-core");

const args = JSON.parse(process.argv[2]);
const seen = { steps: [] };
const step = (name) => {
  seen.steps.push(`${((Date.now() - started) / 1000).toFixed(1)}s ${name}`);
  process.stderr.write(`drive: ${name}\n`);
};
const started = Date.now();

async function chatFrame(page, timeout = 30000) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    for (const frame of page.frames()) {
      try {
        if (await frame.locator("#totem-chat").count()) return frame;
      } catch {
        // a frame that went away
      }
    }
    await page.waitForTimeout(200);
  }
  throw new Error("the Totem chat view did not appear");
}

async function runCommand(page, label) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible" });
  await input.fill(`>${label}`);
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: label }).first();
  await row.waitFor({ state: "visible" });
  // The best match is first; check that it is exactly the command we asked for.
  const rows = page.locator(".quick-input-list .monaco-list-row");
  const count = await rows.count();
  for (let i = 0; i < count; i++) {
    const text = (await rows.nth(i).getAttribute("aria-label")) ?? "";
    if (text === label || text.startsWith(`${label},`) || text.startsWith(`${label} `)) {
      await rows.nth(i).click();
      return;
    }
  }
  await page.keyboard.press("Enter");
}

// The hunk labels of the proposal's side of `diff` (hunkMarks.ts: decorations whose text is CSS
// `::after` content), top to bottom, once `until` shows.
const markedLines = (diff) =>
  diff.locator(".editor.modified .view-line").evaluateAll((lines) =>
    lines
      .map((line) => ({
        top: parseFloat(line.style.top) || 0,
        label: [...line.querySelectorAll("span")].map((e) => getComputedStyle(e, "::after").content).find((c) => c && c.includes("Hunk")),
      }))
      .filter((l) => l.label)
      .sort((a, b) => a.top - b.top)
      .map((l) => l.label.replace(/^"|"$/g, "").replace(/\u00a0/g, " ").trim()),
  );
// The line of the proposal's side whose label holds `label` (a locator).
async function markedLine(diff, label) {
  const lines = diff.locator(".editor.modified .view-line");
  const index = await lines.evaluateAll((all, text) =>
    all.findIndex((line) => [...line.querySelectorAll("span")].some((e) => (getComputedStyle(e, "::after").content || "").includes(text))), label);
  return lines.nth(Math.max(0, index));
}
async function hunkMarks(diff, until) {
  const deadline = Date.now() + 15000;
  let marks = await markedLines(diff);
  while (!marks.some((m) => m.includes(until)) && Date.now() < deadline) {
    await diff.page().waitForTimeout(200);
    marks = await markedLines(diff);
  }
  return marks;
}

// In the chat view: a question whose answer starts a sub-agent (its thread a collapsed block
// above the answer), the slash-command chips and completion, then "Totem: Agents" and
// "Totem: Show Hooks".
async function subAgentAndCommands(page, args) {
  const frame = await chatFrame(page);
  const box = frame.locator("#input");
  await box.fill(args.subAgent.question);
  await box.press("Enter");
  await frame.locator(".msg.answer", { hasText: args.subAgent.answer }).waitFor({ timeout: 60000 });
  await frame.locator("#send:not([disabled])").waitFor();
  const block = frame.locator("details.agent").first();
  seen.agentBlock = {
    open: await block.evaluate((d) => d.open),
    summary: await block.locator("summary").innerText(),
    text: await block.evaluate((d) => d.textContent),
  };
  seen.answers = await frame.locator(".msg.answer").allInnerTexts();
  seen.blockBeforeAnswer = await frame.locator("#messages").evaluate((messages, answer) => {
    const block = messages.querySelector("details.agent");
    const reply = [...messages.querySelectorAll(".msg.answer")].find((e) => e.textContent.includes(answer));
    return !!(block && reply && block.compareDocumentPosition(reply) & Node.DOCUMENT_POSITION_FOLLOWING);
  }, args.subAgent.answer);
  await page.screenshot({ path: path.join(args.artifacts, "vscode-subagent.png") });
  step("sub-agent block shown");

  // A chip puts "/fix " in the box; typing "/fi" lists it, Tab takes it.
  seen.chips = await frame.locator("#commands .chip").allInnerTexts();
  await frame.locator("#commands .chip", { hasText: "/fix" }).click();
  seen.afterChip = await box.inputValue();
  await box.fill("");
  await box.pressSequentially("/fi");
  await frame.locator("#completions li").first().waitFor({ state: "visible" });
  seen.completions = await frame.locator("#completions li").allInnerTexts();
  await box.press("Tab");
  seen.afterTab = await box.inputValue();
  await box.pressSequentially(args.command.args);
  await box.press("Enter");
  await frame.locator(".msg.answer", { hasText: args.command.answer }).waitFor({ timeout: 60000 });
  await frame.locator("#send:not([disabled])").waitFor();
  seen.chatAfterCommand = await frame.locator("#messages").innerText();
  step("slash command sent");

  // The agents panel: a quick pick of totem/agents; picking one opens its file.
  await runCommand(page, "Totem: Agents");
  // The palette's own rows go first: wait for the agents' title and the agent's row.
  await page.locator(".quick-input-widget", { hasText: "Totem agents" }).waitFor({ state: "visible" });
  const rows = page.locator(".quick-input-list .monaco-list-row");
  await rows.filter({ hasText: args.agent }).first().waitFor({ state: "visible" });
  seen.agents = [];
  for (let i = 0; i < (await rows.count()); i++) seen.agents.push((await rows.nth(i).getAttribute("aria-label")) ?? "");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: args.agent }).first().click();
  await page.locator(`.tabs-container .tab.active[aria-label*="${args.agent}.md"]`).first().waitFor({ state: "visible" });
  seen.agentTab = (await page.locator(".tabs-container .tab.active").first().getAttribute("aria-label")) ?? "";
  step("agent file open");

  // "Show Hooks": a quick pick of totem/hooks; picking one opens its config file (then closed:
  // the steps after it ask about the files of the project).
  await runCommand(page, "Totem: Show Hooks");
  await page.locator(".quick-input-widget", { hasText: "Totem hooks" }).waitFor({ state: "visible" });
  const hookRows = page.locator(".quick-input-list .monaco-list-row");
  await hookRows.filter({ hasText: args.hook }).first().waitFor({ state: "visible" });
  seen.hooks = [];
  for (let i = 0; i < (await hookRows.count()); i++) seen.hooks.push((await hookRows.nth(i).getAttribute("aria-label")) ?? "");
  await hookRows.filter({ hasText: args.hook }).first().click();
  await page.locator('.tabs-container .tab.active[aria-label*="config.toml"]').first().waitFor({ state: "visible" });
  seen.hookTab = (await page.locator(".tabs-container .tab.active").first().getAttribute("aria-label")) ?? "";
  await runCommand(page, "View: Close Editor");
  step("hook file open");
}

// The rough edges of issue 25, in a new chat: following the end, a selection that survives
// streaming, code blocks and tables, a command's output and its permission, a two-file change
// rejected with feedback, a refused key with its hint and Retry, a reopened session.
const gap = (m) => m.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);

async function roughEdges(page, args) {
  const r = args.rough;
  seen.rough = {};
  const out = seen.rough;
  // "New Chat" from the palette reveals the chat view, even with the side bar closed.
  await runCommand(page, "View: Close Primary Side Bar");
  await page.waitForTimeout(500);
  await runCommand(page, "Totem: New Chat");
  let frame = await chatFrame(page);
  await frame.locator("#messages").waitFor({ state: "visible" });
  out.newChatVisible = await frame.locator("#messages").isVisible();
  // The view may still show the chat it had until the reset reaches it: wait for it, bounded.
  out.newChatEmpty = await frame
    .waitForFunction(() => document.querySelector("#messages").innerText.trim() === "", null, { timeout: 5000 })
    .then(() => true, () => false);
  out.newChatTitle = await frame.locator("#title").innerText();
  step("new chat revealed");

  // A long streamed answer: select its first paragraph while the rest streams.
  const messages = frame.locator("#messages");
  const box = frame.locator("#input");
  await box.fill(r.long.question);
  await box.press("Enter");
  const first = frame.locator(".msg.answer p").first();
  await first.waitFor({ timeout: 60000 });
  await frame.locator(".msg.answer", { hasText: r.long.firstParagraph }).waitFor();
  out.titleDuringTurn = await frame.locator("#title").innerText();
  out.statesDuringTurn = [await frame.locator("#state").innerText()];
  out.selected = await frame.locator(".msg.answer").first().evaluate((answer, text) => {
    const p = [...answer.querySelectorAll("p")].find((e) => e.textContent.includes(text));
    const range = document.createRange();
    range.selectNodeContents(p);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    return sel.toString();
  }, r.long.firstParagraph);
  const lengthAtSelect = (await frame.locator(".msg.answer").first().innerText()).length;
  await page.waitForTimeout(1200);
  out.statesDuringTurn.push(await frame.locator("#state").innerText());
  out.selectedAfterChunks = await frame.evaluate(() => window.getSelection().toString());
  out.grewWhileSelected = (await frame.locator(".msg.answer").first().innerText()).length > lengthAtSelect;
  await frame.locator(".msg.answer", { hasText: r.long.last }).waitFor({ timeout: 60000 });
  await frame.locator("#send:not([disabled])").waitFor();
  await page.waitForTimeout(300);
  out.gapAfterLong = await gap(messages);
  out.scrolledAfterLong = await messages.evaluate((el) => el.scrollTop);
  out.highlighted = await frame.locator(".msg.answer .code .hl-keyword").count();
  await frame.locator(".msg.answer .code").first().scrollIntoViewIfNeeded();
  await frame.locator(".msg.answer .code .copy").first().click();
  out.copyLabel = await frame.locator(".msg.answer .code .copy").first().innerText();
  out.copied = await page
    .locator(".statusbar-item", { hasText: "code copied" })
    .first()
    .waitFor({ state: "visible", timeout: 5000 })
    .then(() => true, () => false);
  await page.screenshot({ path: path.join(args.artifacts, "vscode-long-answer.png") });
  if (args.docsDir) await page.screenshot({ path: path.join(args.docsDir, "vscode-streaming.png") });

  out.table = await frame.locator(".table-wrap").first().evaluate((w) => ({ scrollWidth: w.scrollWidth, clientWidth: w.clientWidth, overflowX: getComputedStyle(w).overflowX }));
  out.messagesOverflow = await messages.evaluate((m) => m.scrollWidth - m.clientWidth);
  const reasoning = frame.locator("details.reasoning").first();
  await reasoning.locator("summary").click();
  out.reasoningText = await reasoning.locator(".body").innerText();
  out.reasoningBreaks = await reasoning.locator(".body br").count();
  step("long answer streamed");

  // Scrolled to the top, the user sends a message: it is scrolled to. A command asks first
  // (a modal and the chat's panel), prints, fails; the chat keeps following.
  await messages.evaluate((m) => (m.scrollTop = 0));
  await page.waitForTimeout(200);
  await box.fill(r.bash.question);
  await box.press("Enter");
  await frame.locator(".msg.user", { hasText: r.bash.question }).waitFor();
  await page.waitForTimeout(300);
  out.gapAfterSend = await gap(messages);
  // The model speaks slowly before its command: the user turns to the first chat meanwhile. The
  // question names the chat that asks, and that chat comes back in front.
  await frame.locator(".msg.answer", { hasText: r.bash.says }).waitFor({ timeout: 60000 });
  await frame.locator("#tabs .tab").first().click();
  await frame.locator("#title", { hasText: args.question }).waitFor({ timeout: 5000 }).catch(() => undefined);
  out.titleWhenAsked = await frame.locator("#title").innerText();
  const dialog = page.locator(".monaco-dialog-box");
  await dialog.waitFor({ state: "visible", timeout: 60000 });
  out.bashModal = await dialog.innerText();
  out.bashButtons = await dialog.locator(".monaco-button").allInnerTexts();
  await frame.locator("#pending:not([hidden])").waitFor();
  await frame.locator("#title", { hasText: r.long.question }).waitFor({ timeout: 5000 }).catch(() => undefined);
  out.inFrontWhileAsking = { title: await frame.locator("#title").innerText(), tab: await frame.locator("#tabs .tab.current").innerText() };
  out.chatAlways = await frame.locator("#always").innerText();
  await page.screenshot({ path: path.join(args.artifacts, "vscode-bash-permission.png") });
  if (args.docsDir) await page.screenshot({ path: path.join(args.docsDir, "vscode-bash-permission.png") });
  // Cancel is no answer: the modal goes, the chat's panel still asks; "Show question" puts it up again.
  await dialog.locator(".monaco-button", { hasText: "Cancel" }).first().click();
  await dialog.waitFor({ state: "hidden" });
  await page.waitForTimeout(500);
  out.afterCancel = {
    panel: await frame.locator("#pending").isVisible(),
    showLabel: await frame.locator("#show-pending").innerText(),
    outputs: await frame.locator(".tool details.output").count(),
  };
  await frame.locator("#show-pending").click();
  await dialog.waitFor({ state: "visible", timeout: 10000 });
  out.bashModalAgain = await dialog.innerText();
  await dialog.locator(".monaco-button", { hasText: "Allow always" }).first().click();
  await frame.locator(".msg.answer", { hasText: r.bash.answer }).waitFor({ timeout: 60000 });
  await frame.locator("#send:not([disabled])").waitFor();
  await page.waitForTimeout(300);
  const tools = frame.locator(".tool", { has: frame.locator("details.output") });
  out.outputs = [];
  for (let i = 0; i < (await tools.count()); i++) {
    const t = tools.nth(i);
    out.outputs.push({
      line: await t.locator(".tool-title").innerText(),
      cls: await t.getAttribute("class"),
      command: await t.locator(".tool-command").allInnerTexts(),
      open: await t.locator("details.output").evaluate((d) => d.open),
      visible: await t.locator("details.output pre").isVisible(),
      text: await t.locator("details.output pre").evaluate((p) => p.textContent),
    });
  }
  out.gapAfterBash = await gap(messages);
  await tools.first().locator("details.output summary").click();
  out.firstOutputVisibleAfterClick = await tools.first().locator("details.output pre").innerText();
  await page.screenshot({ path: path.join(args.artifacts, "vscode-bash-output.png") });
  if (args.docsDir) await page.screenshot({ path: path.join(args.docsDir, "vscode-bash-output.png") });
  // The failed command's card, for docs/editors.md.
  if (args.failedCommandImage) {
    await tools.nth(1).scrollIntoViewIfNeeded();
    await page.screenshot({ path: args.failedCommandImage });
  }
  step("command output shown");

  // A two-file change: the panel names both files; rejected with feedback from the chat.
  await box.fill(r.patch.question);
  await box.press("Enter");
  await frame.locator("#pending-files:not([hidden])").waitFor({ timeout: 60000 });
  out.pendingFiles = await frame.locator("#pending-files").innerText();
  out.acceptLabel = await frame.locator("#accept").innerText();
  await page.locator(".tabs-container .tab", { hasText: "2 of 2 files" }).first().waitFor({ state: "attached", timeout: 30000 }).catch(() => undefined);
  out.diffTabs = [];
  for (const tab of await page.locator(".tabs-container .tab").all()) out.diffTabs.push((await tab.getAttribute("aria-label")) ?? "");
  await page.screenshot({ path: path.join(args.artifacts, "vscode-two-files.png") });
  if (args.docsDir) await page.screenshot({ path: path.join(args.docsDir, "vscode-two-files.png") });
  await runCommand(page, "View: Close All Editors");
  await page.locator(".tabs-container .tab", { hasText: "Totem's proposal" }).first().waitFor({ state: "detached", timeout: 10000 });
  out.showDiffLabel = await frame.locator("#show-pending").innerText();
  await frame.locator("#show-pending").click();
  await page.locator(".tabs-container .tab", { hasText: "2 of 2 files" }).first().waitFor({ state: "attached", timeout: 15000 });
  out.diffTabsReopened = await page.locator(".tabs-container .tab", { hasText: "Totem's proposal" }).count();
  await frame.locator('#pending button[data-feedback="1"]').click();
  const feedbackBox = page.locator(".quick-input-widget input");
  await page.locator(".quick-input-widget", { hasText: "Tell Totem why" }).waitFor({ state: "visible" });
  await feedbackBox.fill(r.patch.feedback);
  await page.keyboard.press("Enter");
  await frame.locator(".msg.answer", { hasText: r.patch.answer }).waitFor({ timeout: 60000 });
  await frame.locator("#send:not([disabled])").waitFor();
  out.feedbackShown = await frame.locator(".tool .feedback").allInnerTexts();
  out.diffTabsAfter = (await page.locator(".tabs-container .tab", { hasText: "Totem's proposal" }).count());
  step("change rejected with feedback");

  // A refused key: the error says which provider and what fixes it; Retry sends again.
  await box.fill(r.auth.question);
  await box.press("Enter");
  const error = frame.locator(".notice.error").last();
  await error.locator(".hint").waitFor({ timeout: 60000 });
  await frame.locator("#send:not([disabled])").waitFor();
  out.errorText = await error.innerText();
  await page.waitForTimeout(300);
  out.gapAfterError = await gap(messages);
  await page.screenshot({ path: path.join(args.artifacts, "vscode-auth-error.png") });
  if (args.docsDir) await page.screenshot({ path: path.join(args.docsDir, "vscode-auth-error.png") });
  await error.locator("button.retry").click();
  await frame.locator(".msg.answer", { hasText: r.auth.answer }).waitFor({ timeout: 60000 });
  await frame.locator("#send:not([disabled])").waitFor();
  out.retryHidden = (await frame.locator("button.retry").count()) === 0;
  await page.waitForTimeout(300);
  out.gapAfterRetry = await gap(messages);
  step("auth error and retry");

  // The live chat, then the same session reopened: the same footers, one per turn.
  out.liveFooters = await frame.locator(".model").allInnerTexts();
  out.liveUsers = await frame.locator(".msg.user").count();
  out.liveText = await messages.innerText();
  await runCommand(page, "Totem: Sessions");
  await page.locator(".quick-input-widget", { hasText: "Totem sessions" }).waitFor({ state: "visible" });
  const rows = page.locator(".quick-input-list .monaco-list-row");
  await rows.filter({ hasText: r.long.question }).first().waitFor({ state: "visible" });
  out.sessionRows = [];
  for (let i = 0; i < (await rows.count()); i++) out.sessionRows.push((await rows.nth(i).getAttribute("aria-label")) ?? "");
  await rows.filter({ hasText: r.long.question }).first().click();
  await page.waitForTimeout(1000);
  frame = await chatFrame(page);
  await frame.locator(".msg.answer", { hasText: r.auth.answer }).waitFor({ timeout: 30000 });
  out.reopenedFooters = await frame.locator(".model").allInnerTexts();
  out.reopenedUsers = await frame.locator(".msg.user").count();
  out.reopenedText = await frame.locator("#messages").innerText();
  await page.screenshot({ path: path.join(args.artifacts, "vscode-reopened.png") });
  step("session reopened");

  // The model picker marks the current model.
  await runCommand(page, "Totem: Select Model");
  await page.locator(".quick-input-widget", { hasText: "Totem model" }).waitFor({ state: "visible" });
  const models = page.locator(".quick-input-list .monaco-list-row");
  await models.first().waitFor({ state: "visible" });
  out.modelRows = [];
  for (let i = 0; i < (await models.count()); i++) out.modelRows.push((await models.nth(i).getAttribute("aria-label")) ?? "");
  // A model the provider's list leaves out, typed as provider/model, is an item to pick.
  await page.locator(".quick-input-widget input").fill(r.typedModel);
  await models.filter({ hasText: "typed" }).first().waitFor({ state: "visible" });
  out.typedRow = (await models.first().getAttribute("aria-label")) ?? "";
  await page.keyboard.press("Enter");
  await page.locator(".statusbar-item", { hasText: r.typedModel }).first().waitFor({ timeout: 10000 });
  out.statusTyped = (await page.locator(".statusbar-item", { hasText: "Totem:" }).first().innerText()).trim();
  out.dropdownTyped = await frame.locator("#model").inputValue();
  step("model picker");

  // "Log in to MCP server": the declared URL servers to pick from (totem/mcpServers).
  await runCommand(page, "Totem: Log in to MCP server");
  await page.locator(".quick-input-widget", { hasText: "log in to an MCP server" }).waitFor({ state: "visible" });
  await models.first().waitFor({ state: "visible" });
  out.mcpRows = [];
  for (let i = 0; i < (await models.count()); i++) out.mcpRows.push((await models.nth(i).getAttribute("aria-label")) ?? "");
  await page.keyboard.press("Escape");
  step("mcp login picker");
}

// A background job in a new chat: the model starts a loopback HTTP server as a job, the list
// shows it running (and it answers), Stop ends it (no process left), the list says `stopped`
// with its exit code, Dismiss removes it.
// This script's own arguments hold the command too: not counted.
const processes = (command) =>
  execFileSync("ps", ["-eo", "args"], { encoding: "utf8" }).split("\n").filter((l) => l.includes(command) && !l.includes("drive.mjs")).length;
const answers = (url) => fetch(url).then((r) => r.status, () => 0);

async function backgroundJob(page, args) {
  const j = args.job;
  const out = (seen.job = {});
  await runCommand(page, "Totem: New Chat");
  const frame = await chatFrame(page);
  const box = frame.locator("#input");
  await box.fill(j.question);
  await box.press("Enter");
  const dialog = page.locator(".monaco-dialog-box");
  await dialog.waitFor({ state: "visible", timeout: 60000 });
  out.modal = await dialog.innerText();
  await dialog.locator(".monaco-button", { hasText: "Allow once" }).first().click();
  await frame.locator(".msg.answer", { hasText: j.answer }).waitFor({ timeout: 60000 });
  await frame.locator("#send:not([disabled])").waitFor();
  const row = frame.locator("#jobs .job").first();
  await frame.locator("#jobs .job.running").first().waitFor();
  out.title = await frame.locator("#jobs .jobs-title").innerText();
  out.running = {
    id: await row.locator(".job-id").innerText(),
    command: await row.locator(".job-command").innerText(),
    state: await row.locator(".job-state").innerText(),
    exit: await row.locator(".job-exit").count(),
    button: await row.locator("button").innerText(),
  };
  // The server the job started answers, and its process is in the process table.
  const deadline = Date.now() + 15000;
  while ((out.status = await answers(j.url)) !== 200 && Date.now() < deadline) await page.waitForTimeout(200);
  out.processesWhileRunning = processes(j.command);
  await page.screenshot({ path: path.join(args.artifacts, "vscode-jobs.png") });
  if (args.docsDir) await page.screenshot({ path: path.join(args.docsDir, "vscode-jobs.png") });
  step("job running");

  await row.locator("button.job-stop").click();
  await frame.locator("#jobs .job.stopped").first().waitFor({ timeout: 30000 });
  await frame.locator("#jobs .job-dismiss").first().waitFor();
  out.stopped = {
    state: await row.locator(".job-state").innerText(),
    exit: await row.locator(".job-exit").innerText(),
    button: await row.locator("button").innerText(),
  };
  out.title = [out.title, await frame.locator("#jobs .jobs-title").innerText()];
  // The group is killed before totem/jobStop answers; the event may come a moment earlier.
  const gone = Date.now() + 10000;
  while ((out.processesAfterStop = processes(j.command)) > 0 && Date.now() < gone) await page.waitForTimeout(200);
  out.statusAfterStop = await answers(j.url);
  await page.screenshot({ path: path.join(args.artifacts, "vscode-job-stopped.png") });
  await row.locator("button.job-dismiss").click();
  await frame.locator("#jobs .job").first().waitFor({ state: "detached" });
  out.jobsAfterDismiss = await frame.locator("#jobs").evaluate((el) => ({ rows: el.querySelectorAll(".job").length, shown: getComputedStyle(el).display !== "none" }));
  step("job stopped and dismissed");

  // A command stopped while it runs: its card says `interrupted`, once.
  await box.fill(j.stop.question);
  await box.press("Enter");
  await dialog.waitFor({ state: "visible", timeout: 60000 });
  await dialog.locator(".monaco-button", { hasText: "Allow once" }).first().click();
  await frame.locator(".tool.running", { hasText: j.stop.command }).first().waitFor({ timeout: 30000 });
  await frame.locator("#stop").click();
  await frame.locator("#send:not([disabled])").waitFor({ timeout: 30000 });
  const stopped = frame.locator(".tool", { hasText: j.stop.command }).last();
  await frame.locator(".tool.interrupted", { hasText: j.stop.command }).last().waitFor({ timeout: 15000 });
  // The card without its output (which says "Interrupted before it finished.").
  const cardText = await stopped.evaluate((t) => {
    const copy = t.cloneNode(true);
    copy.querySelectorAll("details.output").forEach((d) => d.remove());
    return copy.textContent;
  });
  out.stopCard = { title: cardText, cls: await stopped.getAttribute("class") };
  step("command stopped");
  await sessionTools(page);
  await forwardedJob(page, j.forward);
}

// Issue 37: the sandbox's network turned off in the settings (totem.config, the engine reopened
// at its next use), a job start in a new chat: the modal offers the loopback forward after
// "Allow once"; picked, the job runs, its row names the forwarded port and the server answers
// here. Stopped and dismissed, then the setting taken back for the steps that follow.
async function forwardedJob(page, f) {
  const out = (seen.forward = {});
  const before = fs.readFileSync(f.settings, "utf8");
  await userSettings(page, JSON.stringify({ ...JSON.parse(before), "totem.config": { sandbox_network: false } }, null, 2), f.settings);
  await runCommand(page, "Totem: New Chat");
  const frame = await chatFrame(page);
  const box = frame.locator("#input");
  await box.fill(f.question);
  await box.press("Enter");
  const dialog = page.locator(".monaco-dialog-box");
  await dialog.waitFor({ state: "visible", timeout: 60000 });
  out.modal = await dialog.innerText();
  out.buttons = await dialog.locator(".monaco-button").allInnerTexts();
  await dialog.locator(".monaco-button", { hasText: f.label }).first().click();
  await frame.locator(".msg.answer", { hasText: f.answer }).waitFor({ timeout: 60000 });
  const row = frame.locator("#jobs .job.running").first();
  await row.locator(".job-network", { hasText: "ports forwarded" }).waitFor({ timeout: 30000 });
  out.network = await row.locator(".job-network").allInnerTexts().then((t) => t.join(" | "));
  out.state = await row.locator(".job-state").innerText();
  const deadline = Date.now() + 15000;
  while ((out.status = await answers(f.url)) !== 200 && Date.now() < deadline) await page.waitForTimeout(200);
  await page.screenshot({ path: path.join(args.artifacts, "vscode-job-forwarded.png") });
  step("job forwarded");
  await row.locator("button.job-stop").click();
  const stopped = frame.locator("#jobs .job.stopped").first();
  await stopped.waitFor({ timeout: 30000 });
  out.stopped = await stopped.locator(".job-state").innerText();
  const gone = Date.now() + 10000;
  while ((out.statusAfterStop = await answers(f.url)) !== 0 && Date.now() < gone) await page.waitForTimeout(200);
  await stopped.locator("button.job-dismiss").click();
  await frame.locator("#jobs .job").first().waitFor({ state: "detached" });
  await userSettings(page, before, f.settings);
}

// The user's settings.json replaced in its editor and saved: VS Code's own change event, which
// the extension passes on as didChangeConfiguration (a write behind its back is not seen at once).
async function userSettings(page, text, file) {
  await runCommand(page, "Preferences: Open User Settings (JSON)");
  const editor = page.locator(".monaco-editor", { has: page.locator(".view-lines", { hasText: "remote.autoForwardPorts" }) }).first();
  await editor.waitFor({ state: "visible" });
  await editor.locator(".view-lines").click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Delete");
  // One line: the editor indents after a typed line break.
  await page.keyboard.insertText(JSON.stringify(JSON.parse(text)));
  await page.keyboard.press("Control+S");
  const want = JSON.stringify(JSON.parse(text));
  const deadline = Date.now() + 10000;
  const saved = () => { try { return JSON.stringify(JSON.parse(fs.readFileSync(file, "utf8"))); } catch { return ""; } };
  while (saved() !== want) {
    if (Date.now() > deadline) throw new Error("the user settings were not saved");
    await page.waitForTimeout(200);
  }
  // It opens as a modal editor, which Escape closes (the command palette does not open over it).
  // (a first Escape may only close a widget of the editor's).
  for (let i = 0; i < 5 && (await editor.isVisible()); i++) {
    await page.keyboard.press("Escape");
    await page.waitForTimeout(300);
  }
  await editor.waitFor({ state: "hidden" });
}

// Issue 37: "Totem: Show Session Tools" on the job's chat, a quick pick of totem/tools: its title
// (model, mode, window), the narrowing line when there is one, one row a tool.
async function sessionTools(page) {
  const out = (seen.tools = {});
  await runCommand(page, "Totem: Show Session Tools");
  const widget = page.locator(".quick-input-widget", { hasText: "Tools of " });
  await widget.waitFor({ state: "visible" });
  out.title = await widget.locator(".quick-input-title").innerText();
  out.placeholder = (await widget.locator("input").getAttribute("placeholder")) ?? "";
  const rows = widget.locator(".quick-input-list .monaco-list-row");
  await rows.first().waitFor({ state: "visible" });
  out.rows = [];
  for (let i = 0; i < (await rows.count()); i++) out.rows.push((await rows.nth(i).getAttribute("aria-label")) ?? "");
  await page.screenshot({ path: path.join(args.artifacts, "vscode-tools.png") });
  await page.keyboard.press("Escape");
  await widget.waitFor({ state: "hidden" });
  step("session tools listed");
}

// Issue 21 in a new chat: an @file mention completed and shown as a chip, a two-hunk change
// reviewed in the diff editor (one hunk left with its code lens, the other taken), regenerate
// and the variant switcher, the context ring, the mode picker and the tabs, the server killed
// and the chat reattached, two forks, then a rewind that puts the file back.
async function review21(page, args) {
  const r = args.review;
  const out = (seen.review = {});
  const shot = async (name) => {
    await page.screenshot({ path: path.join(args.artifacts, name) });
    if (args.docsDir) await page.screenshot({ path: path.join(args.docsDir, name) });
  };
  await runCommand(page, "Totem: New Chat");
  let frame = await chatFrame(page);
  const box = frame.locator("#input");
  await frame.waitForFunction(() => document.querySelector("#messages").innerText.trim() === "", null, { timeout: 5000 });

  // "@sett" lists the file (totem/complete); Tab takes it, and it is a chip in the box.
  await box.fill("");
  await box.pressSequentially(r.typed);
  await frame.locator("#completions li", { hasText: r.file }).first().waitFor({ state: "visible" });
  out.completions = await frame.locator("#completions li").allInnerTexts();
  await shot("vscode-mention.png");
  await box.press("Tab");
  out.afterTab = await box.inputValue();
  out.inputChips = await frame.locator("#input-chips mark.chip").allInnerTexts();
  await box.pressSequentially(r.rest);
  out.sent = await box.inputValue();
  // An image pasted into the box goes with the message (the model sees images).
  await box.evaluate((el, data) => {
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    const clipboard = new DataTransfer();
    clipboard.items.add(new File([bytes], "square.png", { type: "image/png" }));
    el.dispatchEvent(new ClipboardEvent("paste", { clipboardData: clipboard, bubbles: true, cancelable: true }));
  }, r.image);
  await frame.locator("#attachments .attachment-chip").first().waitFor();
  out.attachmentChips = await frame.locator("#attachments .attachment-chip").allInnerTexts();
  out.attachVisible = await frame.locator("#attach").isVisible();
  out.attachLabel = await frame.locator("#attach").innerText();
  await box.press("Enter");
  step("mention sent");

  // The diff editor: the file against the proposal, a label on each hunk.
  const diff = page.locator(".monaco-diff-editor").first();
  await diff.waitFor({ state: "visible", timeout: 60000 });
  out.lenses = await hunkMarks(diff, "Hunk 2 of 2");
  await frame.locator("#pending-review:not([hidden])").waitFor();
  out.reviewBefore = await frame.locator("#pending-review").innerText();
  await shot("vscode-review.png");
  // Leave the second hunk from its hover: its lines go back in the proposal, one hunk remains.
  const line = (label) => markedLine(diff, label);
  await (await line("Hunk 2 of 2")).hover({ position: { x: 30, y: 5 } });
  const hover = page.locator(".monaco-hover", { hasText: "Hunk 2 of 2" }).first();
  await hover.waitFor({ state: "visible", timeout: 10000 });
  out.hover = await hover.innerText();
  await hover.locator("a", { hasText: "Leave" }).first().click();
  await hunkMarks(diff, "Hunk 1 of 1");
  // Take the first from the title bar, the cursor in it.
  await (await line("Hunk 1 of 1")).click({ position: { x: 30, y: 5 } });
  await page.locator('.editor-actions .action-label[aria-label^="Take This Hunk"]').first().click();
  out.lensesAfter = await hunkMarks(diff, "taken");
  await frame.locator("#pending-review", { hasText: "1 of 2" }).waitFor();
  out.reviewAfter = await frame.locator("#pending-review").innerText();
  await shot("vscode-review-left.png");
  await page.locator('.editor-actions .action-label[aria-label^="Accept"]').first().click();
  await frame.locator(".msg.answer", { hasText: r.answer }).waitFor({ timeout: 60000 });
  await frame.locator("#send:not([disabled])").waitFor();
  await frame.locator(".tool .review").first().waitFor();
  // The edit lands in the file's buffer (the diff opened it) and is saved a moment later (autoSave).
  const saved = Date.now() + 10000;
  while ((out.disk = fs.readFileSync(r.path, "utf8")) === r.original && Date.now() < saved) await page.waitForTimeout(200);
  out.toolReview = await frame.locator(".tool .review").allInnerTexts();
  out.userChips = await frame.locator(".msg.user .chip.mention").allInnerTexts();
  out.userImages = await frame.locator(".msg.user img.attachment").evaluateAll((imgs) => imgs.map((i) => [i.alt, i.naturalWidth]));
  out.attachmentsAfterSend = await frame.locator("#attachments .attachment-chip").count();
  const proposalTabs = page.locator(".tabs-container .tab", { hasText: "Totem's proposal" });
  out.diffTabsAfter = await proposalTabs.first().waitFor({ state: "detached", timeout: 10000 }).then(() => 0, () => proposalTabs.count());
  step("two-hunk review accepted");

  // The context ring, from the context event.
  await frame.locator("#ring:not([hidden])").waitFor();
  out.ring = { label: await frame.locator("#ring-label").innerText(), title: (await frame.locator("#ring").getAttribute("title")) ?? "" };

  // Regenerate: a second answer, ‹ 2/2 ›; back to the first.
  await frame.locator(".model .regenerate").last().click();
  await frame.locator(".msg.answer", { hasText: r.second }).waitFor({ timeout: 60000 });
  await frame.locator(".variant-count", { hasText: "2/2" }).waitFor({ timeout: 15000 });
  out.secondAnswers = await frame.locator(".msg.answer").allInnerTexts();
  await shot("vscode-variants.png");
  await frame.locator('.model .variant[data-index="0"]').click();
  await frame.locator(".variant-count", { hasText: "1/2" }).waitFor({ timeout: 15000 });
  out.firstAnswers = await frame.locator(".msg.answer").allInnerTexts();
  out.firstReview = await frame.locator(".tool .review").allInnerTexts();
  step("variants switched");

  // The mode picker (totem/setMode): plan for this session, kept when the tab comes back.
  await frame.locator("#mode").selectOption("plan");
  out.tabs = await frame.locator("#tabs .tab").allInnerTexts();
  await frame.locator("#tabs .tab").first().click();
  await frame.locator("#title", { hasText: args.question }).waitFor({ timeout: 10000 }).catch(() => undefined);
  out.firstTabTitle = await frame.locator("#title").innerText();
  await frame.locator("#tabs .tab").last().click();
  await frame.locator(".msg.answer", { hasText: r.answer }).waitFor();
  out.modeAfter = await frame.locator("#mode").inputValue();
  await frame.locator("#mode").selectOption("build");
  await page.waitForTimeout(300);
  await shot("vscode-tabs.png");
  step("mode and tabs");

  // The server dies: it is restarted and the chat reopens its session.
  const lsp = execFileSync("ps", ["-eo", "pid=,pgid=,args="], { encoding: "utf8" })
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[1] === String(args.pgid) && f.slice(2).join(" ").endsWith(" lsp"));
  out.lspProcesses = lsp.length;
  // A provider added to the config while it runs: the restarted server's models reach the dropdown.
  out.modelsBeforeRestart = await frame.locator("#model option").evaluateAll((o) => o.map((e) => e.value));
  fs.appendFileSync(r.config, r.addedProvider);
  process.kill(Number(lsp[0][0]), "SIGKILL");
  await frame.locator(".notice", { hasText: "restarted" }).waitFor({ timeout: 60000 });
  out.afterRestart = await frame.locator("#messages").innerText();
  await frame.waitForFunction((m) => [...document.querySelectorAll("#model option")].some((o) => o.value === m), r.addedModel, { timeout: 15000 }).catch(() => undefined);
  out.modelsAfterRestart = await frame.locator("#model option").evaluateAll((o) => o.map((e) => e.value));
  await box.fill(r.still);
  await box.press("Enter");
  await frame.locator(".msg.answer", { hasText: r.stillAnswer }).waitFor({ timeout: 60000 });
  await frame.locator("#send:not([disabled])").waitFor();
  step("server restarted, session reattached");

  // Fork from the mention's message: a tab of its own shows the new session, that exchange only;
  // "Totem: Fork Session" forks the original as it stands. Then back to the original.
  const tabs = frame.locator("#tabs .tab");
  const original = await tabs.evaluateAll((all) => all.findIndex((t) => t.classList.contains("current")));
  const userMessages = () => frame.locator(".msg.user").evaluateAll((all) => all.map((m) => ({ id: m.dataset.message, text: m.querySelector(".body").innerText.trim() })));
  out.beforeFork = { users: await userMessages(), tabs: await tabs.count() };
  out.forkButtons = await frame.locator(".msg.user .msg-actions").allInnerTexts();
  await frame.locator(".msg.user .fork").first().click();
  await frame.waitForFunction((n) => document.querySelectorAll("#tabs .tab").length === n + 1, out.beforeFork.tabs, { timeout: 15000 });
  await frame.locator(".msg.answer", { hasText: r.answer }).waitFor({ timeout: 15000 });
  const forkStatus = page.locator(".statusbar-item", { hasText: "fork of" }).first();
  out.fork = {
    current: await tabs.evaluateAll((all) => all.findIndex((t) => t.classList.contains("current"))),
    users: await userMessages(),
    answers: await frame.locator(".msg.answer").allInnerTexts(),
    status: await forkStatus.waitFor({ timeout: 5000 }).then(() => forkStatus.innerText(), () => ""),
    // The new tab is scrolled into the strip.
    inStrip: await frame.locator("#tabs .tab.current").evaluate((t) => {
      const bar = t.parentElement.getBoundingClientRect(), tab = t.getBoundingClientRect();
      return tab.left >= bar.left - 1 && tab.right <= bar.right + 1;
    }),
  };
  await shot("vscode-fork.png");
  await tabs.nth(original).click();
  await frame.locator(".msg.answer", { hasText: r.stillAnswer }).waitFor({ timeout: 10000 });
  await runCommand(page, "Totem: Fork Session");
  await frame.waitForFunction((n) => document.querySelectorAll("#tabs .tab").length === n + 2, out.beforeFork.tabs, { timeout: 15000 });
  await frame.locator(".msg.answer", { hasText: r.stillAnswer }).waitFor({ timeout: 15000 });
  out.forkWhole = {
    current: await tabs.evaluateAll((all) => all.findIndex((t) => t.classList.contains("current"))),
    users: await userMessages(),
  };
  await tabs.nth(original).click();
  await frame.locator(".msg.answer", { hasText: r.stillAnswer }).waitFor({ timeout: 10000 });
  step("forked");

  // Rewind to before the mention's message, files too: the file is as it was, the message back in the box.
  await frame.locator(".msg.user .rewind").first().click();
  await page.locator(".quick-input-widget", { hasText: "rewind" }).waitFor({ state: "visible" });
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "conversation and the files" }).first().click();
  await frame.waitForFunction(() => !document.querySelector(".msg.user"), null, { timeout: 15000 });
  out.inputAfterRewind = await box.inputValue();
  const deadline = Date.now() + 10000;
  while ((out.diskAfterRewind = fs.readFileSync(r.path, "utf8")) !== r.original && Date.now() < deadline) await page.waitForTimeout(200);
  step("rewound");

  // Rewound to before its first message, the session has no title: in the tab, the header and the list.
  out.titleAfterRewind = await frame.locator("#title").innerText();
  out.tabAfterRewind = await frame.locator("#tabs .tab.current").innerText();
  await runCommand(page, "Totem: Sessions");
  await page.locator(".quick-input-widget", { hasText: "Totem sessions" }).waitFor({ state: "visible" });
  const rows = page.locator(".quick-input-list .monaco-list-row");
  await rows.filter({ hasText: "current" }).first().waitFor({ state: "visible" });
  out.sessionRowsAfterRewind = [];
  for (let i = 0; i < (await rows.count()); i++) out.sessionRowsAfterRewind.push((await rows.nth(i).getAttribute("aria-label")) ?? "");
  await page.keyboard.press("Escape");
  step("sessions after the rewind");
}

// Issue 37: messages sent while a turn runs are queued under the chat (Edit, Remove), the edited
// one is sent when the turn ends; a stop with a message queued asks, and Drop drops it.
async function queued37(page, args) {
  const q = args.queue;
  seen.queue = {};
  const out = seen.queue;
  await runCommand(page, "Totem: New Chat");
  const frame = await chatFrame(page);
  const box = frame.locator("#input");
  // A model nobody says sees images (no vision in its [models] entry, nothing from its provider):
  // the attach button says so. Then back to the model the turns use.
  const attach = frame.locator("#attach");
  await frame.locator("#model").selectOption(q.unknownVision);
  await attach.filter({ hasText: "vision unknown" }).waitFor({ timeout: 10000 }).catch(() => undefined);
  out.attachUnknown = { label: await attach.innerText(), visible: await attach.isVisible() };
  await frame.locator("#model").selectOption(q.model);
  await frame.waitForFunction(() => !document.querySelector("#attach").textContent.includes("unknown"), null, { timeout: 10000 }).catch(() => undefined);
  out.attachBack = await attach.innerText();
  step("vision unknown");
  await box.fill(q.first);
  await box.press("Enter");
  await frame.locator(".msg.answer", { hasText: q.working }).waitFor({ timeout: 15000 });
  out.sendLabel = await frame.locator("#send").innerText();
  await box.fill(q.second);
  await frame.locator("#send").click();
  await box.fill(q.drop);
  await box.press("Enter");
  await frame.locator(".queued-message", { hasText: q.drop }).waitFor({ timeout: 5000 });
  out.queued = await frame.locator(".queued-text").allInnerTexts();
  out.inputAfterQueue = await box.inputValue();
  out.usersWhileQueued = await frame.locator(".msg.user").count();
  await page.screenshot({ path: path.join(args.artifacts, "vscode-queued.png") });
  if (args.docsDir) await page.screenshot({ path: path.join(args.docsDir, "vscode-queued.png") });
  step("queued");

  await frame.locator(".queued-message", { hasText: q.drop }).locator(".queue-remove").click();
  await frame.waitForFunction((t) => ![...document.querySelectorAll(".queued-text")].some((e) => e.textContent === t), q.drop);
  await frame.locator(".queued-message", { hasText: q.second }).locator(".queue-edit").click();
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible" });
  out.editValue = await input.inputValue();
  await input.fill(q.edited);
  await input.press("Enter");
  await frame.locator(".queued-text", { hasText: q.edited }).waitFor({ timeout: 5000 });
  out.afterEdit = await frame.locator(".queued-text").allInnerTexts();
  step("queue edited");

  await frame.locator(".msg.answer", { hasText: q.secondAnswer }).waitFor({ timeout: 30000 });
  out.users = await frame.locator(".msg.user").allInnerTexts();
  out.queueAfter = await frame.locator(".queue").count();
  step("queued message sent");

  await box.fill(q.third);
  await box.press("Enter");
  await frame.locator(".msg.answer", { hasText: q.slow }).waitFor({ timeout: 15000 });
  await box.fill(q.never);
  await box.press("Enter");
  await frame.locator(".queued-text", { hasText: q.never }).waitFor({ timeout: 5000 });
  await frame.locator("#stop").click();
  const dialog = page.locator(".monaco-dialog-box");
  await dialog.waitFor({ state: "visible", timeout: 10000 });
  out.stopDialog = await dialog.innerText();
  await dialog.locator(".monaco-button", { hasText: "Drop" }).first().click();
  await frame.waitForFunction(() => document.body.dataset.busy === "0", null, { timeout: 15000 });
  await page.waitForTimeout(1000);
  out.queueAfterStop = await frame.locator(".queue").count();
  out.usersAfterStop = await frame.locator(".msg.user").allInnerTexts();
  step("stopped, queue dropped");
}

const browser = await chromium.launch({
  executablePath: args.chromium,
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
let page;
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 860 } });
  page = await context.newPage();
  page.setDefaultTimeout(30000);
  await page.goto(args.url);
  await page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: 60000 });
  step("workbench up");

  // The extension is active when its status bar item shows.
  const status = page.locator(".statusbar-item", { hasText: "Totem:" }).first();
  await status.waitFor({ state: "visible", timeout: 60000 });
  // Before the first turn it names the model new sessions use (totem/models' default).
  await page.locator(".statusbar-item", { hasText: "Totem: sim/" }).first().waitFor({ timeout: 30000 }).catch(() => undefined);
  seen.statusBefore = (await status.innerText()).trim();
  step(`extension active: ${seen.statusBefore}`);

  // Open the file with Quick Open.
  await page.keyboard.press("Control+P");
  const quick = page.locator(".quick-input-widget input");
  await quick.waitFor({ state: "visible" });
  await quick.fill(args.file);
  // A row shows the name, then its folder ("api.js controllers").
  await page.locator(".quick-input-list .monaco-list-row", { hasText: path.basename(args.file) }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(`.tabs-container .tab[aria-label*="${path.basename(args.file)}"]`).first().waitFor({ state: "visible" });
  await page.locator(".monaco-editor .view-lines").first().waitFor({ state: "visible" });
  step("file open");

  // Totem: Ask, then the question in the input box.
  await runCommand(page, "Totem: Ask");
  const box = page.locator(".quick-input-widget input");
  await box.waitFor({ state: "visible" });
  await page.locator(".quick-input-widget", { hasText: "Ask Totem" }).waitFor({ state: "visible" });
  await box.fill(args.question);
  await page.keyboard.press("Enter");
  step("asked");

  // The permission for the edit: VS Code's diff editor, the file against Totem's proposal.
  const diff = page.locator(".monaco-diff-editor").first();
  await diff.waitFor({ state: "visible", timeout: 60000 });
  const diffTab = page.locator(".tabs-container .tab.active").first();
  seen.diffTab = (await diffTab.getAttribute("aria-label")) ?? "";
  await page.waitForTimeout(800); // let both sides render
  // Monaco draws spaces as non-breaking spaces.
  const plain = (text) => text.replace(/\u00a0/g, " ");
  seen.diffText = plain(await diff.innerText());
  seen.diffModified = plain(await diff.locator(".editor.modified .lines-content > .view-lines:not([monaco-view-zone])").innerText());
  const frameBeforeAccept = await chatFrame(page);
  seen.chatWhileAsking = await frameBeforeAccept.locator("#totem-chat").innerText();
  await page.screenshot({ path: path.join(args.artifacts, "vscode-diff.png") });
  step("diff editor shown");
  // Code lenses are hidden in diff editors (diffEditor.codeLens off): each hunk is labelled, no toast asks.
  seen.firstMarks = await hunkMarks(diff, "Hunk 2 of 2");
  seen.toasts = await page.locator(".notifications-toasts .notification-toast").allInnerTexts();

  // Accept, from the diff editor's title bar.
  const accept = page.locator('.editor-actions .action-label[aria-label^="Accept"]').first();
  await accept.waitFor({ state: "visible" });
  await accept.click();
  step("accepted");

  // The answer ends in the chat view.
  const frame = await chatFrame(page);
  await frame.locator("#messages", { hasText: args.answer }).waitFor({ timeout: 60000 });
  await frame.locator(".model").last().waitFor();
  seen.chat = await frame.locator("#messages").innerText();
  seen.chatStatus = await frame.locator("#status").innerText();
  seen.reasoningCollapsed = await frame.locator("details.reasoning").first().evaluate((d) => !d.open).catch(() => null);
  seen.diffClosed = (await page.locator(".monaco-diff-editor").count()) === 0;
  step("answer shown");

  // The Problems view shows the convention finding (source totem) on the saved file.
  await runCommand(page, "View: Focus Problems (Errors, Warnings, Infos)");
  const problems = page.locator(".markers-panel");
  await problems.waitFor({ state: "visible" });
  const problem = problems.locator(".monaco-list-row", { hasText: args.finding }).first();
  await problem.waitFor({ timeout: 30000 });
  seen.problem = plain(await problem.innerText()).replace(/\s+/g, " ").trim();
  seen.problemLabel = (await problem.getAttribute("aria-label")) ?? "";
  seen.problems = plain(await problems.innerText());
  seen.statusAfter = (await status.innerText()).trim();
  // The title comes from the server's session list after the turn.
  await frame.locator("#title", { hasText: args.question }).waitFor({ timeout: 5000 }).catch(() => undefined);
  seen.chatTitle = await frame.locator("#title").innerText();
  step("problem shown");

  // Screenshots: the whole workbench with the chat, for the artifacts and the docs.
  await frame.locator("#messages").evaluate((m) => (m.scrollTop = 0));
  await page.screenshot({ path: path.join(args.artifacts, "vscode-chat.png") });
  if (args.docsImage) await page.screenshot({ path: args.docsImage });
  step("screenshots saved");

  if (args.subAgent) await subAgentAndCommands(page, args);
  if (args.rough) await roughEdges(page, args);
  if (args.job) await backgroundJob(page, args);
  if (args.review) await review21(page, args);
  if (args.queue) await queued37(page, args);
  seen.ok = true;
} catch (error) {
  seen.ok = false;
  seen.error = String(error && error.stack ? error.stack : error);
  if (page) await page.screenshot({ path: path.join(args.artifacts, "vscode-failure.png") }).catch(() => undefined);
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(seen) + "\n");
