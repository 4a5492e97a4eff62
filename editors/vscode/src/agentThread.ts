// A sub-agent's thread, kept in its `task` call's chat entry: the events that carry
// `parentCallId` (docs/events.md guarantee 11) and, for a stored session, the call part's
// `data.thread`. The chat view shows it as a collapsed block above the answer; its text is
// never one of the conversation's own entries. No `vscode` here.

import type { StoredPart, TotemEvent } from "./protocol";

export type ThreadEntry =
  | { type: "text" | "reasoning"; partId: string; step: number; text: string }
  | { type: "tool"; callId: string; title: string; status?: string; summary?: string }
  | { type: "notice"; level: string; message: string };

export interface AgentThread {
  agent: string;
  /** The model it ran on, once a step ended (it may not be the conversation's). */
  model?: string;
  entries: ThreadEntry[];
  step: number;
}

export function newThread(agent: string | undefined): AgentThread {
  return { agent: agent ?? "agent", entries: [], step: 1 };
}

/** Apply one of the sub-agent's events; returns whether the thread changed. */
export function applyNested(thread: AgentThread, event: TotemEvent): boolean {
  switch (event.kind) {
    case "textDelta":
    case "reasoningDelta": {
      const type = event.kind === "textDelta" ? "text" : "reasoning";
      const last = thread.entries[thread.entries.length - 1];
      if (last && last.type === type && last.partId === event.partId) last.text += event.text;
      else thread.entries.push({ type, partId: event.partId, step: thread.step, text: event.text });
      return true;
    }
    case "stepEnd":
      thread.step = event.step + 1;
      thread.model = event.model;
      return true;
    case "stepDiscarded":
      thread.entries = thread.entries.filter((e) => !((e.type === "text" || e.type === "reasoning") && e.step === event.step));
      return true;
    case "toolStart":
      thread.entries.push({ type: "tool", callId: event.callId, title: event.title || event.tool });
      return true;
    case "toolEnd": {
      const tool = thread.entries.find((e) => e.type === "tool" && e.callId === event.callId) as
        | Extract<ThreadEntry, { type: "tool" }>
        | undefined;
      if (tool) {
        tool.status = event.status;
        tool.summary = event.summary;
      } else {
        thread.entries.push({ type: "tool", callId: event.callId, title: event.tool, status: event.status, summary: event.summary });
      }
      return true;
    }
    case "notice":
      thread.entries.push({ type: "notice", level: event.level, message: event.message });
      return true;
    case "error":
      thread.entries.push({ type: "notice", level: "error", message: `${event.errorClass}: ${event.message}` });
      return true;
    default:
      return false;
  }
}

/** A stored thread (`data.thread` of a `task` call's part: agent, model, notes, messages). */
export function storedThread(stored: any): AgentThread | undefined {
  if (!stored || typeof stored !== "object") return undefined;
  const thread = newThread(stored.agent);
  thread.model = stored.model ?? undefined;
  for (const note of Array.isArray(stored.notes) ? stored.notes : []) thread.entries.push({ type: "notice", level: "info", message: String(note) });
  for (const message of Array.isArray(stored.messages) ? stored.messages : []) {
    if (message.role === "user") continue;
    for (const part of (message.parts ?? []) as StoredPart[]) {
      if (part.discarded) continue;
      const data = part.data ?? {};
      if ((part.type === "text" || part.type === "reasoning") && data.text) {
        thread.entries.push({ type: part.type, partId: part.id, step: 0, text: String(data.text) });
      } else if (part.type === "tool") {
        thread.entries.push({ type: "tool", callId: data.callId ?? part.id, title: data.title ?? data.tool ?? "tool", status: part.status ?? undefined, summary: data.summary });
      }
    }
  }
  return thread;
}

/** "explore on sim/test-model": the block's summary line. */
export function threadLabel(thread: AgentThread): string {
  return thread.model ? `${thread.agent} on ${thread.model}` : thread.agent;
}

/** The thread's lines as plain text, for tests and copying. */
export function threadLines(thread: AgentThread): string[] {
  const lines = [`[${threadLabel(thread)}]`];
  for (const e of thread.entries) {
    if (e.type === "text") lines.push(e.text);
    else if (e.type === "tool") lines.push(`▸ ${e.title}${e.status ? ` → ${e.status}${e.summary ? `: ${e.summary}` : ""}` : " …"}`);
    else if (e.type === "notice") lines.push(e.message);
  }
  return lines;
}
