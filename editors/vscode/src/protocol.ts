// The Totem protocol (docs/protocol.md, docs/events.md) as TypeScript types, and a client for its
// `totem/*` methods. Nothing here imports `vscode`: the extension hands in its LanguageClient,
// the Node tests a vscode-jsonrpc connection to a real `totem lsp`.

export const PROTOCOL_VERSION = 1;

export interface Position { line: number; character: number }
export interface Range { start: Position; end: Position }

export interface ChatParams {
  text: string;
  sessionId?: string;
  mode?: "build" | "plan";
  model?: string;
  context?: { uri: string; range?: Range };
  /** The document the editor shows, its selection and diagnostics: what `#buffer`,
   * `#selection` and `#diagnostics` name (docs/protocol.md, Mentions). */
  editor?: { uri: string; range?: Range; diagnostics?: Diagnostic[] };
  /** Images sent with the message (docs/protocol.md "Images"): a model that sees images gets them. */
  attachments?: ImageAttachment[];
  workDoneToken?: string | number;
}

/** An image for `totem/chat`: its bytes in base64 (`data`) or a `file:`/`data:` URI. */
export interface ImageAttachment { type: "image"; mimeType: string; data?: string; uri?: string; name?: string }

/** An LSP Diagnostic, as far as `#diagnostics` reads it. */
export interface Diagnostic { range: Range; message: string; severity?: number; code?: string | number; source?: string }

export type Mode = "build" | "plan";

export type StopReason = "finished" | "aborted" | "step_limit" | "guard" | "error";

export interface ChatResult { sessionId: string; stopReason: StopReason; text: string }

export interface SessionInfo { sessionId: string; title: string; model: string; mode?: Mode; createdAt: number; updatedAt: number }

export interface StoredPart {
  id: string;
  messageId: string;
  seq: number;
  type: "text" | "reasoning" | "tool" | "step" | "error" | "notice" | string;
  data: any;
  status: string | null;
  discarded: boolean;
}

/** On the first message of an answer whose request has several: the request's id, this
 * answer's 0-based index and how many there are (`totem/variant` switches). */
export interface VariantInfo { request: string; index: number; count: number }

export interface StoredMessage {
  /** Absent only from servers before message ids. */
  id?: string;
  turnId?: string;
  role: "user" | "assistant";
  parts: StoredPart[];
  variant?: VariantInfo;
}

export interface SessionHistory {
  sessionId: string;
  title: string;
  model?: string;
  mode?: Mode;
  messages: StoredMessage[];
}

export interface ModelInfo {
  id: string;
  provider: string;
  contextWindow: number | null;
  tools: boolean | null;
  reasoning: boolean | null;
  vision: boolean | null;
  /** The model a new session would use (servers before this field: absent). */
  default?: boolean;
}

export interface FileChange { path: string; action: "restored" | "deleted" | "conflict" | "unrestorable"; reason?: string }

export interface Rule { source: string; permission: string; pattern: string; action: "allow" | "ask" | "deny" }

export interface PermissionParams {
  sessionId: string;
  callId: string;
  tool: string;
  permission: string;
  title: string;
  input: Record<string, unknown>;
  rule: Rule | null;
  alwaysPattern: string;
  paths: string[];
  diff?: string;
  proposed?: { uri: string; text: string }[];
  /** More answers beside the four, each an allow once with more (a job's ports forwarded to loopback). */
  choices?: { id: string; label: string }[];
}

export type PermissionOutcome = "allow_once" | "allow_always" | "reject_once" | "reject_always";
/** `accepted`: with an allow, the whole text the user accepts for each file of `proposed`. */
/** `choice`: with allow_once, the id of one of the request's `choices`. */
export interface PermissionAnswer {
  outcome: PermissionOutcome; feedback?: string; accepted?: { uri: string; text: string }[]; choice?: string;
}

export interface QuestionParams { sessionId: string; callId: string; question: string; options?: string[] }
export interface QuestionAnswer { answer: string | null }

export interface TrustParams { root: string; reasons: string[] }
export interface TrustAnswer { trusted: boolean }

export interface Todo { content: string; status: "pending" | "in_progress" | "completed" }

/** A sub-agent's events carry the `task` call they belong to and the agent's name
 * (docs/events.md guarantee 11); the conversation's own events carry neither. */
export interface Nested { parentCallId?: string; agent?: string }

/** One `totem/event` payload. Kinds this client does not know are passed on and ignored. */
export type TotemEvent = Nested & (
  | { sessionId: string; kind: "turnStart"; turnId: string; model: string }
  | { sessionId: string; kind: "textDelta" | "reasoningDelta"; partId: string; text: string }
  | { sessionId: string; kind: "toolStart"; callId: string; tool: string; input: any; title: string }
  | { sessionId: string; kind: "permission"; callId: string; decision: "allow" | "deny" | "reject"; rule: Rule | null }
  | { sessionId: string; kind: "toolEnd"; callId: string; tool: string; status: string; summary: string; output: string; changed?: string[] }
  | { sessionId: string; kind: "todo"; todos: Todo[] }
  | { sessionId: string; kind: "stepEnd"; step: number; model: string; usage: { inputTokens: number; outputTokens: number } }
  | { sessionId: string; kind: "stepDiscarded"; step: number; reason: string }
  | { sessionId: string; kind: "notice"; level: "info" | "warning" | "error"; message: string }
  | { sessionId: string; kind: "error"; errorClass: string; message: string }
  | { sessionId: string; kind: "turnEnd"; turnId: string; stopReason: StopReason; text: string; model: string }
  | { sessionId: string; kind: "context"; estimate: number; window: number | null; [key: string]: any }
  | ({ sessionId: string; kind: "job" } & JobStatus & { command: string; offline?: boolean; forwarded?: number[]; forwardTaken?: number[] })
);

/** How a background job stands (docs/events.md `job`; the result of `totem/jobStop`). */
export type JobState = "running" | "exited" | "stopped" | "killed";
export interface JobStatus { jobId: string; state: JobState; exitCode: number | null }

/** One of `totem/agents`: an agent the `task` tool can start, and the file it is read from. */
export interface AgentInfo {
  name: string;
  description: string;
  source: "built-in" | "user" | "user-project" | "project" | string;
  file: string;
  tools: string[] | null;
  maxSteps: number | null;
  model: string | null;
}

/** One of `totem/hooks`: a hook a config file declares, in the order they run (docs/config.md
 * "Hooks"). `matcher` null: every one; `timeout` in seconds; `source` the file as users write it
 * (`~/.config/totem/config.toml`) or "editor settings"; `ignored` why an inactive one does not run. */
export interface HookInfo {
  event: string;
  matcher: string | null;
  command: string;
  timeout: number;
  source: string;
  active: boolean;
  ignored: string | null;
}

/** `totem/tools`: the tools a session's model is offered at its next turn, and why fewer than all. */
export interface SessionToolsInfo {
  sessionId: string;
  model: string;
  mode: string;
  contextWindow: number | null;
  tools: { name: string; description: string; refused: string | null }[];
  leftOut: string[];
  narrowed: string | null;
  scripts: boolean;
}

/** One of `totem/commands`: a slash command (`file: null` for a built-in action such as `undo`). */
export interface CommandInfo { name: string; description: string; source: string; file: string | null; agent: string | null; model: string | null }

/** `totem/complete`: what replaces `text[start..end]` (UTF-16 offsets). */
export interface CompletionItem { label: string; kind: "file" | "buffer" | "command" | string; insertText: string; detail?: string }
export interface Completions { start: number; end: number; items: CompletionItem[] }

export interface RewindResult { rewound: string[]; files: FileChange[] }

/** The part of a JSON-RPC connection this client needs. vscode-languageclient's LanguageClient
 * and vscode-jsonrpc's MessageConnection both have it. */
export interface RpcConnection {
  sendRequest<R>(method: string, params?: any): Promise<R>;
  sendNotification(method: string, params?: any): Promise<void> | void;
  onNotification(method: string, handler: (params: any) => void): { dispose(): void } | void;
  onRequest(method: string, handler: (params: any) => any): { dispose(): void } | void;
}

/** What the user is asked; the extension shows VS Code UI, tests answer from a script. */
export interface TotemUi {
  permission(params: PermissionParams): Promise<PermissionAnswer>;
  question(params: QuestionParams): Promise<QuestionAnswer>;
  trust(params: TrustParams): Promise<TrustAnswer>;
}

/** The `capabilities.experimental.totem` this client declares. */
export const CLIENT_CAPABILITIES = { permission: true, question: true, trust: true, events: true, subAgents: true };

/** The server's protocol version from an `initialize` result; undefined when it sent none. */
export function serverProtocolVersion(initializeResult: any): number | undefined {
  const version = initializeResult?.capabilities?.experimental?.totem?.protocolVersion;
  return typeof version === "number" ? version : undefined;
}

/** A warning for the user when the server speaks a protocol this client was not written for. */
export function protocolWarning(initializeResult: any): string | undefined {
  const version = serverProtocolVersion(initializeResult);
  if (version === undefined) return "The Totem server did not announce a protocol version; is `totem.path` a Totem?";
  if (version > PROTOCOL_VERSION)
    return `The Totem server speaks protocol version ${version}; this extension knows version ${PROTOCOL_VERSION}. Update the extension.`;
  return undefined;
}

/** The step-limit presets of `totem.maxSteps` (seed 004): 20 and 60, 0 no cap; "default" leaves
 * `max_steps` to `totem.config` and the config files. */
export const MAX_STEPS_PRESETS = ["default", "20", "60", "0"] as const;
export type MaxStepsSetting = (typeof MAX_STEPS_PRESETS)[number];

/** The editor's config layer: `totem.config` with `totem.maxSteps` as `max_steps` when chosen. */
export function editorConfig(config: Record<string, unknown> | undefined, maxSteps: string | undefined): Record<string, unknown> {
  const steps = maxSteps && maxSteps !== "default" ? Number(maxSteps) : NaN;
  return Number.isInteger(steps) && steps >= 0 ? { ...(config ?? {}), max_steps: steps } : { ...(config ?? {}) };
}

/** The `workspace/didChangeConfiguration` settings for the editor's Totem settings. */
export function configurationSettings(model: string | undefined, config: Record<string, unknown> | undefined, maxSteps?: string): any {
  const settings: any = { config: editorConfig(config, maxSteps) };
  if (model) settings.model = model;
  return { totem: settings };
}

type Listener<T> = (value: T) => void;

/** The `totem/*` methods over a connection, with the server's requests routed to a `TotemUi`. */
export class TotemClient {
  private eventListeners: Listener<TotemEvent>[] = [];
  private disposables: { dispose(): void }[] = [];

  constructor(private readonly connection: RpcConnection, private readonly ui: TotemUi) {}

  /** Register the handlers. Call once, before `initialized` for a raw connection, after
   * `start()` for a LanguageClient (which keeps handlers registered before start). */
  listen(): void {
    const keep = (d: { dispose(): void } | void) => {
      if (d) this.disposables.push(d);
    };
    keep(this.connection.onNotification("totem/event", (event: TotemEvent) => this.emit(event)));
    keep(this.connection.onRequest("totem/permission", (p: PermissionParams) => this.safePermission(p)));
    keep(this.connection.onRequest("totem/question", (p: QuestionParams) => this.safeQuestion(p)));
    keep(this.connection.onRequest("totem/trust", (p: TrustParams) => this.safeTrust(p)));
  }

  onEvent(listener: Listener<TotemEvent>): { dispose(): void } {
    this.eventListeners.push(listener);
    return { dispose: () => (this.eventListeners = this.eventListeners.filter((l) => l !== listener)) };
  }

  private emit(event: TotemEvent): void {
    for (const listener of [...this.eventListeners]) {
      try {
        listener(event);
      } catch (error) {
        console.error("totem: event listener failed", error);
      }
    }
  }

  private async safePermission(params: PermissionParams): Promise<PermissionAnswer> {
    try {
      return await this.ui.permission(params);
    } catch (error) {
      console.error("totem: permission prompt failed", error);
      return { outcome: "reject_once" };
    }
  }

  private async safeQuestion(params: QuestionParams): Promise<QuestionAnswer> {
    try {
      return await this.ui.question(params);
    } catch (error) {
      console.error("totem: question prompt failed", error);
      return { answer: null };
    }
  }

  private async safeTrust(params: TrustParams): Promise<TrustAnswer> {
    try {
      return await this.ui.trust(params);
    } catch {
      return { trusted: false };
    }
  }

  chat(params: ChatParams): Promise<ChatResult> {
    return this.connection.sendRequest<ChatResult>("totem/chat", params);
  }

  async abort(sessionId: string): Promise<boolean> {
    const result = await this.connection.sendRequest<{ aborted: boolean }>("workspace/executeCommand", {
      command: "totem.server.abort",
      arguments: [{ sessionId }],
    });
    return !!result?.aborted;
  }

  sessions(): Promise<SessionInfo[]> {
    return this.connection.sendRequest<SessionInfo[]>("totem/sessions", {});
  }

  session(sessionId: string): Promise<SessionHistory> {
    return this.connection.sendRequest<SessionHistory>("totem/session", { sessionId });
  }

  setMode(mode: Mode, sessionId?: string): Promise<{ mode: Mode }> {
    return this.connection.sendRequest<{ mode: Mode }>("totem/setMode", sessionId ? { sessionId, mode } : { mode });
  }

  /** Set aside `messageId` and what follows; with `files`, put the files back as they were then. */
  rewind(params: { sessionId: string; messageId: string; files?: boolean; force?: boolean; dryRun?: boolean }): Promise<RewindResult> {
    return this.connection.sendRequest<RewindResult>("totem/rewind", params);
  }

  /** Take up the session's last turn, which failed; answers as `totem/chat`. */
  retry(sessionId: string): Promise<ChatResult> {
    return this.connection.sendRequest<ChatResult>("totem/retry", { sessionId });
  }

  /** A new answer to the request `messageId` is or answers; answers as `totem/chat`. */
  regenerate(sessionId: string, messageId: string): Promise<ChatResult> {
    return this.connection.sendRequest<ChatResult>("totem/regenerate", { sessionId, messageId });
  }

  variant(sessionId: string, messageId: string, index: number): Promise<VariantInfo> {
    return this.connection.sendRequest<VariantInfo>("totem/variant", { sessionId, messageId, index });
  }

  /** A new session holding the conversation up to and including `messageId` (default: as it stands). */
  fork(sessionId: string, messageId?: string): Promise<{ sessionId: string }> {
    return this.connection.sendRequest<{ sessionId: string }>("totem/fork", messageId ? { sessionId, messageId } : { sessionId });
  }

  /** Completion of mentions and slash commands in the chat input; `position` is a UTF-16 offset. */
  complete(text: string, position: number, sessionId?: string, uri?: string): Promise<Completions> {
    return this.connection.sendRequest<Completions>("totem/complete", { text, position, ...(sessionId ? { sessionId } : {}), ...(uri ? { uri } : {}) });
  }

  models(): Promise<ModelInfo[]> {
    return this.connection.sendRequest<ModelInfo[]>("totem/models", null);
  }

  setModel(model: string, sessionId?: string): Promise<{ model: string }> {
    return this.connection.sendRequest<{ model: string }>("totem/setModel", sessionId ? { sessionId, model } : { model });
  }

  agents(uri?: string): Promise<AgentInfo[]> {
    return this.connection.sendRequest<AgentInfo[]>("totem/agents", uri ? { uri } : {});
  }

  sessionTools(sessionId: string): Promise<SessionToolsInfo> {
    return this.connection.sendRequest<SessionToolsInfo>("totem/tools", { sessionId });
  }

  hooks(uri?: string): Promise<HookInfo[]> {
    return this.connection.sendRequest<HookInfo[]>("totem/hooks", uri ? { uri } : {});
  }

  /** The declared URL MCP servers of the project of `uri`: those `mcpLogin` logs in to. */
  mcpServers(uri?: string): Promise<{ name: string; url: string }[]> {
    return this.connection.sendRequest<{ name: string; url: string }[]>("totem/mcpServers", uri ? { uri } : {});
  }

  /** Log in to the MCP server `name` (the server asks the editor to open the login page). */
  mcpLogin(name: string, uri?: string): Promise<{ server: string; url: string; tools: string[] }> {
    return this.connection.sendRequest<{ server: string; url: string; tools: string[] }>("totem/mcpLogin", uri ? { uri, name } : { name });
  }

  commands(uri?: string): Promise<CommandInfo[]> {
    return this.connection.sendRequest<CommandInfo[]>("totem/commands", uri ? { uri } : {});
  }

  undo(sessionId: string): Promise<{ files: FileChange[] }> {
    return this.connection.sendRequest<{ files: FileChange[] }>("totem/undo", { sessionId });
  }

  redo(sessionId: string): Promise<{ files: FileChange[] }> {
    return this.connection.sendRequest<{ files: FileChange[] }>("totem/redo", { sessionId });
  }

  compact(sessionId: string): Promise<{ compacted: boolean; messages: number }> {
    return this.connection.sendRequest<{ compacted: boolean; messages: number }>("totem/compact", { sessionId });
  }

  /** Stops a background job of the session; answers once it has ended (docs/protocol.md). */
  jobStop(sessionId: string, jobId: string): Promise<JobStatus> {
    return this.connection.sendRequest<JobStatus>("totem/jobStop", { sessionId, jobId });
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.disposables = [];
    this.eventListeners = [];
  }
}

/** "2 files restored, 1 conflict (b.py: changed since the turn; left as it is)". */
export function describeFileChanges(files: FileChange[], verb: "Undo" | "Redo"): string {
  if (!files.length) return `${verb}: nothing to ${verb.toLowerCase()}.`;
  const lines = files.map((f) => `${f.path}: ${f.action}${f.reason ? ` (${f.reason})` : ""}`);
  return `${verb}: ${lines.join("; ")}`;
}

/** The JSON-RPC error codes of docs/protocol.md. */
export const ErrorCodes = { sessionBusy: -32001, badToken: -32002, configError: -32003, invalidParams: -32602 };
