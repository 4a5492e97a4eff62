// An agent's file change, reviewed in VS Code's diff editor: the file (its buffer) on the left,
// Totem's proposal on the right as an editable document of an in-memory file system, with code
// lenses over each hunk of the proposal ("Take", "Leave") when the user shows code lenses in diff
// editors, else a label and hover a hunk (hunkMarks.ts); the diff editor's own "revert block"
// arrows work too. Accept answers with what the proposal documents hold then, the `accepted`
// of a `totem/permission` answer (docs/protocol.md); Reject answers without.

import * as vscode from "vscode";
import { Hunk, describeOutcome, hunks, proposalOffsets, reviewOutcome } from "./hunks";
import { HunkMarks, HunkRow } from "./hunkMarks";
import type { PermissionAnswer, PermissionOutcome, PermissionParams } from "./protocol";

export const PROPOSED_SCHEME = "totem-proposed";

/** The proposals as files in memory, so the diff editor's right side can be edited and saved. */
export class ProposalFiles implements vscode.FileSystemProvider {
  private files = new Map<string, { data: Uint8Array; ctime: number; mtime: number }>();
  private emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.emitter.event;

  set(uri: vscode.Uri, text: string): void {
    const now = Date.now();
    this.files.set(uri.toString(), { data: new TextEncoder().encode(text), ctime: now, mtime: now });
  }

  remove(uri: vscode.Uri): void {
    this.files.delete(uri.toString());
  }

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    const file = this.get(uri);
    return { type: vscode.FileType.File, ctime: file.ctime, mtime: file.mtime, size: file.data.length };
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(): void {}

  readFile(uri: vscode.Uri): Uint8Array {
    return this.get(uri).data;
  }

  writeFile(uri: vscode.Uri, content: Uint8Array): void {
    const file = this.files.get(uri.toString());
    if (!file) throw vscode.FileSystemError.NoPermissions("Totem's proposal is gone: the question was answered.");
    file.data = content;
    file.mtime = Date.now();
    this.emitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }

  delete(uri: vscode.Uri): void {
    this.files.delete(uri.toString());
  }

  rename(): void {
    throw vscode.FileSystemError.NoPermissions("Totem's proposals cannot be renamed.");
  }

  private get(uri: vscode.Uri) {
    const file = this.files.get(uri.toString());
    if (!file) throw vscode.FileSystemError.FileNotFound(uri);
    return file;
  }
}

/** One file of the change under review. */
interface ReviewFile {
  /** The real file, and its path for people. */
  fileUri: vscode.Uri;
  path: string;
  /** The diff editor's sides: the file itself (or an empty proposal file for a new file), the proposal. */
  left: vscode.Uri;
  right: vscode.Uri;
  /** The file's text when asked (its buffer), and Totem's proposal. */
  original: string;
  proposed: string;
  /** Whether the user changed the proposal document (a hunk left, a hand edit). */
  touched: boolean;
  /** Hunks the user marked taken, by what they change. */
  taken: Set<string>;
}

interface Open {
  params: PermissionParams;
  files: ReviewFile[];
  resolve: (answer: PermissionAnswer) => void;
}

export interface ReviewHooks {
  /** The state of the review changed (a hunk taken or left, an edit): one line a file. */
  progress(params: PermissionParams, lines: string[]): void;
  /** The user answered; for an allow, one line a file saying what was taken. */
  answered(params: PermissionParams, outcome: PermissionOutcome, lines: string[]): void;
}

const signature = (h: Hunk) => `${h.originalStart}\u0000${h.originalLines.join("")}\u0000${h.proposalLines.join("")}`;

export class Review implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly files = new ProposalFiles();
  private open: Open | undefined;
  private counter = 0;
  private lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private disposables: vscode.Disposable[] = [];

  constructor(private readonly hooks: ReviewHooks) {
    this.disposables.push(
      vscode.workspace.registerFileSystemProvider(PROPOSED_SCHEME, this.files, { isCaseSensitive: true }),
      vscode.languages.registerCodeLensProvider({ scheme: PROPOSED_SCHEME }, this),
      vscode.workspace.onDidChangeTextDocument((e) => this.changed(e)),
      this.lensesChanged,
      new HunkMarks((document) => this.rows(document), this.lensesChanged.event),
    );
  }

  /** Opens a diff editor a file and answers when the user does (`finish`). */
  async ask(params: PermissionParams): Promise<PermissionAnswer> {
    this.finish("reject_once"); // one question at a time
    const tag = ++this.counter;
    const files: ReviewFile[] = [];
    for (const proposed of params.proposed ?? []) {
      const fileUri = vscode.Uri.parse(proposed.uri);
      const right = fileUri.with({ scheme: PROPOSED_SCHEME, path: `/${tag}${fileUri.path}`, query: "", fragment: "" });
      this.files.set(right, proposed.text);
      let original = "";
      let left = fileUri;
      try {
        original = (await vscode.workspace.openTextDocument(fileUri)).getText();
      } catch {
        left = right.with({ path: `/${tag}-empty${fileUri.path}` }); // a new file: compare with nothing
        this.files.set(left, "");
      }
      files.push({ fileUri, path: vscode.workspace.asRelativePath(fileUri), left, right, original, proposed: proposed.text, touched: false, taken: new Set() });
    }
    const answer = new Promise<PermissionAnswer>((resolve) => (this.open = { params, files, resolve }));
    // Each tab says it is one file of the change: Accept on any of them answers for them all.
    for (const file of files) await this.openDiff(file, files);
    this.report();
    this.lensesChanged.fire();
    return answer;
  }

  /** Open the diff of the change under review again (its tab was closed): the file at `path`,
   * else every file of it. The proposal documents keep what the user changed in them. */
  show(path?: string): boolean {
    const open = this.open;
    if (!open) return false;
    const files = open.files.filter((f) => !path || f.path === path);
    void (async () => {
      for (const file of files.length ? files : open.files) await this.openDiff(file, open.files);
    })();
    return true;
  }

  /** One file's diff editor: the file against the proposal, "(2 of 3 files)" in a change of several. */
  private async openDiff(file: ReviewFile, all: ReviewFile[]): Promise<void> {
    const name = file.fileUri.path.split("/").pop();
    const of = all.length > 1 ? ` (${all.indexOf(file) + 1} of ${all.length} files)` : "";
    await vscode.commands.executeCommand("vscode.diff", file.left, file.right, `${name} ↔ Totem's proposal${of}`, { preview: false });
  }

  get waiting(): PermissionParams | undefined {
    return this.open?.params;
  }

  /** Answer the open question. An allow carries each file's text as the proposal documents hold it. */
  finish(outcome: PermissionOutcome, feedback?: string): boolean {
    const open = this.open;
    if (!open) return false;
    this.open = undefined;
    const answer: PermissionAnswer = { outcome };
    if (feedback) answer.feedback = feedback;
    let lines: string[] = [];
    if (outcome === "allow_once" || outcome === "allow_always") {
      answer.accepted = open.files.map((f) => ({ uri: f.fileUri.toString(), text: this.current(f) }));
      lines = open.files.map((f) => describeOutcome(f.path, reviewOutcome(f.original, f.proposed, this.current(f))));
    }
    this.hooks.answered(open.params, outcome, lines);
    open.resolve(answer);
    void this.close(open.files);
    this.lensesChanged.fire();
    return true;
  }

  // -- hunks -----------------------------------------------------------------------------

  /** The hunks of a proposal document under review, in order (none for another document). */
  rows(document: vscode.TextDocument): HunkRow[] {
    const file = this.fileOf(document.uri);
    if (!file) return [];
    const found = hunks(file.original, document.getText());
    return found.map((h, index) => ({
      line: h.proposalStart, index, total: found.length, taken: file.taken.has(signature(h)), args: [document.uri.toString(), index],
    }));
  }

  /** The code lenses VS Code shows in a diff editor when `diffEditor.codeLens` is on. */
  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    return this.rows(document).flatMap(({ line: start, index, total, taken, args }) => {
      const line = Math.min(start, Math.max(0, document.lineCount - 1));
      const range = new vscode.Range(line, 0, line, 0);
      return [
        new vscode.CodeLens(range, { title: `Hunk ${index + 1} of ${total}`, command: "" }),
        new vscode.CodeLens(range, taken
          ? { title: "$(check) Taken", command: "", tooltip: "Accept applies it" }
          : { title: "$(check) Take", command: "totem.takeHunk", arguments: args, tooltip: "Keep this hunk: Accept applies it" }),
        new vscode.CodeLens(range, { title: "$(discard) Leave", command: "totem.leaveHunk", arguments: args, tooltip: "Put these lines back as they are in the file" }),
      ];
    });
  }

  /** Mark a hunk taken (it stays in the proposal). Without arguments: the hunk at the cursor. */
  take(uri?: string, index?: number): void {
    const found = this.hunkAt(uri, index);
    if (!found) return;
    found.file.taken.add(signature(found.hunk));
    this.lensesChanged.fire();
    this.report();
  }

  /** Put a hunk back as the file has it, in the proposal document. */
  async leave(uri?: string, index?: number): Promise<void> {
    const found = this.hunkAt(uri, index);
    if (!found) return;
    const { document, hunk } = found;
    const { start, end } = proposalOffsets(document.getText(), hunk);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(document.uri, new vscode.Range(document.positionAt(start), document.positionAt(end)), hunk.originalLines.join(""));
    await vscode.workspace.applyEdit(edit);
  }

  /** The hunk `index` of the proposal `uri`; without them, the hunk at the cursor of the diff
   * editor's side that has it (the title bar's buttons), which the status bar asks for when none. */
  private hunkAt(uri: string | undefined, index: number | undefined) {
    const editor = vscode.window.activeTextEditor;
    const at = (key: string) => vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
    let document = uri ? at(uri) : undefined;
    // The cursor on the file's side (left) counts in the file's lines.
    let onLeft = false;
    if (!uri && editor) {
      const left = this.open?.files.find((f) => f.left.toString() === editor.document.uri.toString());
      onLeft = !!left;
      document = left ? at(left.right.toString()) : editor.document;
    }
    const file = document && this.fileOf(document.uri);
    if (!document || !file) return undefined;
    const found = hunks(file.original, document.getText());
    if (index === undefined) {
      const line = editor?.selection.active.line ?? -1;
      const inside = (start: number, lines: string[]) => line >= start && line < start + Math.max(1, lines.length);
      index = found.findIndex((h) => (onLeft ? inside(h.originalStart, h.originalLines) : inside(h.proposalStart, h.proposalLines)));
      if (index < 0) void vscode.window.setStatusBarMessage("Totem: put the cursor in a hunk of the proposal first", 4000);
    }
    const hunk = found[index];
    return hunk ? { document, file, hunk } : undefined;
  }

  private changed(e: vscode.TextDocumentChangeEvent): void {
    const file = this.fileOf(e.document.uri);
    if (!file || !e.contentChanges.length) return;
    file.touched = true;
    this.lensesChanged.fire();
    this.report();
  }

  private fileOf(uri: vscode.Uri): ReviewFile | undefined {
    const key = uri.toString();
    return this.open?.files.find((f) => f.right.toString() === key);
  }

  /** What the proposal document holds now; untouched, exactly what Totem proposed. */
  private current(file: ReviewFile): string {
    if (!file.touched) return file.proposed;
    const key = file.right.toString();
    return vscode.workspace.textDocuments.find((d) => d.uri.toString() === key)?.getText() ?? file.proposed;
  }

  private report(): void {
    const open = this.open;
    if (!open) return;
    this.hooks.progress(open.params, open.files.map((f) => progressLine(f.path, f.original, f.proposed, this.current(f))));
  }

  private async close(files: ReviewFile[]): Promise<void> {
    const keys = new Set(files.map((f) => f.right.toString()));
    // Saved into memory first, so closing an edited proposal does not ask to save it.
    for (const d of vscode.workspace.textDocuments) if (keys.has(d.uri.toString()) && d.isDirty) await d.save().then(undefined, () => false);
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
      for (const f of files) {
        this.files.remove(f.right);
        if (f.left.scheme === PROPOSED_SCHEME) this.files.remove(f.left);
      }
    }
  }

  dispose(): void {
    this.finish("reject_once");
    for (const d of this.disposables) d.dispose();
  }
}

/** "api.js: keeps 1 of 2 hunks", for the chat's panel while the review is open. */
export function progressLine(path: string, original: string, proposed: string, current: string): string {
  const outcome = reviewOutcome(original, proposed, current);
  const total = hunks(original, proposed).length;
  switch (outcome.kind) {
    case "proposed":
      return `${path}: keeps all ${total === 1 ? "of it" : `${total} hunks`}`;
    case "unchanged":
      return `${path}: leaves all of it`;
    case "hunks":
      return `${path}: keeps ${outcome.taken} of ${outcome.total} hunks`;
    case "edited":
      return `${path}: edited by you`;
  }
}
