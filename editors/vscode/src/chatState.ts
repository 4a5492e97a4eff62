// The chat view's state, built from `totem/event`s and from stored histories (`totem/session`).
// No `vscode` here: the Node tests feed it the events of a real `totem lsp`.

import { AgentThread, applyNested, newThread, storedThread, threadLines } from "./agentThread";
import { JobList } from "./jobList";
import type { SessionHistory, StopReason, Todo, TotemEvent } from "./protocol";

export type Entry =
  | { type: "user"; text: string; context?: string }
  | { type: "text"; partId: string; step: number; text: string }
  | { type: "reasoning"; partId: string; step: number; text: string }
  | {
      type: "tool";
      callId: string;
      tool: string;
      title: string;
      status?: string;
      summary?: string;
      decision?: string;
      thread?: AgentThread;
      /** What a command printed (bash, job): shown folded under the tool line. */
      output?: string;
      /** The user's words with a rejection, as the model got them. */
      feedback?: string;
    }
  | { type: "notice"; level: string; message: string }
  | { type: "error"; errorClass: string; message: string; hint?: string; retry?: string }
  | { type: "end"; model: string; stopReason: StopReason };

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
}

export class ChatState {
  sessionId: string | undefined;
  title = "";
  entries: Entry[] = [];
  todos: Todo[] = [];
  busy = false;
  turnState: TurnState = "idle";
  /** The model of the running turn, else the one that answered last. */
  model: string | undefined;
  /** Input plus output tokens of the last completed step: an estimate of the context in use. */
  contextTokens: number | undefined;
  /** The model's context window when known (from `totem/models`). */
  contextWindow: number | undefined;
  /** A permission or question waiting for the user. */
  pending: PendingAsk | undefined;
  /** The background jobs of this window's sessions (kept across New Chat: they still run). */
  readonly jobs = new JobList();
  /** Set by `beginTurn` until the turn's session is known. */
  private awaitingSession = false;
  private step = 1;
  private turnStartIndex = 0;

  /** A new, empty chat (no session yet). */
  reset(): void {
    this.sessionId = undefined;
    this.title = "";
    this.entries = [];
    this.todos = [];
    this.busy = false;
    this.turnState = "idle";
    this.contextTokens = undefined;
    this.pending = undefined;
    this.awaitingSession = false;
    this.jobs.dropEnded();
  }

  /** The user sent `text` (about `context`, a label such as "app.py:3-7"); the turn's events follow. */
  beginTurn(text: string, context?: string): void {
    this.entries.push({ type: "user", text, context });
    if (!this.title) this.title = sessionTitle(text);
    this.busy = true;
    this.turnState = "working";
    this.awaitingSession = this.sessionId === undefined;
    this.turnStartIndex = this.entries.length;
    this.jobs.dropEnded();
  }

  /** The `totem/chat` request failed before the turn started (busy session, config error). */
  failTurn(message: string): void {
    this.entries.push({ type: "error", errorClass: "Error", message });
    this.busy = false;
    this.turnState = "idle";
    this.awaitingSession = false;
  }

  /** Apply one event; returns whether the view changed. Events of other sessions are ignored,
   * except a `turnStart` while this chat is idle (a turn started elsewhere, e.g. by the
   * "Ask Totem to fix" code action): the chat then follows that session. A `job` event of
   * any session, a sub-agent's too, goes to the job list. */
  apply(event: TotemEvent): boolean {
    if (event.kind === "job") return this.jobs.apply(event);
    if (event.sessionId !== this.sessionId) {
      if (event.kind !== "turnStart") return false;
      if (this.awaitingSession) {
        this.sessionId = event.sessionId;
        this.awaitingSession = false;
      } else if (!this.busy) {
        this.reset();
        this.sessionId = event.sessionId;
        this.entries.push({ type: "user", text: "(asked from the editor)" });
        this.turnStartIndex = this.entries.length;
      } else {
        return false;
      }
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
        this.contextTokens = event.usage.inputTokens + event.usage.outputTokens;
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
        this.entries.push({ type: "tool", callId: event.callId, tool: event.tool, title: event.title });
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
          retry: this.lastUserText(),
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
        const used = (event as any).tokens ?? (event as any).used;
        const window = (event as any).contextWindow ?? (event as any).window;
        if (typeof used === "number") this.contextTokens = used;
        if (typeof window === "number") this.contextWindow = window;
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

  /** The last message the user sent (what "Retry" sends again). */
  lastUserText(): string | undefined {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i];
      if (e.type === "user") return e.text;
    }
    return undefined;
  }

  /** Replace the chat with a stored session. */
  load(history: SessionHistory): void {
    this.reset();
    this.sessionId = history.sessionId;
    this.title = sessionTitle(history.title);
    let step = 0;
    // One footer per turn, as the live chat shows it: a turn is the assistant messages (one a
    // step) between two user messages.
    let model: string | undefined;
    let lastModel: string | undefined;
    let ended: StopReason | undefined; // a turn that did not finish: its stored end notice
    const footer = () => {
      const shown = model ?? (ended ? lastModel : undefined);
      if (shown) {
        this.model = shown;
        this.entries.push({ type: "end", model: shown, stopReason: ended ?? "finished" });
      }
      model = undefined;
      ended = undefined;
    };
    for (const message of history.messages) {
      if (message.role === "user") {
        footer();
        const text = message.parts
          .filter((p) => p.type === "text" && !p.discarded)
          .map((p) => String(p.data?.typed ?? p.data?.text ?? "")) // typed: a slash command as the user wrote it
          .join("\n");
        const { body, context } = splitContext(text);
        this.entries.push({ type: "user", text: body, context });
        continue;
      }
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
            if (data.usage) this.contextTokens = (data.usage.inputTokens ?? 0) + (data.usage.outputTokens ?? 0);
            break;
          case "tool":
            this.entries.push({
              type: "tool",
              callId: data.callId ?? part.id,
              tool: data.tool ?? "tool",
              title: data.title ?? data.tool ?? "tool",
              status: part.status ?? undefined,
              summary: data.summary,
              thread: storedThread(data.thread),
              ...callResult(String(data.tool ?? ""), typeof data.output === "string" ? data.output : undefined, data.feedback),
            });
            if (data.tool === "todo" && Array.isArray(data.input?.todos)) this.todos = data.input.todos;
            break;
          case "error":
            this.entries.push({
              type: "error",
              errorClass: String(data.errorClass ?? "Error"),
              message: String(data.text ?? data.stopReason ?? ""),
              hint: typeof data.hint === "string" ? data.hint : data.errorClass ? errorHint(data.errorClass, lastModel) : undefined,
            });
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

/** "▸ Edit app.py → ok: 1 replacement" */
export function toolLine(e: Extract<Entry, { type: "tool" }>): string {
  const result = e.status ? ` → ${e.status}${e.summary ? `: ${e.summary}` : ""}` : " …";
  return `▸ ${e.title}${result}`;
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
