// Totem for VS Code: one `totem lsp` per window (all workspace folders in one client), a chat
// view, a status bar item and the `totem.*` palette commands. The server's own commands are
// `totem.server.*` and are registered by the language client.

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
} from "vscode-languageclient/node";
import { ChatState, sessionTitle, statusText } from "./chatState";
import { ChatView, ViewMessage } from "./chatView";
import {
  CLIENT_CAPABILITIES,
  ChatParams,
  CommandInfo,
  ModelInfo,
  TotemClient,
  TotemEvent,
  configurationSettings,
  describeFileChanges,
  protocolWarning,
} from "./protocol";
import { Prompts } from "./prompts";
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
  };
}

export class TotemExtension implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private totem: TotemClient | undefined;
  private starting: Promise<TotemClient> | undefined;
  readonly state = new ChatState();
  private readonly view: ChatView;
  private readonly prompts: Prompts;
  private readonly statusItem: vscode.StatusBarItem;
  private readonly output: vscode.OutputChannel;
  private models: ModelInfo[] | undefined;
  /** The slash commands of `totem/commands`: chips and completion in the chat view. */
  private commands: CommandInfo[] = [];
  private refreshTimer: NodeJS.Timeout | undefined;
  private disposables: vscode.Disposable[] = [];

  constructor(private readonly context: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel("Totem");
    this.view = new ChatView(context.extensionUri, (m) => void this.onViewMessage(m));
    this.prompts = new Prompts({
      pendingChanged: (pending) => {
        this.state.setPending(pending);
        this.refresh(true);
        if (pending) void this.view.reveal();
      },
      log: (message) => this.output.appendLine(message),
    });
    this.statusItem = vscode.window.createStatusBarItem("totem.status", vscode.StatusBarAlignment.Left, 50);
    this.statusItem.name = "Totem";
    this.statusItem.command = `${ChatView.viewId}.focus`;
    this.statusItem.show();
    this.state.model = settings().model;
    this.disposables.push(
      this.output,
      this.prompts,
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
      initializationOptions: { ...(s.model ? { model: s.model } : {}), config: s.config },
      outputChannel: this.output,
      diagnosticCollectionName: "totem",
    };
    const client = new LanguageClient("totem", "Totem", serverOptions, clientOptions);
    client.registerFeature(new TotemCapabilities());
    const totem = new TotemClient(client, this.prompts);
    totem.listen();
    totem.onEvent((event) => this.onEvent(event));
    client.onDidChangeState((change) => {
      if (change.newState === State.Stopped && this.state.jobs.serverStopped()) this.refresh(true);
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

  async restart(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.totem?.dispose();
    this.totem = undefined;
    this.starting = undefined;
    if (client && client.state !== State.Stopped) await client.stop().catch(() => undefined);
    await this.start().catch((e) => this.showError("Totem could not start", e));
  }

  private async configurationChanged(e: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!e.affectsConfiguration("totem")) return;
    if (e.affectsConfiguration("totem.path")) return this.restart();
    if (e.affectsConfiguration("totem.model") || e.affectsConfiguration("totem.config")) {
      const s = settings();
      if (!this.client || this.client.state !== State.Running) return;
      await this.client.sendNotification(DidChangeConfigurationNotification.type, {
        settings: configurationSettings(s.model, s.config),
      });
      if (s.model && !this.state.busy) {
        this.state.model = s.model;
        this.refresh(true);
      }
    }
  }

  // -- events ----------------------------------------------------------------------------

  private onEvent(event: TotemEvent): void {
    const changed = this.state.apply(event);
    if (event.kind === "turnEnd") {
      this.prompts.turnEnded(event.sessionId);
      if (!this.state.title && event.sessionId === this.state.sessionId) void this.lookUpTitle(event.sessionId);
    }
    if (event.kind === "turnStart") {
      void this.lookUpContextWindow(event.model);
      // A turn started elsewhere (the "Ask Totem to fix" action): its title, during the turn.
      if (!this.state.title && event.sessionId === this.state.sessionId) void this.lookUpTitle(event.sessionId);
    }
    if (event.kind === "toolEnd" && event.changed?.length) void this.saveChanged(event.changed);
    if (changed) this.refresh(event.kind !== "textDelta" && event.kind !== "reasoningDelta");
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

  /** The session's title, which the server gives it from the first message. */
  private async lookUpTitle(sessionId: string): Promise<void> {
    try {
      const session = (await this.totem?.sessions())?.find((s) => s.sessionId === sessionId);
      if (session?.title && this.state.sessionId === sessionId) {
        this.state.title = sessionTitle(session.title);
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

  /** The model new sessions use, for the status bar before the first turn (`default` of totem/models). */
  private async lookUpDefaultModel(totem: TotemClient): Promise<void> {
    try {
      this.models = await totem.models();
      const found = this.models.find((m) => m.default);
      if (found && !this.state.sessionId && !this.state.busy && !settings().model) {
        this.state.model = found.id;
        if (found.contextWindow) this.state.contextWindow = found.contextWindow;
        this.refresh(true);
      }
    } catch (error) {
      this.output.appendLine(`totem/models failed: ${errorMessage(error)}`);
    }
  }

  private async lookUpContextWindow(model: string): Promise<void> {
    try {
      if (!this.models) this.models = (await this.totem?.models()) ?? [];
      const info = this.models.find((m) => m.id === model);
      if (info?.contextWindow) {
        this.state.contextWindow = info.contextWindow;
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
    const status = statusText(this.state.model, this.state.turnState);
    const icon = this.state.busy ? "$(loading~spin)" : "$(comment-discussion)";
    this.statusItem.text = `${icon} Totem: ${status}`;
    this.statusItem.tooltip = `Totem — ${status}. Click to open the chat.`;
    this.view.update(viewModel(this.state, status, this.commands));
  }

  // -- user actions ----------------------------------------------------------------------

  async send(text: string, context?: ChatParams["context"], contextLabel?: string): Promise<void> {
    // A built-in action (totem/commands lists it without a file): the editor calls its request.
    if (text.trim() === "/undo") return this.undoRedo("Undo");
    if (text.trim() === "/compact") return this.compact();
    if (this.state.busy) {
      void vscode.window.showInformationMessage("Totem is still working on the last message. Stop it first (Totem: Abort).");
      return;
    }
    this.state.beginTurn(text, contextLabel);
    this.refresh(true);
    await this.view.reveal();
    try {
      const totem = await this.start();
      const params: ChatParams = { text, ...(this.state.sessionId ? { sessionId: this.state.sessionId } : {}), ...(context ? { context } : {}) };
      const result = await totem.chat(params);
      if (!this.state.sessionId) this.state.sessionId = result.sessionId;
      if (this.state.busy && this.state.sessionId === result.sessionId) {
        // turnEnd normally ends the turn; this covers a lost event.
        this.state.busy = false;
        this.state.turnState = "idle";
      }
    } catch (error) {
      let message = errorMessage(error);
      if (/ENOENT/.test(message)) message += ` — is \`totem.path\` (${settings().path}) right?`;
      this.state.failTurn(message);
    }
    this.refresh(true);
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
    await this.send(text, context, label);
  }

  async abort(): Promise<void> {
    const sessionId = this.state.sessionId;
    if (!sessionId || !this.totem) return;
    this.prompts.turnEnded(sessionId);
    const aborted = await this.totem.abort(sessionId).catch(() => false);
    if (!aborted) void vscode.window.setStatusBarMessage("Totem: nothing to stop", 3000);
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

  async sessions(): Promise<void> {
    try {
      const totem = await this.start();
      const list = await totem.sessions();
      type Item = vscode.QuickPickItem & { sessionId?: string };
      const items: Item[] = [
        { label: "$(add) New chat" },
        ...list.map((s) => ({
          label: (s.sessionId === this.state.sessionId ? "$(check) " : "") + (sessionTitle(s.title) || "(untitled)"),
          description: s.sessionId === this.state.sessionId ? `${s.model} · current` : s.model,
          detail: new Date(s.updatedAt * 1000).toLocaleString(),
          sessionId: s.sessionId,
        })),
      ];
      const picked = await vscode.window.showQuickPick(items, { title: "Totem sessions", placeHolder: "Reopen a session" });
      if (!picked) return;
      if (!picked.sessionId) return this.newChat();
      if (this.state.busy) {
        void vscode.window.showInformationMessage("Totem is still working; stop it before switching sessions.");
        return;
      }
      this.state.load(await totem.session(picked.sessionId));
      this.refresh(true);
      await this.view.reveal();
    } catch (error) {
      this.showError("Totem: could not list the sessions", error);
    }
  }

  newChat(): void {
    if (this.state.busy) {
      void vscode.window.showInformationMessage("Totem is still working; stop it before starting a new chat.");
      return;
    }
    const model = this.state.model;
    this.state.reset();
    this.state.model = model;
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
      const agents = await totem.agents(uri);
      const picked = await vscode.window.showQuickPick(
        agents.map((a) => ({
          label: a.name,
          description: a.source,
          detail: [a.description, a.tools ? `tools: ${a.tools.join(", ")}` : "all tools", a.model ?? ""].filter(Boolean).join(" · "),
          file: a.file,
        })),
        { title: "Totem agents", placeHolder: "Open an agent's file to edit it", matchOnDescription: true },
      );
      if (!picked) return;
      await vscode.window.showTextDocument(vscode.Uri.file(picked.file));
    } catch (error) {
      this.showError("Totem: could not list the agents", error);
    }
  }

  async selectModel(): Promise<void> {
    try {
      const totem = await this.start();
      const models = await totem.models();
      this.models = models;
      const current = this.state.model;
      const items = models.map((m) => ({
        label: (m.id === current ? "$(check) " : "") + m.id,
        id: m.id,
        description: [m.id === current ? "current" : "", m.contextWindow ? `${m.contextWindow.toLocaleString("en-US")} tokens` : ""].filter(Boolean).join(" · ") || undefined,
      }));
      // The current one first, so Enter keeps it.
      items.sort((a, b) => Number(b.id === current) - Number(a.id === current));
      const picked = await vscode.window.showQuickPick(
        items,
        { title: "Totem model", placeHolder: this.state.sessionId ? "For this session" : "For new sessions" },
      );
      if (!picked) return;
      const result = await totem.setModel(picked.id, this.state.sessionId);
      this.state.model = result.model;
      this.refresh(true);
    } catch (error) {
      this.showError("Totem: could not change the model", error);
    }
  }

  /** Stop a background job (`totem/jobStop`): its button is disabled until the server answers,
   * once the job's whole process group has ended. */
  async stopJob(sessionId: string, jobId: string): Promise<void> {
    const job = this.state.jobs.setStopping(sessionId, jobId, true);
    if (!job || job.state !== "running") return;
    this.refresh(true);
    try {
      const result = await (await this.start()).jobStop(sessionId, jobId);
      this.state.jobs.stopped(sessionId, result);
    } catch (error) {
      this.state.jobs.setStopping(sessionId, jobId, false);
      this.showError(`Totem: could not stop ${jobId}`, error);
    }
    this.refresh(true);
  }

  answerEdit(outcome: "allow_once" | "allow_always" | "reject_once" | "reject_always", feedback?: string): void {
    if (!this.prompts.answerEdit(outcome, feedback)) void vscode.window.setStatusBarMessage("Totem: no edit is waiting", 3000);
  }

  private async onViewMessage(m: ViewMessage): Promise<void> {
    switch (m.type) {
      case "send": {
        const editor = vscode.window.activeTextEditor;
        const context = editor && editor.document.uri.scheme === "file" ? { uri: editor.document.uri.toString() } : undefined;
        const label = context ? vscode.workspace.asRelativePath(editor!.document.uri) : undefined;
        return this.send(m.text, context, label);
      }
      case "abort":
        return this.abort();
      case "sessions":
        return this.sessions();
      case "newChat":
        return this.newChat();
      case "jobStop":
        return this.stopJob(m.sessionId, m.jobId);
      case "jobDismiss":
        if (this.state.jobs.dismiss(m.sessionId, m.jobId)) this.refresh(true);
        return;
      case "copy":
        await vscode.env.clipboard.writeText(m.text);
        void vscode.window.setStatusBarMessage("Totem: code copied", 2000);
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
  register("totem.newChat", () => ext.newChat());
  register("totem.selectModel", () => ext.selectModel());
  register("totem.agents", () => ext.agents());
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
