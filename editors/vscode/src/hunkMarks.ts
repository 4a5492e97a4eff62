// Per-hunk Take and Leave in the proposal's diff editor without any setting: VS Code hides code
// lenses in diff editors unless the user turns on `diffEditor.codeLens`, so while that is off each
// hunk's first line carries a label ("Hunk 2 of 3 · hover: Take or Leave") whose hover has the two
// commands as links, and the editor's title bar has both for the hunk at the cursor (package.json).
// With the setting on, the code lenses (review.ts) are the per-hunk UI and these labels are not drawn.

import * as vscode from "vscode";

/** One hunk's row: where it starts in the proposal, its label, the commands' arguments. */
export interface HunkRow {
  line: number;
  index: number;
  total: number;
  taken: boolean;
  /** What `totem.takeHunk` and `totem.leaveHunk` take: the proposal's URI and the hunk's index. */
  args: [string, number];
}

function link(command: string, args: unknown[], title: string): string {
  return `[${title}](command:${command}?${encodeURIComponent(JSON.stringify(args))})`;
}

/** The label and the hover of one hunk. */
export function hunkMark(row: HunkRow): { label: string; hover: string } {
  const name = `Hunk ${row.index + 1} of ${row.total}`;
  const take = row.taken ? "$(check) Taken" : link("totem.takeHunk", row.args, "$(check) Take");
  return {
    label: `  ${name}${row.taken ? " · taken" : ""} · hover: Take or Leave`,
    hover: `**Totem: ${name}**\n\n${take} · ${link("totem.leaveHunk", row.args, "$(discard) Leave")}`,
  };
}

export class HunkMarks implements vscode.Disposable {
  private readonly decoration = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor("editorCodeLens.foreground"), fontStyle: "italic" },
    isWholeLine: true,
  });
  private readonly disposables: vscode.Disposable[] = [this.decoration];

  /** `rows`: the hunks of a proposal document (none: not a proposal under review). */
  constructor(private readonly rows: (document: vscode.TextDocument) => HunkRow[], changed: vscode.Event<void>) {
    this.disposables.push(
      changed(() => this.paint()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.paint()),
      vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration("diffEditor.codeLens") && this.paint()),
    );
  }

  /** Label every visible proposal's hunks (none while the code lenses show). */
  paint(): void {
    const lensesShown = vscode.workspace.getConfiguration("diffEditor").get<boolean>("codeLens");
    for (const editor of vscode.window.visibleTextEditors) {
      const rows = lensesShown ? [] : this.rows(editor.document);
      editor.setDecorations(this.decoration, rows.map((row) => {
        const { label, hover } = hunkMark(row);
        const hoverMessage = new vscode.MarkdownString(hover, true);
        hoverMessage.isTrusted = { enabledCommands: ["totem.takeHunk", "totem.leaveHunk"] };
        const line = Math.min(row.line, Math.max(0, editor.document.lineCount - 1));
        const end = editor.document.lineAt(line).range.end;
        return { range: new vscode.Range(line, 0, line, end.character), hoverMessage, renderOptions: { after: { contentText: label } } };
      }));
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
