// How the server's questions are put to the user: an edit's permission as VS Code's diff editor
// (the file against the proposal, reviewed hunk by hunk: review.ts) with Accept and Reject; other
// permissions as a modal with the four choices, open until answered (openQuestions.ts); `ask` questions as a quick pick or input box;
// project trust from VS Code's own workspace trust.

import * as vscode from "vscode";
import type {
  PermissionAnswer,
  PermissionOutcome,
  PermissionParams,
  QuestionAnswer,
  QuestionParams,
  TotemUi,
  TrustAnswer,
  TrustParams,
} from "./protocol";
import type { PendingAsk } from "./chatState";
import { Review } from "./review";
import { OpenQuestions } from "./openQuestions";
import { permissionHeading } from "./notices";

/** Hooks the prompts report to, so the chat view and status bar can show what is waiting. */
export interface PromptHooks {
  /** What waits for the user in the chat of `sessionId` (undefined: nothing any more). */
  pendingChanged(sessionId: string, pending: PendingAsk | undefined): void;
  /** The user answered a change they reviewed: one line a file saying what they took. */
  reviewed(params: PermissionParams, lines: string[]): void;
  /** The name of the chat of `sessionId` (its title), for the questions it asks. */
  chatName(sessionId: string): string;
  log(message: string): void;
}

export class Prompts implements TotemUi, vscode.Disposable {
  readonly review: Review;
  private readonly modals = new OpenQuestions();

  constructor(private readonly hooks: PromptHooks) {
    this.review = new Review({
      progress: (params, lines) => this.hooks.pendingChanged(params.sessionId, { ...pendingOf(params), review: lines }),
      answered: (params, outcome, lines) => {
        void vscode.commands.executeCommand("setContext", "totem.editPending", false);
        this.hooks.pendingChanged(params.sessionId, undefined);
        if (lines.length) this.hooks.reviewed(params, lines);
      },
    });
  }

  // -- permission ------------------------------------------------------------------------

  async permission(params: PermissionParams): Promise<PermissionAnswer> {
    if (params.proposed && params.proposed.length) return this.editPermission(params);
    this.hooks.pendingChanged(params.sessionId, pendingOf(params));
    const answer = this.modals.ask(params);
    void this.modalPermission(params);
    try {
      return await answer;
    } finally {
      this.hooks.pendingChanged(params.sessionId, undefined);
    }
  }

  /** The modal for an open question; dismissed, it answers nothing (the chat's panel keeps it). */
  private async modalPermission(params: PermissionParams): Promise<void> {
    const always = `Allow always (${alwaysLabel(params)})`;
    const more: [string, PermissionOutcome, string][] = (params.choices ?? []).map((c) => [c.label, "allow_once", c.id]);
    const choices: [string, PermissionOutcome, string?][] = [
      ["Allow once", "allow_once"],
      ...more,
      [always, "allow_always"],
      ["Reject", "reject_once"],
      ["Reject always", "reject_always"],
    ];
    const detail = describeInput(params);
    const picked = await vscode.window.showWarningMessage(
      permissionHeading(params.title, this.hooks.chatName(params.sessionId)),
      { modal: true, detail },
      ...choices.map(([label]) => label),
    );
    const found = choices.find(([label]) => label === picked);
    if (found) this.modals.answer(params.callId, found[1], undefined, found[2]);
    else this.hooks.log(`The question "${params.title}" stays open: answer it in the chat's panel.`);
  }

  private async editPermission(params: PermissionParams): Promise<PermissionAnswer> {
    await vscode.commands.executeCommand("setContext", "totem.editPending", true);
    return this.review.ask(params);
  }

  /** Answer the open question of `callId` (the chat's panel), else the waiting edit (the diff
   * editor's actions). */
  answer(outcome: PermissionOutcome, feedback?: string, callId?: string): boolean {
    if (callId && this.modals.answer(callId, outcome, feedback)) return true;
    return this.review.finish(outcome, feedback);
  }

  /** Put the question of `callId` in front again: its modal, or the change's diff (`path`: one file of it). */
  show(callId: string | undefined, path?: string): boolean {
    const open = callId ? this.modals.get(callId) : undefined;
    if (open) {
      void this.modalPermission(open);
      return true;
    }
    return this.review.show(path);
  }

  /** The turn of `sessionId` ended: a question still open for it is moot (the server stopped waiting). */
  turnEnded(sessionId: string): void {
    this.modals.drop(sessionId);
    if (this.review.waiting?.sessionId === sessionId) this.review.finish("reject_once");
  }

  /** The server went away: nothing it asked can be answered any more. */
  serverGone(): void {
    this.modals.drop();
    this.review.finish("reject_once");
  }

  // -- question --------------------------------------------------------------------------

  async question(params: QuestionParams): Promise<QuestionAnswer> {
    this.hooks.pendingChanged(params.sessionId, { callId: params.callId, title: params.question, kind: "question" });
    try {
      if (params.options && params.options.length) {
        const other = "Another answer…";
        const picked = await vscode.window.showQuickPick([...params.options, other], {
          title: `Totem asks (chat "${this.hooks.chatName(params.sessionId)}")`,
          placeHolder: params.question,
          ignoreFocusOut: true,
        });
        if (picked === undefined) return { answer: null };
        if (picked !== other) return { answer: picked };
      }
      const typed = await vscode.window.showInputBox({ title: `Totem asks (chat "${this.hooks.chatName(params.sessionId)}")`, prompt: params.question, ignoreFocusOut: true });
      return { answer: typed ?? null };
    } finally {
      this.hooks.pendingChanged(params.sessionId, undefined);
    }
  }

  // -- trust -----------------------------------------------------------------------------

  async trust(params: TrustParams): Promise<TrustAnswer> {
    // VS Code's workspace trust decides: a trusted workspace trusts its project config.
    const trusted = vscode.workspace.isTrusted;
    this.hooks.log(`Project ${params.root} asks for trust (${params.reasons.join(", ")}): ${trusted ? "trusted" : "not trusted"} (VS Code workspace trust).`);
    return { trusted };
  }

  dispose(): void {
    this.review.dispose();
  }
}

/** The chat view's panel for a permission: the title, the files of a change, what "Always" adds. */
export function pendingOf(params: PermissionParams): PendingAsk {
  const files = params.paths.length && params.permission !== "bash" ? params.paths : undefined;
  const reviewed = !!params.proposed?.length;
  return { callId: params.callId, title: params.title, kind: "permission", diff: params.diff, files, always: alwaysLabel(params), reviewed };
}

/** What "always" stores, for people: "bash python3", "edit *". The server stores one session
 * rule, `permission` + `alwaysPattern` (docs/protocol.md). */
export function alwaysLabel(params: PermissionParams): string {
  return `${params.permission} ${params.alwaysPattern}`;
}

export function describeInput(params: PermissionParams): string {
  const input = params.input ?? {};
  const lines: string[] = [];
  // The command verbatim, quotes and all.
  if (typeof input.command === "string") lines.push(`Command: ${input.command}`);
  else if (typeof input.url === "string") lines.push(input.url);
  if (params.permission === "bash") {
    // For a command, `paths` are the simple commands the rules are matched against.
    if (params.paths.length) lines.push(`Command patterns (as the rules see them): ${params.paths.join(" · ")}`);
    lines.push(`"Allow always" adds the session rule: ${params.permission} ${params.alwaysPattern} (every command matching it)`);
  } else if (params.paths.length) {
    lines.push(`${params.paths.length === 1 ? "File" : `${params.paths.length} files`}: ${params.paths.join(", ")}`);
  }
  if (params.diff) lines.push(params.diff.length > 2000 ? params.diff.slice(0, 2000) + "\n…" : params.diff);
  if (params.rule) lines.push(`Rule: ${params.rule.permission} ${params.rule.pattern} → ask (${params.rule.source})`);
  return lines.join("\n") || params.title;
}
