// Totem for VS Code: one `totem lsp` per window (all workspace folders in one client), a chat
// view, a status bar item and the `totem.*` palette commands. The server's own commands are
// `totem.server.*` and are registered by the language client.

import * as os from "os";
import * as path from "path";
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  StaticFeature,
  ClientCapabilities,
  FeatureState,
  DidChangeConfigurationNotification,
  CloseAction,
  CloseHandlerResult,
  ErrorAction,
  ErrorCodes,
} from "vscode-languageclient/node";
import { ChatList } from "./chatList";
import { ChatState, sessionTitle, statusText } from "./chatState";
import { ChatView, ViewMessage } from "./chatView";
import { EditorContext } from "./editorContext";
import { confirmOverwrite, pickAgentFile, pickHookFile, pickMcpServer, pickMode, pickModel, pickRewind, pickSession } from "./pickers";
import {
  CLIENT_CAPABILITIES,
  ChatParams,
  ChatResult,
  CommandInfo,
  Mode,
  ModelInfo,
  PermissionOutcome,
  TotemClient,
  TotemEvent,
  configurationSettings,
  describeFileChanges,
  editorConfig,
  protocolWarning,
} from "./protocol";
import { OPEN_CHAT, askNotice, noticeDue, turnEndNotice } from "./notices";
import { Prompts } from "./prompts";
import { toolItems, toolsTitle } from "./toolList";
import { viewModel } from "./render";

class TotemCapabilities implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.experimental = { ...(capabilities.experimental as object | undefined), totem: CLIENT_CAPABILITIES };
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: "static" };
  }
  clear(): void {}
}

function settings() {
  const c = vscode.workspace.getConfiguration("totem");
  return {
    path: c.get<string>("path") || "totem",
    model: c.get<string>("model") || undefined,
    autoSave: c.get<boolean>("autoSave", true),
    config: c.get<Record<string, unknown>>("config") ?? {},
    maxSteps: c.get<string>("maxSteps", "default"),
    notify: c.get<boolean>("notify", true),
  };
}

/** How often the server is restarted after it stopped on its own, and within how long. */
const MAX_RESTARTS = 4;
const RESTART_PERIOD_MS = 3 * 60 * 1000;

export class TotemExtension implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private totem: TotemClient | undefined;
  private starting: Promise<TotemClient> | undefined;
  /** The window's chats; the view shows `chats.current`. */
  readonly chats = new ChatList();
  private readonly view: ChatView;
  private readonly prompts: Prompts;
  private readonly editors = new EditorContext();
  private readonly statusItem: vscode.StatusBarItem;
  private readonly output: vscode.OutputChannel;
  private models: ModelInfo[] | undefined;
  /** The slash commands of `totem/commands`: chips in the chat view. */
  private commands: CommandInfo[] = [];
  /** The mode new sessions get (`totem/setMode` without a session). */
  private newSessionMode: Mode | undefined;
  /** Chats whose turn this window is waiting for (`totem/chat`, retry, regenerate). */
  private running = new Set<ChatState>();
  /** When the server stopped on its own (for the bounded restarts), and whether it ran before. */
  private restarts: number[] = [];
  private ranOnce = false;
  private refreshTimer: NodeJS.Timeout | undefined;
  private disposables: vscode.Disposable[] = [];

  constructor(private readonly context: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel("Totem");
    this.view = new ChatView(context.extensionUri, (m) => void this.onViewMessage(m));
    this.prompts = new Prompts({
      pendingChanged: (sessionId, pending) => {
        const chat = this.chats.forSession(sessionId) ?? this.chats.current;
        const asked = pending && pending.callId !== chat.pending?.callId;
        if (asked) this.notice(askNotice(pending.kind, pending.title, this.chatName(sessionId)), chat);
        chat.setPending(pending);
        // What waits for the user is shown, whichever chat it is in; once: a review's progress
        // must not take the focus from the diff editor (its code lenses refresh only while it has it).
        if (pending && chat !== this.chats.current && !this.chats.current.pending) this.chats.current = chat;
        this.refresh(true);
        if (asked) void this.view.reveal(this.prompts.review.waiting?.callId === pending.callId);
      },
      reviewed: (params, lines) => {
        const chat = this.chats.forSession(params.sessionId);
        if (!chat) return;
        chat.reviews.set(params.callId, lines);
        const tool = chat.entries.find((e) => e.type === "tool" && e.callId === params.callId);
        if (tool && tool.type === "tool") tool.review = lines;
        this.refresh(true);
      },
      chatName: (sessionId) => this.chatName(sessionId),
      log: (message) => this.output.appendLine(message),
    });
    this.statusItem = vscode.window.createStatusBarItem("totem.status", vscode.StatusBarAlignment.Left, 50);
    this.statusItem.name = "Totem";
    this.statusItem.command = `${ChatView.viewId}.focus`;
    this.statusItem.show();
    this.chats.current.model = settings().model;
    this.disposables.push(
      this.output,
      this.prompts,
      this.editors,
      this.statusItem,
      vscode.window.registerWebviewViewProvider(ChatView.viewId, this.view, { webviewOptions: { retainContextWhenHidden: true } }),
      vscode.workspace.onDidChangeConfiguration((e) => void this.configurationChanged(e)),
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.restart()),
    );
    // A command file added, changed or removed changes the chips.
    const commandFiles = vscode.workspace.createFileSystemWatcher("**/.totem/commands/*.md");
    for (const on of [commandFiles.onDidCreate, commandFiles.onDidChange, commandFiles.onDidDelete]) {
      this.disposables.push(on(() => void this.refreshCommands()));
    }
    this.disposables.push(commandFiles);
    this.refresh(true);
  }

  /** The chat of `sessionId` as its tab names it: its title. */
  private chatName(sessionId: string): string {
    const chat = this.chats.forSession(sessionId);
    return chat?.title || (chat ? "Session" : "another session");
  }

  /** The chat the view shows. */
  get state(): ChatState {
    return this.chats.current;
  }

  // -- the language client ---------------------------------------------------------------

  start(): Promise<TotemClient> {
    if (!this.starting) {
      this.starting = this.startClient().catch((error) => {
        this.starting = undefined;
        throw error;
      });
    }
    return this.starting;
  }

  private async startClient(): Promise<TotemClient> {
    const s = settings();
    const command = resolveCommand(s.path);
    const serverOptions: ServerOptions = { command, args: ["lsp"], options: { env: process.env } };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }],
      initializationOptions: { ...(s.model ? { model: s.model } : {}), config: editorConfig(s.config, s.maxSteps) },
      outputChannel: this.output,
      diagnosticCollectionName: "totem",
      errorHandler: {
        error: (_error, _message, count) => ({ action: count && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
        closed: () => this.serverClosed(),
      },
    };
    const client = new LanguageClient("totem", "Totem", serverOptions, clientOptions);
    client.registerFeature(new TotemCapabilities());
    const totem = new TotemClient(client, this.prompts);
    totem.listen();
    totem.onEvent((event) => this.onEvent(event));
    client.onDidChangeState((change) => {
      if (change.newState === State.Stopped && this.chats.jobs.serverStopped()) this.refresh(true);
      if (change.newState === State.Running && this.client === client) {
        if (this.ranOnce) void this.reattach(totem);
        this.ranOnce = true;
      }
    });
    this.client = client;
    this.totem = totem;
    this.output.appendLine(`Starting ${command} lsp`);
    await client.start();
    const warning = protocolWarning(client.initializeResult);
    if (warning) void vscode.window.showWarningMessage(warning);
    void this.refreshCommands(totem);
    void this.lookUpDefaultModel(totem);
    return totem;
  }

  /** The server stopped without being asked to: restart it, at most MAX_RESTARTS times in RESTART_PERIOD_MS. */
  private serverClosed(): CloseHandlerResult {
    this.prompts.serverGone();
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < RESTART_PERIOD_MS);
    if (this.restarts.length >= MAX_RESTARTS) {
      const message = `Totem's server stopped ${MAX_RESTARTS + 1} times in 3 minutes; it is not restarted. Run "Totem: Restart Server" once it is fixed (see the Totem output).`;
      void vscode.window.showErrorMessage(message);
      return { action: CloseAction.DoNotRestart, message, handled: true };
    }
    this.restarts.push(now);
    const message = `Totem's server stopped; restarting it (${this.restarts.length} of ${MAX_RESTARTS}).`;
    this.output.appendLine(message);
    void vscode.window.setStatusBarMessage(message, 5000);
    return { action: CloseAction.Restart, message, handled: true };
  }

  /** The server came back after it stopped: every chat reopens its session from the store. */
  private async reattach(totem: TotemClient): Promise<void> {
    this.output.appendLine("Totem's server is back; reopening the chats' sessions.");
    for (const chat of this.chats.chats) {
      if (!chat.sessionId) continue;
      chat.busy = false;
      chat.turnState = "idle";
      chat.pending = undefined;
      this.running.delete(chat);
      try {
        chat.load(await totem.session(chat.sessionId));
        chat.entries.push({ type: "notice", level: "warning", message: SERVER_BACK });
      } catch (error) {
        this.output.appendLine(`Reopening ${chat.sessionId} failed: ${errorMessage(error)}`);
      }
    }
    void this.refreshCommands(totem);
    // A provider added to the config while it was down: the model dropdown lists its models.
    void this.lookUpDefaultModel(totem);
    this.refresh(true);
  }

  async restart(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.totem?.dispose();
    this.totem = undefined;
    this.starting = undefined;
    this.ranOnce = false;
    this.restarts = [];
    if (client && client.state !== State.Stopped) await client.stop().catch(() => undefined);
    await this.start().catch((e) => this.showError("Totem could not start", e));
    for (const chat of this.chats.chats) if (chat.sessionId && this.totem) await this.reload(chat);
    this.refresh(true);
  }

  private async configurationChanged(e: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!e.affectsConfiguration("totem")) return;
    if (e.affectsConfiguration("totem.path")) return this.restart();
    if (["totem.model", "totem.config", "totem.maxSteps"].some((key) => e.affectsConfiguration(key))) {
      const s = settings();
      if (!this.client || this.client.state !== State.Running) return;
      await this.client.sendNotification(DidChangeConfigurationNotification.type, {
        settings: configurationSettings(s.model, s.config, s.maxSteps),
      });
      // `totem.config` may add or drop a provider: the dropdown follows.
      if (this.totem) await this.lookUpDefaultModel(this.totem);
      if (s.model && !this.state.busy && !this.state.sessionId) {
        this.state.model = s.model;
        this.refresh(true);
      }
    }
  }

  // -- events ----------------------------------------------------------------------------

  private onEvent(event: TotemEvent): void {
    const chat = this.chats.apply(event);
    if (event.kind === "turnEnd") {
      this.prompts.turnEnded(event.sessionId);
      if (chat) this.notice(turnEndNotice(event.stopReason, chat.title, event.parentCallId), chat);
      // A turn this window did not ask for (the "Ask Totem to fix" action): its stored form, with ids.
      if (chat && !this.running.has(chat)) void this.reload(chat).then(() => this.refresh(true));
    }
    if (event.kind === "turnStart" && chat) {
      void this.lookUpContextWindow(chat, event.model);
      if (!chat.title) void this.lookUpTitle(chat);
    }
    if (event.kind === "toolEnd" && event.changed?.length) void this.saveChanged(event.changed);
    if (chat) this.refresh(event.kind !== "textDelta" && event.kind !== "reasoningDelta");
  }

  /** A notification for a user who is not looking at the chat (`totem.notify`); its button shows `chat`. */
  private notice(message: string | undefined, chat: ChatState): void {
    const where = { viewVisible: this.view.visible, windowFocused: vscode.window.state.focused };
    if (!message || !noticeDue(settings().notify, where)) return;
    this.output.appendLine(`Notice: ${message}`);
    void vscode.window.showInformationMessage(message, OPEN_CHAT).then((choice) => {
      if (choice !== OPEN_CHAT) return;
      if (this.chats.chats.includes(chat)) this.chats.current = chat;
      this.refresh(true);
      void this.view.reveal();
    });
  }

  /** Write the files the agent changed, so tests and commands see the change (`totem.autoSave`). */
  private async saveChanged(paths: string[]): Promise<void> {
    if (!settings().autoSave) return;
    const folders = vscode.workspace.workspaceFolders ?? [];
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme !== "file" || !doc.isDirty) continue;
      const hit = folders.some((f) => paths.some((p) => path.join(f.uri.fsPath, p) === doc.uri.fsPath));
      if (hit) await doc.save();
    }
  }

  /** The chat as stored: the ids its buttons need, variants, chips. Not while its turn runs. */
  private async reload(chat: ChatState): Promise<void> {
    if (!chat.sessionId || chat.busy || !this.totem) return;
    try {
      chat.load(await this.totem.session(chat.sessionId));
    } catch (error) {
      this.output.appendLine(`totem/session failed: ${errorMessage(error)}`);
    }
  }

  /** The session's title, which the server gives it from the first message. */
  private async lookUpTitle(chat: ChatState): Promise<void> {
    try {
      const session = (await this.totem?.sessions())?.find((s) => s.sessionId === chat.sessionId);
      if (session?.title && !chat.title) {
        chat.title = sessionTitle(session.title);
        this.refresh(true);
      }
    } catch {
      // the title is a nicety
    }
  }

  /** The slash commands of the first folder's project (what `totem/commands` answers). */
  private async refreshCommands(totem = this.totem): Promise<void> {
    if (!totem) return;
    try {
      this.commands = await totem.commands(vscode.workspace.workspaceFolders?.[0]?.uri.toString());
      this.refresh(true);
    } catch (error) {
      this.output.appendLine(`totem/commands failed: ${errorMessage(error)}`);
    }
  }

  /** The models to pick from, and the one new sessions use (`default` of totem/models); asked
   * again whenever the server (re)starts or the settings change. */
  private async lookUpDefaultModel(totem: TotemClient): Promise<void> {
    try {
      this.models = await totem.models();
      const found = this.models.find((m) => m.default);
      const chat = this.state;
      if (found && !chat.sessionId && !chat.busy && !settings().model) {
        chat.model = found.id;
        if (found.contextWindow && !chat.contextWindow) chat.contextWindow = found.contextWindow;
      }
      this.refresh(true);
    } catch (error) {
      this.output.appendLine(`totem/models failed: ${errorMessage(error)}`);
    }
  }

  /** The window of the turn's model, until a `context` event says it. */
  private async lookUpContextWindow(chat: ChatState, model: string): Promise<void> {
    try {
      if (!this.models) this.models = (await this.totem?.models()) ?? [];
      const info = this.models.find((m) => m.id === model);
      if (info?.contextWindow && !chat.contextWindow) {
        chat.contextWindow = info.contextWindow;
        this.refresh(true);
      }
    } catch {
      this.models = [];
    }
  }

  /** Redraw the chat and the status bar; streamed text is redrawn at most every 50 ms. */
  refresh(now = false): void {
    if (!now) {
      if (!this.refreshTimer) this.refreshTimer = setTimeout(() => this.refresh(true), 50);
      return;
    }
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = undefined;
    const chat = this.state;
    const status = statusText(chat.model, chat.turnState);
    const icon = chat.busy ? "$(loading~spin)" : "$(comment-discussion)";
    this.statusItem.text = `${icon} Totem: ${status}`;
    this.statusItem.tooltip = `Totem — ${status}. Click to open the chat.`;
    this.view.update(
      viewModel(chat, status, this.commands, {
        tabs: this.chats.tabs(),
        models: (this.models ?? []).map((m) => m.id),
        mode: this.newSessionMode,
        blind: (this.models ?? []).filter((m) => m.vision === false).map((m) => m.id),
        unsure: (this.models ?? []).filter((m) => m.vision === null || m.vision === undefined).map((m) => m.id),
      }),
    );
  }

  // -- turns -----------------------------------------------------------------------------

  async send(
    text: string,
    context?: ChatParams["context"],
    contextLabel?: string,
    editor?: ChatParams["editor"],
    images: { name: string; mimeType: string; data: string }[] = [],
  ): Promise<void> {
    // A built-in action (totem/commands lists it without a file): the editor calls its request.
    if (text.trim() === "/undo") return this.undoRedo("Undo");
    if (text.trim() === "/compact") return this.compact();
    const chat = this.state;
    if (chat.busy) {
      chat.queue.add(text, { context, label: contextLabel, editor, images });
      this.refresh(true);
      return;
    }
    return this.sendIn(chat, text, context, contextLabel, editor, images);
  }

  /** Sends `text` as the next turn of `chat` (its session, or a new one). */
  private async sendIn(
    chat: ChatState,
    text: string,
    context: ChatParams["context"] | undefined,
    contextLabel: string | undefined,
    editor: ChatParams["editor"] | undefined,
    images: { name: string; mimeType: string; data: string }[],
  ): Promise<void> {
    chat.beginTurn(text, contextLabel, images.map((i) => ({ name: i.name, src: `data:${i.mimeType};base64,${i.data}` })));
    this.refresh(true);
    await this.view.reveal();
    const params: ChatParams = {
      text,
      ...(chat.sessionId ? { sessionId: chat.sessionId } : {}),
      ...(context ? { context } : {}),
      ...(editor ? { editor } : {}),
      ...(images.length ? { attachments: images.map((i) => ({ type: "image" as const, mimeType: i.mimeType, data: i.data, name: i.name })) } : {}),
    };
    await this.runTurn(chat, (totem) => totem.chat(params), text);
  }

  /** Run one turn of `chat` and, once it ends, show it as stored. `resend`: the text a Retry
   * sends again when the request fails before a turn starts. */
  private async runTurn(chat: ChatState, run: (totem: TotemClient) => Promise<ChatResult>, resend?: string): Promise<void> {
    this.running.add(chat);
    try {
      const totem = await this.start();
      const result = await run(totem);
      if (!chat.sessionId) chat.sessionId = result.sessionId;
      chat.awaitingSession = false;
      if (chat.busy && chat.sessionId === result.sessionId) {
        // turnEnd normally ends the turn; this covers a lost event.
        chat.busy = false;
        chat.turnState = "idle";
      }
      this.running.delete(chat);
      await this.reload(chat);
    } catch (error) {
      this.running.delete(chat);
      if (serverStopped(error)) {
        // The server went away during the turn: it restarts, and reattach reopens the session.
        chat.busy = false;
        chat.turnState = "idle";
        chat.awaitingSession = false;
        chat.entries.push({ type: "notice", level: "warning", message: SERVER_STOPPED });
      } else {
        let message = errorMessage(error);
        if (/ENOENT/.test(message)) message += ` — is \`totem.path\` (${settings().path}) right?`;
        chat.failTurn(message, chat.sessionId ? undefined : resend);
      }
    }
    this.refresh(true);
    void this.sendQueued(chat);
  }

  /** The first message queued in `chat` (messageQueue.ts) sent, once no turn runs there. */
  private async sendQueued(chat: ChatState): Promise<void> {
    if (chat.busy || this.running.has(chat)) return;
    const next = chat.queue.take();
    if (!next) return;
    await this.sendIn(chat, next.text, next.with.context, next.with.label, next.with.editor, next.with.images);
  }

  /** A queued message edited in an input box (emptied: removed), before it is sent. */
  private async editQueued(id: number): Promise<void> {
    const chat = this.state;
    const message = chat.queue.messages.find((m) => m.id === id);
    if (!message) return;
    const text = await vscode.window.showInputBox({ title: "Edit the queued message", value: message.text, ignoreFocusOut: true });
    if (text === undefined) return;
    if (text.trim()) chat.queue.edit(id, text);
    else chat.queue.remove(id);
    this.refresh(true);
  }

  /** Take up the chat's failed last turn (`totem/retry`). */
  async retry(): Promise<void> {
    const chat = this.state;
    if (!chat.sessionId || chat.busy) return;
    if (!chat.entries.some((e) => e.type === "error" && e.retry)) {
      void vscode.window.showInformationMessage("Totem: the chat's last turn did not fail; there is nothing to retry.");
      return;
    }
    const sessionId = chat.sessionId;
    chat.beginAgain();
    this.refresh(true);
    await this.runTurn(chat, (totem) => totem.retry(sessionId));
  }

  /** A new answer to a request, the answer so far kept as a variant (`totem/regenerate`). */
  async regenerate(requestId: string): Promise<void> {
    const chat = this.state;
    if (!chat.sessionId || chat.busy) return;
    const sessionId = chat.sessionId;
    chat.beginAgain(requestId);
    this.refresh(true);
    await this.runTurn(chat, (totem) => totem.regenerate(sessionId, requestId));
  }

  /** Show another answer of a request (`totem/variant`): the conversation follows it. */
  async variant(requestId: string, index: number): Promise<void> {
    const chat = this.state;
    if (!chat.sessionId || chat.busy) return;
    try {
      await (await this.start()).variant(chat.sessionId, requestId, index);
      await this.reload(chat);
      this.refresh(true);
    } catch (error) {
      this.showError("Totem: could not switch the answer", error);
    }
  }

  /** Back to before a message (`totem/rewind`): the conversation, and the files if the user says so;
   * files the user changed since are named and overwritten only when they confirm. The message
   * goes back into the input box. */
  async rewind(messageId: string): Promise<void> {
    const chat = this.state;
    const sessionId = chat.sessionId;
    if (!sessionId || chat.busy) return;
    const entry = chat.entries.find((e) => e.type === "user" && e.messageId === messageId);
    const how = await pickRewind();
    if (!how) return;
    try {
      const totem = await this.start();
      let force = false;
      if (how.files) {
        const dry = await totem.rewind({ sessionId, messageId, files: true, dryRun: true });
        const conflicts = dry.files.filter((f) => f.action === "conflict");
        if (conflicts.length) {
          const overwrite = await confirmOverwrite(conflicts);
          if (overwrite === undefined) return;
          force = overwrite;
        }
      }
      const result = await totem.rewind({ sessionId, messageId, files: how.files, ...(force ? { force } : {}) });
      await this.saveChanged(result.files.filter((f) => f.action === "restored").map((f) => f.path));
      await this.reload(chat);
      if (entry?.type === "user") this.view.setInput(entry.text);
      this.refresh(true);
      const changed = result.files.length ? ` ${describeFileChanges(result.files, "Undo").replace(/^Undo: /, "Files: ")}` : "";
      void vscode.window.setStatusBarMessage(`Totem: rewound ${result.rewound.length} messages.${changed}`, 5000);
    } catch (error) {
      this.showError("Totem: rewind failed", error);
    }
  }

  /** A new session (`totem/fork`) holding the chat's conversation up to `messageId` (a message's
   * Fork: the end of its answer), else as it stands; it opens in a tab of its own, as a session
   * picked in the list does. The original is unchanged. */
  async fork(messageId?: string): Promise<void> {
    const chat = this.state;
    const sessionId = chat.sessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage("Totem: no session to fork in this chat.");
      return;
    }
    if (chat.busy) {
      void vscode.window.showInformationMessage("Totem is still working on the last message. Stop it first (Totem: Abort).");
      return;
    }
    try {
      const totem = await this.start();
      const forked = await totem.fork(sessionId, messageId);
      this.chats.open(await totem.session(forked.sessionId));
      this.refresh(true);
      await this.view.reveal();
      const title = chat.title ? ` “${chat.title}”` : "";
      void vscode.window.setStatusBarMessage(`Totem: this chat is a fork of${title} ${messageId ? "up to that message" : "as it stood"} (${sessionId})`, 8000);
    } catch (error) {
      this.showError("Totem: fork failed", error);
    }
  }

  async ask(withSelection: boolean): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    let context: ChatParams["context"];
    let label: string | undefined;
    if (editor && editor.document.uri.scheme === "file") {
      const doc = editor.document;
      const rel = vscode.workspace.asRelativePath(doc.uri);
      if (withSelection && !editor.selection.isEmpty) {
        const s = editor.selection;
        context = { uri: doc.uri.toString(), range: { start: { line: s.start.line, character: s.start.character }, end: { line: s.end.line, character: s.end.character } } };
        const last = s.end.character === 0 && s.end.line > s.start.line ? s.end.line : s.end.line + 1;
        label = `${rel}:${s.start.line + 1}-${last}`;
      } else {
        context = { uri: doc.uri.toString() };
        label = rel;
      }
    } else if (withSelection) {
      void vscode.window.showInformationMessage("Select some code in an editor first.");
      return;
    }
    const text = await vscode.window.showInputBox({
      title: withSelection ? "Ask Totem about the selection" : "Ask Totem",
      prompt: label ? `About ${label}` : undefined,
      placeHolder: "What should Totem do?",
      ignoreFocusOut: true,
    });
    if (!text) return;
    await this.send(text, context, label, this.editors.params().editor);
  }

  async abort(): Promise<void> {
    const sessionId = this.state.sessionId;
    if (!sessionId || !this.totem) return;
    if (!(await this.dropQueueOnStop(this.state))) return;
    this.prompts.turnEnded(sessionId);
    const aborted = await this.totem.abort(sessionId).catch(() => false);
    if (!aborted) void vscode.window.setStatusBarMessage("Totem: nothing to stop", 3000);
  }

  /** A stop with messages queued asks whether to drop them: Drop, or Keep (sent after the stop);
   * false when the user cancelled the stop. */
  private async dropQueueOnStop(chat: ChatState): Promise<boolean> {
    const count = chat.queue.size;
    if (!count) return true;
    const what = count === 1 ? "1 queued message" : `${count} queued messages`;
    const choice = await vscode.window.showWarningMessage(
      `Stop the turn. Drop the ${what}?`,
      { modal: true, detail: "Kept, they are sent after the stop, one turn each." },
      "Drop",
      "Keep",
    );
    if (choice === undefined) return false;
    if (choice === "Drop") chat.queue.clear();
    this.refresh(true);
    return true;
  }

  async undoRedo(which: "Undo" | "Redo"): Promise<void> {
    const sessionId = this.state.sessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage(`Totem: no session to ${which.toLowerCase()} in this chat.`);
      return;
    }
    try {
      const totem = await this.start();
      const result = which === "Undo" ? await totem.undo(sessionId) : await totem.redo(sessionId);
      await this.saveChanged(result.files.filter((f) => f.action === "restored").map((f) => f.path));
      void vscode.window.showInformationMessage(describeFileChanges(result.files, which));
    } catch (error) {
      this.showError(`Totem: ${which} failed`, error);
    }
  }

  async compact(): Promise<void> {
    const sessionId = this.state.sessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage("Totem: no session to compact in this chat.");
      return;
    }
    try {
      const result = await (await this.start()).compact(sessionId);
      void vscode.window.showInformationMessage(
        result.compacted
          ? `Totem: compacted ${result.messages} messages; the next turn starts from the summary.`
          : "Totem: nothing new to compact.",
      );
    } catch (error) {
      this.showError("Totem: compact failed", error);
    }
  }

  // -- sessions, models, modes -----------------------------------------------------------

  /** The stored sessions; the one picked opens in a tab (its own, when it is open already). */
  async sessions(): Promise<void> {
    try {
      const totem = await this.start();
      const picked = await pickSession(await totem.sessions(), this.state.sessionId, new Set(this.chats.chats.map((c) => c.sessionId)));
      if (!picked) return;
      if (picked === "new") return this.newChat();
      this.chats.open(await totem.session(picked));
      this.refresh(true);
      await this.view.reveal();
    } catch (error) {
      this.showError("Totem: could not list the sessions", error);
    }
  }

  newChat(): void {
    const model = this.state.sessionId ? this.models?.find((m) => m.default)?.id ?? this.state.model : this.state.model;
    const chat = this.chats.newChat();
    chat.model ??= settings().model ?? model;
    this.refresh(true);
    void this.view.reveal();
  }

  /** The agents panel: the agents the `task` tool can start, with their source; the one picked
   * is opened to edit (its Markdown file). */
  async agents(): Promise<void> {
    try {
      const totem = await this.start();
      const editor = vscode.window.activeTextEditor;
      const uri = editor?.document.uri.scheme === "file" ? editor.document.uri.toString() : vscode.workspace.workspaceFolders?.[0]?.uri.toString();
      const file = await pickAgentFile(await totem.agents(uri));
      if (file) await vscode.window.showTextDocument(vscode.Uri.file(file));
    } catch (error) {
      this.showError("Totem: could not list the agents", error);
    }
  }

  /** "Show Hooks": the hooks the config files declare, each with its file and whether it runs
   * (an untrusted project's do not); the one picked opens its config file. */
  async hooks(): Promise<void> {
    try {
      const totem = await this.start();
      const editor = vscode.window.activeTextEditor;
      const uri = editor?.document.uri.scheme === "file" ? editor.document.uri.toString() : vscode.workspace.workspaceFolders?.[0]?.uri.toString();
      const file = await pickHookFile(await totem.hooks(uri), os.homedir());
      if (file) await vscode.window.showTextDocument(vscode.Uri.file(file));
    } catch (error) {
      this.showError("Totem: could not list the hooks", error);
    }
  }

  /** "Show Session Tools": the tools the chat's model has (`totem/tools`), and why fewer than all. */
  async sessionTools(): Promise<void> {
    const sessionId = this.state.sessionId;
    if (!sessionId) {
      void vscode.window.showInformationMessage("Totem: no session in this chat yet.");
      return;
    }
    try {
      const listed = await (await this.start()).sessionTools(sessionId);
      await vscode.window.showQuickPick(toolItems(listed), { title: toolsTitle(listed), placeHolder: listed.narrowed ?? "Every built-in tool", matchOnDescription: true });
    } catch (error) {
      this.showError("Totem: could not list the tools", error);
    }
  }

  /** "Log in to MCP server" (`totem/mcpLogin`): the server picked from those the config declares
   * with a URL; the server opens the login page in the browser (window/showDocument). */
  async mcpLogin(): Promise<void> {
    try {
      const totem = await this.start();
      const uri = vscode.workspace.workspaceFolders?.[0]?.uri.toString();
      const name = await pickMcpServer(await totem.mcpServers(uri));
      if (!name) return;
      const done = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Totem: logging in to the MCP server ${name}; finish in the browser` },
        () => totem.mcpLogin(name, uri),
      );
      void vscode.window.showInformationMessage(`Totem: logged in to the MCP server ${done.server} (${done.tools.length} tools).`);
    } catch (error) {
      this.showError("Totem: MCP login failed", error);
    }
  }

  async selectModel(): Promise<void> {
    try {
      this.models = await (await this.start()).models();
      const picked = await pickModel(this.models, this.state.model, !!this.state.sessionId);
      if (picked) await this.setModel(picked);
    } catch (error) {
      this.showError("Totem: could not change the model", error);
    }
  }

  /** The chat's model from now on (`totem/setModel`); a chat with no session yet: new sessions'. */
  async setModel(model: string): Promise<void> {
    const chat = this.state;
    try {
      const result = await (await this.start()).setModel(model, chat.sessionId);
      chat.model = result.model;
      const info = this.models?.find((m) => m.id === result.model);
      if (info?.contextWindow) chat.contextWindow = info.contextWindow;
    } catch (error) {
      this.showError("Totem: could not change the model", error);
    }
    this.refresh(true);
  }

  /** The chat's mode from its next turn on (`totem/setMode`); a chat with no session yet: new sessions'. */
  async setMode(mode: Mode): Promise<void> {
    const chat = this.state;
    try {
      const result = await (await this.start()).setMode(mode, chat.sessionId);
      chat.mode = result.mode;
      if (!chat.sessionId) this.newSessionMode = result.mode;
    } catch (error) {
      this.showError("Totem: could not change the mode", error);
    }
    this.refresh(true);
  }

  async selectMode(): Promise<void> {
    const picked = await pickMode(this.state.mode ?? this.newSessionMode ?? "build", !!this.state.sessionId);
    if (picked) await this.setMode(picked);
  }

  /** Stop a background job (`totem/jobStop`): its button is disabled until the server answers,
   * once the job's whole process group has ended. */
  async stopJob(sessionId: string, jobId: string): Promise<void> {
    const jobs = this.chats.jobs;
    const job = jobs.setStopping(sessionId, jobId, true);
    if (!job || job.state !== "running") return;
    this.refresh(true);
    try {
      const result = await (await this.start()).jobStop(sessionId, jobId);
      jobs.stopped(sessionId, result);
    } catch (error) {
      jobs.setStopping(sessionId, jobId, false);
      this.showError(`Totem: could not stop ${jobId}`, error);
    }
    this.refresh(true);
  }

  /** Answer what the shown chat's panel asks (else the change under review: the diff editor's actions). */
  answerEdit(outcome: PermissionOutcome, feedback?: string): void {
    if (!this.prompts.answer(outcome, feedback, this.state.pending?.callId)) void vscode.window.setStatusBarMessage("Totem: no question is waiting", 3000);
  }

  takeHunk(uri?: string, index?: number): void {
    this.prompts.review.take(uri, index);
  }

  leaveHunk(uri?: string, index?: number): Promise<void> {
    return this.prompts.review.leave(uri, index);
  }

  /** Images from files the user picks, to the input's attachment row (sent with the next message). */
  private async attachImages(): Promise<void> {
    const picked = await vscode.window.showOpenDialog({
      canSelectMany: true,
      openLabel: "Attach",
      title: "Totem: attach images",
      filters: { Images: Object.keys(IMAGE_TYPES) },
    });
    if (!picked?.length) return;
    const images = [];
    for (const uri of picked) {
      const ext = uri.path.split(".").pop()?.toLowerCase() ?? "";
      const bytes = await vscode.workspace.fs.readFile(uri);
      images.push({ name: uri.path.split("/").pop() ?? "image", mimeType: IMAGE_TYPES[ext] ?? "image/png", data: Buffer.from(bytes).toString("base64") });
    }
    this.view.attached(images);
  }

  /** Completion for the chat input (`totem/complete`): mentions and slash commands. */
  private async complete(id: number, text: string, position: number): Promise<void> {
    try {
      const totem = await this.start();
      const uri = this.editors.editor?.document.uri.toString() ?? vscode.workspace.workspaceFolders?.[0]?.uri.toString();
      const result = await totem.complete(text, position, this.state.sessionId, uri);
      this.view.completions(id, result);
    } catch (error) {
      this.output.appendLine(`totem/complete failed: ${errorMessage(error)}`);
      this.view.completions(id, { start: position, end: position, items: [] });
    }
  }

  private async onViewMessage(m: ViewMessage): Promise<void> {
    switch (m.type) {
      case "send": {
        const { context, editor, label } = this.editors.params();
        return this.send(m.text, context, label, editor, m.images ?? []);
      }
      case "attach":
        return this.attachImages();
      case "abort":
        return this.abort();
      case "sessions":
        return this.sessions();
      case "newChat":
        return this.newChat();
      case "tab":
        if (this.chats.select(m.key)) this.refresh(true);
        return;
      case "closeTab":
        if (this.chats.close(m.key)) this.refresh(true);
        else void vscode.window.setStatusBarMessage("Totem: stop the turn before closing its chat", 3000);
        return;
      case "setModel":
        return this.setModel(m.model);
      case "setMode":
        return this.setMode(m.mode);
      case "rewind":
        return this.rewind(m.messageId);
      case "fork":
        return this.fork(m.messageId);
      case "retry":
        return m.text ? this.send(m.text) : this.retry();
      case "regenerate":
        return this.regenerate(m.requestId);
      case "variant":
        return this.variant(m.requestId, m.index);
      case "complete":
        return this.complete(m.id, m.text, m.position);
      case "jobStop":
        return this.stopJob(m.sessionId, m.jobId);
      case "jobDismiss":
        if (this.chats.jobs.dismiss(m.sessionId, m.jobId)) this.refresh(true);
        return;
      case "queueEdit":
        return this.editQueued(m.id);
      case "queueRemove":
        if (this.state.queue.remove(m.id)) this.refresh(true);
        return;
      case "copy":
        await vscode.env.clipboard.writeText(m.text);
        void vscode.window.setStatusBarMessage("Totem: code copied", 2000);
        return;
      case "showPending":
        if (!this.prompts.show(this.state.pending?.callId, m.path)) void vscode.window.setStatusBarMessage("Totem: no question is waiting", 3000);
        return;
      case "answer": {
        let feedback: string | undefined;
        if (m.feedback) {
          feedback = await vscode.window.showInputBox({ title: "Tell Totem why", prompt: "Sent to the model with the refusal", ignoreFocusOut: true });
          if (feedback === undefined) return;
        }
        return this.answerEdit(m.outcome, feedback || undefined);
      }
    }
  }

  private showError(title: string, error: unknown): void {
    const message = `${title}: ${errorMessage(error)}`;
    this.output.appendLine(message);
    void vscode.window.showErrorMessage(message);
  }

  async dispose(): Promise<void> {
    for (const d of this.disposables) d.dispose();
    this.totem?.dispose();
    if (this.client && this.client.state === State.Running) await this.client.stop().catch(() => undefined);
  }
}

/** The image formats `totem/chat` takes, by file extension (docs/protocol.md "Images"). */
const IMAGE_TYPES: Record<string, string> = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp" };

const SERVER_STOPPED = "Totem's server stopped during this turn; it is being restarted.";
const SERVER_BACK = "Totem's server stopped and was restarted; this chat is reopened from its session.";

/** Whether a request failed because the connection to the server went away (it stopped). */
function serverStopped(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (code === ErrorCodes.PendingResponseRejected || code === ErrorCodes.ConnectionInactive) return true;
  return /connection (got disposed|is closed)|Client is not running/i.test(errorMessage(error));
}

function errorMessage(error: unknown): string {
  if (error && typeof error === "object" && "message" in error) return String((error as { message: unknown }).message);
  return String(error);
}

/** `~/x` and workspace-relative paths in `totem.path`. */
function resolveCommand(command: string): string {
  if (command.startsWith("~/")) return path.join(process.env.HOME ?? "", command.slice(2));
  if (!path.isAbsolute(command) && command.includes("/")) {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (folder) return path.join(folder.uri.fsPath, command);
  }
  return command;
}

let extension: TotemExtension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<TotemExtension> {
  const ext = new TotemExtension(context);
  extension = ext;
  const register = (id: string, run: (...args: any[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, run));
  register("totem.ask", () => ext.ask(false));
  register("totem.askSelection", () => ext.ask(true));
  register("totem.abort", () => ext.abort());
  register("totem.undo", () => ext.undoRedo("Undo"));
  register("totem.redo", () => ext.undoRedo("Redo"));
  register("totem.sessions", () => ext.sessions());
  register("totem.fork", () => ext.fork());
  register("totem.newChat", () => ext.newChat());
  register("totem.selectModel", () => ext.selectModel());
  register("totem.agents", () => ext.agents());
  register("totem.hooks", () => ext.hooks());
  register("totem.sessionTools", () => ext.sessionTools());
  register("totem.mcpLogin", () => ext.mcpLogin());
  register("totem.selectMode", () => ext.selectMode());
  register("totem.retry", () => ext.retry());
  register("totem.restartServer", () => ext.restart());
  // A lens or hover passes the proposal's URI and the hunk's index; the title bar and the context
  // menu pass the editor's resource (a Uri): then the hunk at the cursor.
  const hunkArgs = (uri: unknown, index: unknown): [string?, number?] =>
    typeof uri === "string" && typeof index === "number" ? [uri, index] : [];
  register("totem.takeHunk", (uri?: unknown, index?: unknown) => ext.takeHunk(...hunkArgs(uri, index)));
  register("totem.leaveHunk", (uri?: unknown, index?: unknown) => ext.leaveHunk(...hunkArgs(uri, index)));
  register("totem.acceptEdit", () => ext.answerEdit("allow_once"));
  register("totem.rejectEdit", () => ext.answerEdit("reject_once"));
  context.subscriptions.push({ dispose: () => void ext.dispose() });
  await ext.start().catch((error) => {
    const message = `Totem could not start \`${settings().path} lsp\`: ${errorMessage(error)}. Set \`totem.path\`.`;
    void vscode.window.showErrorMessage(message);
  });
  return ext;
}

export async function deactivate(): Promise<void> {
  await extension?.dispose();
  extension = undefined;
}
