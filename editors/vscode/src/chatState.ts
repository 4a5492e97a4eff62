// The chat view's state, built from `totem/event`s and from stored histories (`totem/session`).
// No `vscode` here: the Node tests feed it the events of a real `totem lsp`.

import { AgentThread, applyNested, newThread, storedThread, threadLines } from "./agentThread";
import { JobList } from "./jobList";
import { MessageQueue } from "./messageQueue";
import { callCommand, callOutcome } from "./toolCard";
import type { Mode, SessionHistory, StoredPart, StopReason, Todo, TotemEvent, VariantInfo } from "./protocol";

export type Entry =
  | {
      type: "user";
      text: string;
      /** A label for the `context` block the message carried ("app.py:3-7"). */
      context?: string;
      /** The mentions it attached ("@src/app.py#L10-20", "#buffer"): chips under it. */
      chips?: string[];
      /** The stored message (known once the turn is stored): what rewind and regenerate take. */
      messageId?: string;
      /** The last stored message of its exchange (its answer's last): what Fork copies up to. */
      exchangeEnd?: string;
      /** The images sent with it, as `data:` URLs to draw. */
      images?: { name: string; src: string }[];
    }
  | { type: "text"; partId: string; step: number; text: string }
  | { type: "reasoning"; partId: string; step: number; text: string }
  | {
      type: "tool";
      callId: string;
      tool: string;
      title: string;
      /** The command a `bash` call runs: shown on its card under the title (the model's description). */
      command?: string;
      status?: string;
      summary?: string;
      decision?: string;
      thread?: AgentThread;
      /** What a command printed (bash, job): shown folded under the tool line. */
      output?: string;
      /** The user's words with a rejection, as the model got them. */
      feedback?: string;
      /** What the user took of a reviewed change, one line a file ("took 1 of 2 hunks of a.py"). */
      review?: string[];
    }
  | { type: "notice"; level: string; message: string }
  | {
      type: "error";
      errorClass: string;
      message: string;
      hint?: string;
      /** The turn failed: `totem/retry` takes it up. */
      retry?: boolean;
      /** The request never started a turn: this text can be sent again. */
      resend?: string;
    }
  | {
      type: "end";
      model: string;
      stopReason: StopReason;
      /** The request this turn answered (regenerate), and the answer's variants when it has several. */
      requestId?: string;
      variant?: VariantInfo;
    };

export type TurnState = "idle" | "working" | "thinking" | "answering" | "tool" | "waiting";

export interface PendingAsk {
  callId: string;
  title: string;
  kind: "permission" | "question";
  diff?: string;
  /** The files of a change (its Accept means all of them). */
  files?: string[];
  /** What "Always" stores, for the button: "bash python3", "edit src/*". */
  always?: string;
  /** A change under review in the diff editor: what Accept would take, one line a file. */
  review?: string[];
  /** Whether it is a change reviewed in the diff editor ("Show diff" reopens it), not a modal. */
  reviewed?: boolean;
}

let chatKeys = 0;

export class ChatState {
  /** This chat's own key in the window (its tab), whether or not it has a session yet. */
  readonly key = ++chatKeys;
  sessionId: string | undefined;
  title = "";
  entries: Entry[] = [];
  todos: Todo[] = [];
  busy = false;
  turnState: TurnState = "idle";
  /** The model of the running turn, else the one that answered last. */
  model: string | undefined;
  /** The context the next request takes: the last `context` event's estimate (from servers
   * without it, the last step's input plus output tokens). */
  contextTokens: number | undefined;
  /** Whether `contextTokens` came from a `context` event. */
  private contextFromEvent = false;
  /** The model's context window when known (the `context` event, else `totem/models`). */
  contextWindow: number | undefined;
  /** What the `context` event says the estimate is made of (tokens by part), when it says. */
  contextBreakdown: Record<string, number> | undefined;
  /** The session's mode (`totem/setMode`), once known. */
  mode: Mode | undefined;
  /** What the user took of each reviewed change, by call id: kept across reloads of the session. */
  readonly reviews = new Map<string, string[]>();
  /** A permission or question waiting for the user. */
  pending: PendingAsk | undefined;
  /** Set by `beginTurn` until the turn's session is known. */
  awaitingSession = false;
  /** Messages sent while the turn runs, sent as it ends (messageQueue.ts). */
  readonly queue = new MessageQueue();
  private step = 1;
  private turnStartIndex = 0;

  /** `jobs`: the background jobs of the window's sessions, shared by its chats (they outlive a chat). */
  constructor(readonly jobs: JobList = new JobList()) {}

  /** A new, empty chat (no session yet). */
  reset(): void {
    this.sessionId = undefined;
    this.title = "";
    this.entries = [];
    this.todos = [];
    this.busy = false;
    this.turnState = "idle";
    this.contextTokens = undefined;
    this.contextFromEvent = false;
    this.contextBreakdown = undefined;
    this.pending = undefined;
    this.awaitingSession = false;
    this.reviews.clear();
    this.jobs.dropEnded();
  }

  /** Whether the chat shows nothing yet (a new chat, reusable for another session). */
  get empty(): boolean {
    return !this.sessionId && !this.entries.length && !this.busy;
  }

  /** The user sent `text` (about `context`, a label such as "app.py:3-7"); the turn's events follow. */
  beginTurn(text: string, context?: string, images?: { name: string; src: string }[]): void {
    const chips = mentionsIn(text);
    this.entries.push({ type: "user", text, context, ...(chips.length ? { chips } : {}), ...(images?.length ? { images } : {}) });
    if (!this.title) this.title = sessionTitle(text);
    this.busy = true;
    this.turnState = "working";
    this.awaitingSession = this.sessionId === undefined;
    this.turnStartIndex = this.entries.length;
    this.jobs.dropEnded();
  }

  /** A turn that answers a stored request again: `totem/retry` (the failed attempt is set aside)
   * or `totem/regenerate` of `requestId` (what followed the request goes, as a variant). */
  beginAgain(requestId?: string): void {
    let keep = this.entries.length;
    if (requestId) {
      const at = this.entries.findIndex((e) => e.type === "user" && e.messageId === requestId);
      if (at >= 0) keep = at + 1;
    } else {
      // Retry: the failed turn's error and footer go; the steps that completed stay.
      while (keep > 0 && ["error", "end", "notice"].includes(this.entries[keep - 1].type)) keep--;
    }
    this.entries = this.entries.slice(0, keep);
    this.busy = true;
    this.turnState = "working";
    this.turnStartIndex = this.entries.length;
  }

  /** The `totem/chat` request failed before the turn started (busy session, config error);
   * `resend` is the text a Retry button sends again. */
  failTurn(message: string, resend?: string): void {
    this.entries.push({ type: "error", errorClass: "Error", message, ...(resend ? { resend } : {}) });
    this.busy = false;
    this.turnState = "idle";
    this.awaitingSession = false;
  }

  /** Apply one event; returns whether the view changed. Events of other sessions are ignored,
   * except the first `turnStart` after `beginTurn` of a chat with no session yet: the chat
   * takes that session (ChatList gives a turn started elsewhere a chat of its own). A `job`
   * event of any session, a sub-agent's too, goes to the job list. */
  apply(event: TotemEvent): boolean {
    if (event.kind === "job") return this.jobs.apply(event);
    if (event.sessionId !== this.sessionId) {
      if (event.kind !== "turnStart" || !this.awaitingSession) return false;
      this.sessionId = event.sessionId;
      this.awaitingSession = false;
    }
    if (event.parentCallId) {
      // A sub-agent's event: into its task call's thread, never among the conversation's entries.
      const task = this.findTool(event.parentCallId);
      if (!task) return false;
      task.thread ??= newThread(event.agent);
      return applyNested(task.thread, event);
    }
    switch (event.kind) {
      case "turnStart":
        this.busy = true;
        this.turnState = "working";
        this.model = event.model;
        this.step = 1;
        this.turnStartIndex = this.entries.length;
        return true;
      case "textDelta":
      case "reasoningDelta": {
        const type = event.kind === "textDelta" ? "text" : "reasoning";
        const last = this.findPart(event.partId);
        if (last && last.type === type) last.text += event.text;
        else this.entries.push({ type, partId: event.partId, step: this.step, text: event.text });
        this.turnState = type === "reasoning" ? "thinking" : "answering";
        return true;
      }
      case "stepEnd":
        this.step = event.step + 1;
        this.model = event.model;
        if (!this.contextFromEvent) this.contextTokens = event.usage.inputTokens + event.usage.outputTokens;
        return true;
      case "stepDiscarded": {
        const keep = this.entries.slice(0, this.turnStartIndex);
        const rest = this.entries
          .slice(this.turnStartIndex)
          .filter((e) => !((e.type === "text" || e.type === "reasoning") && e.step === event.step));
        this.entries = keep.concat(rest);
        return true;
      }
      case "toolStart":
        const command = callCommand(event.tool, (event as any).input);
        this.entries.push({ type: "tool", callId: event.callId, tool: event.tool, title: event.title, ...(command ? { command } : {}) });
        this.turnState = "tool";
        return true;
      case "permission": {
        const tool = this.findTool(event.callId);
        if (tool) tool.decision = event.decision;
        if (this.pending?.callId === event.callId) this.pending = undefined;
        this.turnState = "tool";
        return true;
      }
      case "toolEnd": {
        const tool = this.findTool(event.callId);
        const shown = { status: event.status, summary: event.summary, ...callResult(event.tool, event.output, (event as any).feedback) };
        if (tool) Object.assign(tool, shown);
        else this.entries.push({ type: "tool", callId: event.callId, tool: event.tool, title: event.tool, ...shown });
        if (this.pending?.callId === event.callId) this.pending = undefined;
        this.turnState = "working";
        return true;
      }
      case "todo":
        this.todos = event.todos;
        return true;
      case "notice":
        this.entries.push({ type: "notice", level: event.level, message: event.message });
        return true;
      case "error":
        this.entries.push({
          type: "error",
          errorClass: event.errorClass,
          message: event.message,
          hint: (event as any).hint ?? errorHint(event.errorClass, this.model),
          retry: true,
        });
        return true;
      case "turnEnd":
        this.entries.push({ type: "end", model: event.model, stopReason: event.stopReason });
        this.model = event.model;
        this.busy = false;
        this.turnState = "idle";
        this.pending = undefined;
        return true;
      case "context": {
        if (typeof event.estimate === "number") {
          this.contextTokens = event.estimate;
          this.contextFromEvent = true;
        }
        if (typeof event.window === "number") this.contextWindow = event.window;
        const breakdown = event.breakdown;
        if (breakdown && typeof breakdown === "object") {
          this.contextBreakdown = Object.fromEntries(Object.entries(breakdown).filter(([, v]) => typeof v === "number")) as Record<string, number>;
        }
        return true;
      }
      default:
        return false;
    }
  }

  setPending(pending: PendingAsk | undefined): void {
    this.pending = pending;
    this.turnState = pending ? "waiting" : this.busy ? "tool" : "idle";
  }

  /** Replace the chat with a stored session: the conversation as it stands, with the ids that
   * rewind, regenerate and the variant switcher take. What this window knows beyond the store
   * (reviews, the context window) stays. */
  load(history: SessionHistory): void {
    const reviews = new Map(this.reviews);
    // The last context event's estimate stays: the store keeps only the steps' usage.
    const same = this.sessionId === history.sessionId && this.contextFromEvent;
    const estimate = same ? { tokens: this.contextTokens, breakdown: this.contextBreakdown } : undefined;
    this.reset();
    for (const [callId, lines] of reviews) this.reviews.set(callId, lines);
    this.sessionId = history.sessionId;
    this.title = sessionTitle(history.title);
    if (history.model) this.model = history.model;
    if (history.mode) this.mode = history.mode;
    let step = 0;
    // One footer per turn, as the live chat shows it: a turn is the assistant messages (one a
    // step) between two user messages.
    let model: string | undefined;
    let lastModel: string | undefined;
    let ended: StopReason | undefined; // a turn that did not finish: its stored end notice
    let requestId: string | undefined;
    let variant: VariantInfo | undefined;
    let failed: Extract<Entry, { type: "error" }> | undefined;
    const footer = () => {
      const shown = model ?? (ended ? lastModel : undefined);
      if (shown) {
        this.model = shown;
        this.entries.push({
          type: "end",
          model: shown,
          stopReason: ended ?? "finished",
          ...(requestId ? { requestId } : {}),
          ...(variant ? { variant } : {}),
        });
      }
      model = undefined;
      ended = undefined;
      variant = undefined;
    };
    let request: Extract<Entry, { type: "user" }> | undefined;
    for (const message of history.messages) {
      if (message.role === "user") {
        footer();
        failed = undefined;
        requestId = message.id;
        request = { ...userEntry(message.parts), ...(message.id ? { messageId: message.id, exchangeEnd: message.id } : {}) };
        this.entries.push(request);
        continue;
      }
      if (request && message.id) request.exchangeEnd = message.id;
      if (message.variant) variant = message.variant;
      for (const part of message.parts) {
        if (part.discarded) continue;
        const data = part.data ?? {};
        switch (part.type) {
          case "text":
          case "reasoning":
            if (data.text) this.entries.push({ type: part.type, partId: part.id, step, text: String(data.text) });
            break;
          case "step":
            step = data.step ?? step + 1;
            model = data.model ?? model;
            lastModel = model;
            if (data.usage && !estimate) this.contextTokens = (data.usage.inputTokens ?? 0) + (data.usage.outputTokens ?? 0);
            break;
          case "tool": {
            const callId = data.callId ?? part.id;
            const review = this.reviews.get(callId);
            const command = callCommand(String(data.tool ?? ""), data.input);
            this.entries.push({
              type: "tool",
              callId,
              tool: data.tool ?? "tool",
              title: data.title ?? data.tool ?? "tool",
              ...(command ? { command } : {}),
              // A call still pending in a session that runs nothing was cut off (the server stopped).
              status: part.status === "pending" ? "interrupted" : part.status ?? undefined,
              summary: data.summary,
              thread: storedThread(data.thread),
              ...(review ? { review } : {}),
              ...callResult(String(data.tool ?? ""), typeof data.output === "string" ? data.output : undefined, data.feedback),
            });
            if (data.tool === "todo" && Array.isArray(data.input?.todos)) this.todos = data.input.todos;
            break;
          }
          case "error":
            failed = {
              type: "error",
              errorClass: String(data.errorClass ?? "Error"),
              message: String(data.text ?? data.stopReason ?? ""),
              hint: typeof data.hint === "string" ? data.hint : data.errorClass ? errorHint(data.errorClass, lastModel) : undefined,
            };
            this.entries.push(failed);
            ended = (data.stopReason as StopReason) ?? "error";
            break;
          case "notice":
            // Stored with its level unless info; a turn's end reason (stopReason) came as a warning.
            this.entries.push({ type: "notice", level: String(data.level ?? (data.stopReason ? "warning" : "info")), message: String(data.text ?? "") });
            if (data.stopReason) ended = data.stopReason as StopReason;
            break;
        }
      }
    }
    if (estimate) {
      this.contextTokens = estimate.tokens;
      this.contextBreakdown = estimate.breakdown;
      this.contextFromEvent = true;
    }
    // Only the session's last turn can be retried, when it failed.
    if (failed && ended === "error") failed.retry = true;
    footer();
  }

  /** All visible text, for tests and for copying: user messages, answers, tool lines. */
  plainText(): string {
    const lines: string[] = [];
    for (const e of this.entries) {
      if (e.type === "user") lines.push(`> ${e.text}`);
      else if (e.type === "text") lines.push(e.text);
      else if (e.type === "tool") {
        lines.push(toolLine(e));
        if (e.feedback) lines.push(`  feedback: ${e.feedback}`);
        for (const line of e.review ?? []) lines.push(`  you ${line}`);
        if (e.output) lines.push(...e.output.split("\n").map((l) => `  │ ${l}`));
        if (e.thread) lines.push(...threadLines(e.thread).map((l) => `  │ ${l}`));
      }
      else if (e.type === "notice") lines.push(e.message);
      else if (e.type === "error") lines.push(e.hint ? `${e.message}\n${e.hint}` : e.message);
      else if (e.type === "end") lines.push(`— ${e.model}`);
    }
    return lines.join("\n");
  }

  private findPart(partId: string): Entry | undefined {
    for (let i = this.entries.length - 1; i >= this.turnStartIndex && i >= 0; i--) {
      const e = this.entries[i];
      if ((e.type === "text" || e.type === "reasoning") && e.partId === partId) return e;
    }
    return undefined;
  }

  private findTool(callId: string): Extract<Entry, { type: "tool" }> | undefined {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i];
      if (e.type === "tool" && e.callId === callId) return e;
    }
    return undefined;
  }
}

/** The mentions in what the user typed, as the server reads them (docs/protocol.md, Mentions):
 * chips for the message until the stored one says which were attached. */
export function mentionsIn(text: string): string[] {
  return [...text.matchAll(/(?:^|\s)(@[^\s@]+|#(?:buffer|selection|diagnostics)(?![\w-]))/g)].map((m) => m[1]);
}

/** A stored request as the chat shows it: what the user typed (`data.typed`), its context block
 * as a label, its mentions (`data.attachments`) as chips. */
function userEntry(parts: StoredPart[]): Extract<Entry, { type: "user" }> {
  const images = parts
    .filter((p) => p.type === "image" && !p.discarded && !p.data?.callId && typeof p.data?.data === "string")
    .map((p) => ({ name: String(p.data.name ?? "image"), src: `data:${p.data.mimeType ?? "image/png"};base64,${p.data.data}` }));
  return { ...textEntry(parts), ...(images.length ? { images } : {}) };
}

function textEntry(parts: StoredPart[]): Extract<Entry, { type: "user" }> {
  const texts = parts.filter((p) => p.type === "text" && !p.discarded);
  const attachments: any[] = texts.flatMap((p) => (Array.isArray(p.data?.attachments) ? p.data.attachments : []));
  const typed = texts.filter((p) => typeof p.data?.typed === "string").map((p) => String(p.data.typed));
  if (attachments.length && typed.length) {
    const block = attachments.find((a) => a.kind === "context");
    const chips = attachments.filter((a) => typeof a.mention === "string").map((a) => String(a.mention));
    const context = block ? (Array.isArray(block.lines) ? `${block.path}:${block.lines[0]}-${block.lines[1]}` : String(block.path)) : undefined;
    return { type: "user", text: typed.join("\n"), ...(context ? { context } : {}), ...(chips.length ? { chips } : {}) };
  }
  // typed: a slash command as the user wrote it
  const text = texts.map((p) => String(p.data?.typed ?? p.data?.text ?? "")).join("\n");
  const { body, context } = splitContext(text);
  return { type: "user", text: body, ...(context ? { context } : {}) };
}

/** "▸ Edit app.py → ok: 1 replacement", "▸ Run the tests ($ pytest -q) → failed: exit 1" */
export function toolLine(e: Extract<Entry, { type: "tool" }>): string {
  const outcome = callOutcome(e.tool, e.status, e.summary, e.output);
  const command = e.command && !e.title.includes(e.command) ? ` ($ ${e.command})` : "";
  return `▸ ${e.title}${command}${outcome ? ` → ${outcome.text}` : " …"}`;
}

/** Split a stored user message into its text and a label for its `<context …>` block. */
export function splitContext(text: string): { body: string; context?: string } {
  const match = /^<context file="([^"]*)"(?: lines="([^"]*)")?\s*(?:\/>|>[\s\S]*?<\/context>)\s*/.exec(text);
  if (!match) return { body: text };
  const context = match[2] ? `${match[1]}:${match[2]}` : match[1];
  return { body: text.slice(match[0].length), context };
}

/** A session title for people: the server names a session from its first message, context block
 * included, so the block is dropped ("Change the greeting", not `<context file="app.py"/> …`). */
export function sessionTitle(title: string): string {
  const { body, context } = splitContext(title);
  const text = body.trim() || (context ?? "");
  return text.split("\n")[0].trim();
}

/** The tools whose output is shown under their line: what a command printed. */
const SHOWS_OUTPUT = new Set(["bash", "job"]);

/** What a call's result adds to its line: a command's output, a rejection's feedback (the
 * server's `feedback` when it sends one, else read from the refusal the model got). */
export function callResult(tool: string, output: string | undefined, feedback?: unknown): { output?: string; feedback?: string } {
  const result: { output?: string; feedback?: string } = {};
  if (typeof feedback === "string" && feedback) result.feedback = feedback;
  else if (output) {
    const said = /^The user rejected this action\. Their feedback: ([\s\S]*)$/.exec(output);
    if (said) result.feedback = said[1].trim();
  }
  if (output && SHOWS_OUTPUT.has(tool) && !result.feedback && !output.startsWith("The user rejected")) result.output = output;
  return result;
}

/** What fixes an error, when the error says: for a refused key, the provider of `model` and
 * where its key goes (docs/config.md, API keys). */
export function errorHint(errorClass: string, model: string | undefined): string | undefined {
  if (errorClass !== "AuthenticationError") return undefined;
  const provider = model?.split("/")[0];
  if (!provider) return "Check the provider's api_key in the config, or run `totem auth set NAME`.";
  return `The provider ${provider} refused the key: set api_key in [providers.${provider}] of the config, or run \`totem auth set ${provider}\`.`;
}

/** The status bar text: "Totem: sim/test-model · thinking". */
export function statusText(model: string | undefined, state: TurnState): string {
  const label = { idle: "idle", working: "working", thinking: "thinking", answering: "answering", tool: "running a tool", waiting: "waiting for you" }[state];
  return `${model ?? "default model"} · ${label}`;
}
