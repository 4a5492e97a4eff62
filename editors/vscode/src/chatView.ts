// The chat view in the side bar: a webview that draws what render.ts makes of the ChatState and
// sends the user's input back.

import * as vscode from "vscode";
import type { Completions, Mode } from "./protocol";
import type { ViewModel } from "./render";

export type ViewMessage =
  | { type: "send"; text: string; images?: { name: string; mimeType: string; data: string }[] }
  | { type: "attach" }
  | { type: "abort" }
  | { type: "sessions" }
  | { type: "newChat" }
  | { type: "tab" | "closeTab"; key: number }
  | { type: "setModel"; model: string }
  | { type: "setMode"; mode: Mode }
  | { type: "rewind"; messageId: string }
  | { type: "fork"; messageId: string }
  | { type: "retry"; text?: string }
  | { type: "regenerate"; requestId: string }
  | { type: "variant"; requestId: string; index: number }
  | { type: "complete"; id: number; text: string; position: number }
  | { type: "answer"; outcome: "allow_once" | "allow_always" | "reject_once" | "reject_always"; feedback?: boolean }
  /** Put the waiting question in front again: its modal, or its diff (`path`: one file of it). */
  | { type: "showPending"; path?: string }
  | { type: "copy"; text: string }
  /** A message queued while the turn runs: edited (an input box) or removed before it is sent. */
  | { type: "queueEdit" | "queueRemove"; id: number }
  | { type: "jobStop" | "jobDismiss"; sessionId: string; jobId: string }
  | { type: "ready" };

export class ChatView implements vscode.WebviewViewProvider {
  static readonly viewId = "totem.chat";
  private view: vscode.WebviewView | undefined;
  private latest: ViewModel | undefined;

  constructor(private readonly extensionUri: vscode.Uri, private readonly onMessage: (m: ViewMessage) => void) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = this.html(view.webview, media);
    view.webview.onDidReceiveMessage((m: ViewMessage) => {
      if (m.type === "ready") this.post();
      else this.onMessage(m);
    });
    view.onDidChangeVisibility(() => view.visible && this.post());
    view.onDidDispose(() => (this.view = undefined));
  }

  update(model: ViewModel): void {
    this.latest = model;
    this.post();
  }

  /** Whether the chat view is on screen. */
  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  /** Show the chat view; with `preserveFocus`, the editor keeps the focus (a diff under review:
   * its code lenses are computed only while it has it). */
  async reveal(preserveFocus = false): Promise<void> {
    if (preserveFocus && this.view) this.view.show(true);
    else await vscode.commands.executeCommand(`${ChatView.viewId}.focus`);
  }

  /** Put text in the input box (a rewound message, to edit and send again). */
  setInput(text: string): void {
    void this.view?.webview.postMessage({ type: "setInput", text });
  }

  /** Images the user picked with the attach button, for the input's attachment row. */
  attached(images: { name: string; mimeType: string; data: string }[]): void {
    void this.view?.webview.postMessage({ type: "attached", images });
  }

  /** The answer to the view's `complete` message `id`. */
  completions(id: number, result: Completions): void {
    void this.view?.webview.postMessage({ type: "completions", id, ...result });
  }

  private post(): void {
    if (this.view && this.latest) void this.view.webview.postMessage({ type: "state", state: this.latest });
  }

  private html(webview: vscode.Webview, media: vscode.Uri): string {
    const nonce = Array.from({ length: 24 }, () => Math.floor(Math.random() * 36).toString(36)).join("");
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css"));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `img-src ${webview.cspSource} https: data:`,
      `script-src 'nonce-${nonce}'`,
    ].join("; ");
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>Totem</title>
</head>
<body>
<div id="totem-chat">
  <div id="header"><span id="title">New chat</span>
    <span class="actions">
      <button id="sessions" class="secondary" title="Sessions">Sessions</button>
      <button id="new" class="secondary" title="New chat">New</button>
    </span>
  </div>
  <div id="tabs" role="tablist" aria-label="Chats"></div>
  <div id="messages" aria-live="polite"></div>
  <div id="jobs" aria-label="Background jobs"></div>
  <div id="todos"></div>
  <div id="pending" hidden>
    <div id="pending-title"></div>
    <div id="pending-files" hidden><div id="pending-count"></div><ul id="pending-list"></ul></div>
    <ul id="pending-review" hidden aria-label="What Accept takes"></ul>
    <div class="buttons">
      <button id="accept" data-outcome="allow_once">Accept</button>
      <button id="always" data-outcome="allow_always" class="secondary">Always</button>
      <button data-outcome="reject_once" class="secondary">Reject</button>
      <button data-outcome="reject_once" data-feedback="1" class="secondary">Reject with feedback…</button>
      <button id="show-pending" class="secondary">Show diff</button>
    </div>
  </div>
  <div id="footer">
    <div id="status"><span id="ring" hidden><svg viewBox="0 0 36 36" width="16" height="16" aria-hidden="true"><circle class="ring-track" cx="18" cy="18" r="15" /><circle class="ring-used" cx="18" cy="18" r="15" /></svg><span id="ring-label"></span></span><span id="state"></span></div>
    <div id="commands" class="chips" aria-label="Slash commands"></div>
    <ul id="completions" role="listbox" hidden></ul>
    <div id="attachments" aria-label="Images to send"></div>
    <div id="input-wrap"><div id="input-chips" aria-hidden="true"></div><textarea id="input" rows="3" placeholder="Ask Totem… (@ for files, # for the editor, / for commands; Enter sends, Shift+Enter adds a line)"></textarea></div>
    <div class="buttons">
      <button id="send">Send</button>
      <button id="stop" class="secondary" hidden>Stop</button>
      <button id="attach" class="secondary" hidden title="Attach an image (or paste one into the box)">Image…</button>
      <span class="pickers">
        <select id="mode" title="Mode: build changes files, plan only plans"><option value="build">build</option><option value="plan">plan</option></select>
        <select id="model" title="Model"></select>
      </span>
    </div>
  </div>
</div>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }
}
