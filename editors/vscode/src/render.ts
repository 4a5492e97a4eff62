// The chat view's HTML, from a ChatState. No `vscode` here. Markdown is rendered with raw HTML
// disabled, so nothing the model writes becomes markup of its own.

import MarkdownIt from "markdown-it";
import { AgentThread, threadLabel } from "./agentThread";
import { ChatState, Entry, toolLine } from "./chatState";
import type { CommandInfo } from "./protocol";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false });
// Only links with a scheme: "app.py" is a file name, not a web site.
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

export function renderMarkdown(text: string): string {
  return md.render(text);
}

function renderEntry(e: Entry, index: number): string {
  switch (e.type) {
    case "user":
      return (
        `<div class="msg user">` +
        (e.context ? `<div class="ctx">${escapeHtml(e.context)}</div>` : "") +
        `<div class="body">${renderMarkdown(e.text)}</div></div>`
      );
    case "text":
      return `<div class="msg answer" data-part="${escapeHtml(e.partId)}">${renderMarkdown(e.text)}</div>`;
    case "reasoning":
      return (
        `<details class="reasoning" data-key="r-${escapeHtml(e.partId)}"><summary>Reasoning</summary>` +
        `<div class="body">${renderMarkdown(e.text)}</div></details>`
      );
    case "tool": {
      const cls = e.status ? `tool ${escapeHtml(e.status)}` : "tool running";
      const result = e.status ? `${e.status}${e.summary ? `: ${e.summary}` : ""}` : "…";
      return (
        `<div class="${cls}" data-call="${escapeHtml(e.callId)}" title="${escapeHtml(toolLine(e))}">` +
        `<div class="tool-title">▸ ${escapeHtml(e.title)}</div>` +
        (e.thread ? renderThread(e.callId, e.thread) : "") +
        `<div class="tool-result">${escapeHtml(result)}</div></div>`
      );
    }
    case "notice":
      return `<div class="notice ${escapeHtml(e.level)}">${escapeHtml(e.message)}</div>`;
    case "error":
      return `<div class="notice error">${escapeHtml(e.errorClass)}: ${escapeHtml(e.message)}</div>`;
    case "end": {
      const reason = e.stopReason === "finished" ? "" : ` (${escapeHtml(e.stopReason)})`;
      return `<div class="model" data-index="${index}">— ${escapeHtml(e.model)}${reason}</div>`;
    }
  }
}

/** A sub-agent's thread: collapsed (the webview keeps a block the user opened open), above
 * the call's result and so above the answer. Its text is "agent-text", never "answer". */
function renderThread(callId: string, thread: AgentThread): string {
  const body = thread.entries
    .map((e) => {
      switch (e.type) {
        case "text":
          return `<div class="agent-text">${renderMarkdown(e.text)}</div>`;
        case "reasoning":
          return `<div class="agent-reasoning">${renderMarkdown(e.text)}</div>`;
        case "tool": {
          const result = e.status ? `${e.status}${e.summary ? `: ${e.summary}` : ""}` : "…";
          return `<div class="agent-tool">▸ ${escapeHtml(e.title)} <span class="tool-result">${escapeHtml(result)}</span></div>`;
        }
        case "notice":
          return `<div class="notice ${escapeHtml(e.level)}">${escapeHtml(e.message)}</div>`;
      }
    })
    .join("");
  return (
    `<details class="agent" data-key="a-${escapeHtml(callId)}" data-agent="${escapeHtml(thread.agent)}">` +
    `<summary>${escapeHtml(threadLabel(thread))}</summary><div class="thread">${body}</div></details>`
  );
}

export function renderTodos(state: ChatState): string {
  if (!state.todos.length) return "";
  const mark = { pending: "☐", in_progress: "◐", completed: "☑" } as const;
  const items = state.todos
    .map((t) => `<li class="todo ${escapeHtml(t.status)}">${mark[t.status] ?? "☐"} ${escapeHtml(t.content)}</li>`)
    .join("");
  return `<ul class="todos">${items}</ul>`;
}

export function contextEstimate(state: ChatState): string {
  if (state.contextTokens === undefined) return "";
  const tokens = state.contextTokens.toLocaleString("en-US");
  if (state.contextWindow) {
    const percent = Math.round((100 * state.contextTokens) / state.contextWindow);
    return `Context: ~${tokens} tokens (${percent}% of ${state.contextWindow.toLocaleString("en-US")})`;
  }
  return `Context: ~${tokens} tokens`;
}

/** What the webview needs to draw: plain JSON, posted as one message. */
export interface ViewModel {
  html: string;
  todos: string;
  busy: boolean;
  title: string;
  status: string;
  context: string;
  pending: { callId: string; title: string; kind: string; diff?: string } | null;
  /** The slash commands (chips above the prompt box, and its completion). */
  commands: { name: string; description: string }[];
}

export function viewModel(state: ChatState, status: string, commands: CommandInfo[] = []): ViewModel {
  return {
    html: state.entries.map(renderEntry).join("\n"),
    todos: renderTodos(state),
    busy: state.busy,
    title: state.title || (state.sessionId ? "Session" : "New chat"),
    status,
    context: contextEstimate(state),
    pending: state.pending ? { ...state.pending } : null,
    commands: commands.map((c) => ({ name: c.name, description: c.description })),
  };
}
