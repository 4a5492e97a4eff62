// What a chat message says about the editor: the file it is about (`context`) and the document,
// selection and diagnostics that `#buffer`, `#selection` and `#diagnostics` name (`editor`,
// docs/protocol.md "Mentions"). The chat view has the focus when the user sends, so the last
// file editor is remembered.

import * as vscode from "vscode";
import type { ChatParams, Diagnostic } from "./protocol";

export class EditorContext implements vscode.Disposable {
  private last: vscode.TextEditor | undefined;
  private subscription: vscode.Disposable;

  constructor() {
    this.remember(vscode.window.activeTextEditor);
    this.subscription = vscode.window.onDidChangeActiveTextEditor((e) => this.remember(e));
  }

  private remember(editor: vscode.TextEditor | undefined): void {
    if (editor && editor.document.uri.scheme === "file") this.last = editor;
  }

  /** The file editor the user was in: the active one, else the last one still open. */
  get editor(): vscode.TextEditor | undefined {
    const active = vscode.window.activeTextEditor;
    if (active?.document.uri.scheme === "file") return active;
    if (this.last && !this.last.document.isClosed) return this.last;
    return undefined;
  }

  /** `context` (the file, as a label for the chat too) and `editor` for a message sent from the chat view. */
  params(): { context?: ChatParams["context"]; editor?: ChatParams["editor"]; label?: string } {
    const editor = this.editor;
    if (!editor) return {};
    const uri = editor.document.uri;
    const s = editor.selection;
    const range = s.isEmpty ? undefined : { start: { line: s.start.line, character: s.start.character }, end: { line: s.end.line, character: s.end.character } };
    const diagnostics = vscode.languages.getDiagnostics(uri).map(toLsp);
    return {
      context: { uri: uri.toString() },
      editor: { uri: uri.toString(), ...(range ? { range } : {}), ...(diagnostics.length ? { diagnostics } : {}) },
      label: vscode.workspace.asRelativePath(uri),
    };
  }

  dispose(): void {
    this.subscription.dispose();
  }
}

/** A VS Code diagnostic as LSP has it (severity 1 error … 4 hint). */
function toLsp(d: vscode.Diagnostic): Diagnostic {
  const code = typeof d.code === "object" ? d.code.value : d.code;
  return {
    range: { start: { line: d.range.start.line, character: d.range.start.character }, end: { line: d.range.end.line, character: d.range.end.character } },
    message: d.message,
    severity: d.severity + 1,
    ...(code !== undefined ? { code } : {}),
    ...(d.source ? { source: d.source } : {}),
  };
}
