// How the server's questions are put to the user: an edit's permission as VS Code's diff editor
// (the file against the proposed text, a virtual document) with Accept and Reject actions; other
// permissions as a modal with the four choices; `ask` questions as a quick pick or input box;
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

export const PROPOSED_SCHEME = "totem-proposed";

/** The proposed texts, served as read-only virtual documents. */
export class ProposedContent implements vscode.TextDocumentContentProvider {
  private texts = new Map<string, string>();
  private changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private counter = 0;

  add(fileUri: vscode.Uri, text: string, tag: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: fileUri.path, query: `${tag}-${++this.counter}` });
    this.texts.set(uri.toString(), text);
    this.changed.fire(uri);
    return uri;
  }

  remove(uri: vscode.Uri): void {
    this.texts.delete(uri.toString());
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }
}

interface Waiting {
  params: PermissionParams;
  resolve: (answer: PermissionAnswer) => void;
  uris: vscode.Uri[];
}

/** Hooks the prompts report to, so the chat view and status bar can show what is waiting. */
export interface PromptHooks {
  pendingChanged(pending: PendingAsk | undefined): void;
  log(message: string): void;
}

export class Prompts implements TotemUi, vscode.Disposable {
  readonly content = new ProposedContent();
  private waiting: Waiting | undefined;
  private disposables: vscode.Disposable[] = [];

  constructor(private readonly hooks: PromptHooks) {
    this.disposables.push(vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, this.content));
  }

  // -- permission ------------------------------------------------------------------------

  async permission(params: PermissionParams): Promise<PermissionAnswer> {
    if (params.proposed && params.proposed.length) return this.editPermission(params);
    this.hooks.pendingChanged(pendingOf(params));
    try {
      return await this.modalPermission(params);
    } finally {
      this.hooks.pendingChanged(undefined);
    }
  }

  private async modalPermission(params: PermissionParams): Promise<PermissionAnswer> {
    const always = `Allow always (${alwaysLabel(params)})`;
    const choices: [string, PermissionOutcome][] = [
      ["Allow once", "allow_once"],
      [always, "allow_always"],
      ["Reject", "reject_once"],
      ["Reject always", "reject_always"],
    ];
    const detail = describeInput(params);
    const picked = await vscode.window.showWarningMessage(
      `Totem wants to: ${params.title}`,
      { modal: true, detail },
      ...choices.map(([label]) => label),
    );
    const outcome = choices.find(([label]) => label === picked)?.[1] ?? "reject_once";
    return { outcome };
  }

  private async editPermission(params: PermissionParams): Promise<PermissionAnswer> {
    this.finish({ outcome: "reject_once" }); // one question at a time
    const uris: vscode.Uri[] = [];
    const answer = new Promise<PermissionAnswer>((resolve) => {
      this.waiting = { params, resolve, uris };
    });
    this.hooks.pendingChanged(pendingOf(params));
    await vscode.commands.executeCommand("setContext", "totem.editPending", true);
    const all = params.proposed ?? [];
    for (const [index, proposed] of all.entries()) {
      const fileUri = vscode.Uri.parse(proposed.uri);
      const right = this.content.add(fileUri, proposed.text, "proposed");
      uris.push(right);
      let left = fileUri;
      try {
        await vscode.workspace.fs.stat(fileUri);
      } catch {
        left = this.content.add(fileUri, "", "empty"); // a new file: compare with nothing
        uris.push(left);
      }
      const name = fileUri.path.split("/").pop();
      // Each tab says it is one file of the change: Accept on any of them accepts them all.
      const of = all.length > 1 ? ` (${index + 1} of ${all.length} files)` : "";
      await vscode.commands.executeCommand("vscode.diff", left, right, `${name} ↔ Totem's proposal${of}`, { preview: false });
    }
    return answer;
  }

  /** Answer the waiting edit (from the diff editor's actions or the chat view). */
  answerEdit(outcome: PermissionOutcome, feedback?: string): boolean {
    if (!this.waiting) return false;
    this.finish(feedback ? { outcome, feedback } : { outcome });
    return true;
  }

  /** The turn of `sessionId` ended: a question still open for it is moot (the server stopped waiting). */
  turnEnded(sessionId: string): void {
    if (this.waiting?.params.sessionId === sessionId) this.finish({ outcome: "reject_once" });
  }

  get editWaiting(): PermissionParams | undefined {
    return this.waiting?.params;
  }

  private finish(answer: PermissionAnswer): void {
    const waiting = this.waiting;
    if (!waiting) return;
    this.waiting = undefined;
    void vscode.commands.executeCommand("setContext", "totem.editPending", false);
    this.hooks.pendingChanged(undefined);
    waiting.resolve(answer);
    void this.closeDiffs(waiting.uris);
  }

  private async closeDiffs(uris: vscode.Uri[]): Promise<void> {
    const keys = new Set(uris.map((u) => u.toString()));
    const tabs: vscode.Tab[] = [];
    for (const group of vscode.window.tabGroups.all) {
      for (const tab of group.tabs) {
        const input = tab.input;
        if (input instanceof vscode.TabInputTextDiff && keys.has(input.modified.toString())) tabs.push(tab);
      }
    }
    try {
      if (tabs.length) await vscode.window.tabGroups.close(tabs, true);
    } finally {
      for (const uri of uris) this.content.remove(uri);
    }
  }

  // -- question --------------------------------------------------------------------------

  async question(params: QuestionParams): Promise<QuestionAnswer> {
    this.hooks.pendingChanged({ callId: params.callId, title: params.question, kind: "question" });
    try {
      if (params.options && params.options.length) {
        const other = "Another answer…";
        const picked = await vscode.window.showQuickPick([...params.options, other], {
          title: "Totem asks",
          placeHolder: params.question,
          ignoreFocusOut: true,
        });
        if (picked === undefined) return { answer: null };
        if (picked !== other) return { answer: picked };
      }
      const typed = await vscode.window.showInputBox({ title: "Totem asks", prompt: params.question, ignoreFocusOut: true });
      return { answer: typed ?? null };
    } finally {
      this.hooks.pendingChanged(undefined);
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
    this.finish({ outcome: "reject_once" });
    for (const d of this.disposables) d.dispose();
  }
}

/** The chat view's panel for a permission: the title, the files of a change, what "Always" adds. */
export function pendingOf(params: PermissionParams): PendingAsk {
  const files = params.paths.length && params.permission !== "bash" ? params.paths : undefined;
  return { callId: params.callId, title: params.title, kind: "permission", diff: params.diff, files, always: alwaysLabel(params) };
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
