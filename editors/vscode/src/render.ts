// The chat view's HTML, from a ChatState. No `vscode` here. Markdown is rendered with raw HTML
// disabled, so nothing the model writes becomes markup of its own.

import MarkdownIt from "markdown-it";
import { AgentThread, threadLabel } from "./agentThread";
import { ChatState, Entry, toolLine } from "./chatState";
import { Job, jobLine } from "./jobList";
import type { CommandInfo } from "./protocol";

const md = setUp(new MarkdownIt({ html: false, linkify: true, breaks: false }));
// The reasoning is plain prose with line breaks that mean something: keep them.
const mdBreaks = setUp(new MarkdownIt({ html: false, linkify: true, breaks: true }));

function setUp(it: MarkdownIt): MarkdownIt {
  // Only links with a scheme: "app.py" is a file name, not a web site.
  it.linkify.set({ fuzzyLink: false, fuzzyEmail: false });
  // A code block: highlighted, with a copy button (chat.js copies the block's text).
  it.renderer.rules.fence = (tokens, idx) => {
    const token = tokens[idx];
    const lang = token.info.trim().split(/\s+/)[0] ?? "";
    const cls = lang ? ` class="language-${escapeHtml(lang)}"` : "";
    return (
      `<div class="code"><button class="copy secondary" title="Copy the code">Copy</button>` +
      `<pre><code${cls}>${highlight(token.content, lang)}</code></pre></div>\n`
    );
  };
  // A wide table scrolls in its own box instead of clipping the side bar.
  it.renderer.rules.table_open = () => `<div class="table-wrap"><table>\n`;
  it.renderer.rules.table_close = () => `</table></div>\n`;
  return it;
}

const KEYWORDS = new Set(
  (
    "and as assert async await break case catch class const continue def default del delete do elif else except export " +
    "extends false finally fn for from func function go if impl import in interface is lambda let match mut new nil " +
    "none not null or package pass pub raise return self static struct super switch this throw true try type typeof " +
    "undefined use var void while with yield True False None"
  ).split(" "),
);
const HASH_COMMENTS = new Set(["py", "python", "sh", "bash", "shell", "zsh", "rb", "ruby", "toml", "yaml", "yml", "r", "perl", "make", "dockerfile"]);

/** A small highlighter for code blocks: comments, strings, numbers and keywords of the common
 * languages, as spans the theme colours (classes hl-*). Everything else is escaped text. */
export function highlight(code: string, lang: string): string {
  const l = lang.toLowerCase();
  const comment = HASH_COMMENTS.has(l) ? String.raw`#[^\n]*` : l === "sql" || l === "lua" ? String.raw`--[^\n]*` : String.raw`\/\/[^\n]*|\/\*[\s\S]*?\*\/`;
  const strings = String.raw`"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|` + "`(?:[^`\\\\]|\\\\.)*`";
  const token = new RegExp(`(${comment})|(${strings})|(\\b\\d[\\d_.]*\\b)|([A-Za-z_$][\\w$]*)`, "g");
  if (!lang || l === "text" || l === "plain" || l === "diff") return escapeHtml(code);
  let out = "";
  let last = 0;
  for (const m of code.matchAll(token)) {
    out += escapeHtml(code.slice(last, m.index));
    const text = escapeHtml(m[0]);
    if (m[1]) out += `<span class="hl-comment">${text}</span>`;
    else if (m[2]) out += `<span class="hl-string">${text}</span>`;
    else if (m[3]) out += `<span class="hl-number">${text}</span>`;
    else if (KEYWORDS.has(m[4])) out += `<span class="hl-keyword">${text}</span>`;
    else out += text;
    last = m.index! + m[0].length;
  }
  return out + escapeHtml(code.slice(last));
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

export function renderMarkdown(text: string): string {
  return md.render(text);
}

/** An entry's HTML; its element carries `data-key` so the webview updates it in place. */
function renderEntry(e: Entry, index: number, entries: Entry[]): string {
  return renderOne(e, index, entries).replace(/^(<\w+[^>]*)>/, `$1 data-entry="${index}">`);
}

/** The lines of a command's output shown under its line: the first and last of a long one. */
const OUTPUT_LINES = 40;

export function cappedOutput(output: string): string {
  const lines = output.replace(/\n$/, "").split("\n");
  if (lines.length <= OUTPUT_LINES) return lines.join("\n");
  const head = lines.slice(0, OUTPUT_LINES / 2);
  const tail = lines.slice(-OUTPUT_LINES / 2);
  return [...head, `… ${lines.length - OUTPUT_LINES} more lines …`, ...tail].join("\n");
}

function renderOne(e: Entry, index: number, entries: Entry[]): string {
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
        `<div class="body">${mdBreaks.render(e.text)}</div></details>`
      );
    case "tool": {
      const cls = e.status ? `tool ${escapeHtml(e.status)}` : "tool running";
      const result = e.status ? `${e.status}${e.summary ? `: ${e.summary}` : ""}` : "…";
      return (
        `<div class="${cls}" data-call="${escapeHtml(e.callId)}" title="${escapeHtml(toolLine(e))}">` +
        `<div class="tool-title">▸ ${escapeHtml(e.title)}</div>` +
        (e.thread ? renderThread(e.callId, e.thread) : "") +
        `<div class="tool-result">${escapeHtml(result)}</div>` +
        (e.feedback ? `<div class="feedback">Your feedback: ${escapeHtml(e.feedback)}</div>` : "") +
        (e.output !== undefined ? renderOutput(e) : "") +
        `</div>`
      );
    }
    case "notice":
      return `<div class="notice ${escapeHtml(e.level)}">${escapeHtml(e.message)}</div>`;
    case "error": {
      // Retry sends the message again, offered on the chat's last error only.
      const last = entries.slice(index + 1).every((x) => x.type !== "user" && x.type !== "error");
      return (
        `<div class="notice error"><div class="error-message">${escapeHtml(e.errorClass)}: ${escapeHtml(e.message)}</div>` +
        (e.hint ? `<div class="hint">${escapeHtml(e.hint)}</div>` : "") +
        (e.retry && last ? `<button class="retry secondary" data-text="${escapeHtml(e.retry)}">Retry</button>` : "") +
        `</div>`
      );
    }
    case "end": {
      const reason = e.stopReason === "finished" ? "" : ` (${escapeHtml(e.stopReason)})`;
      return `<div class="model" data-index="${index}">— ${escapeHtml(e.model)}${reason}</div>`;
    }
  }
}

/** A command's output, folded under its line; open when the call failed (a non-zero exit). */
function renderOutput(e: Extract<Entry, { type: "tool" }>): string {
  // A command that exited non-zero ends "ok" (it ran): its output says `[exit code N]`.
  const failed = e.status !== "ok" || /^\[exit code -?\d+\]$/m.test(e.output ?? "") || /^timed out/.test(e.summary ?? "");
  const lines = (e.output ?? "").replace(/\n$/, "").split("\n").length;
  const label = e.output ? `Output (${lines} ${lines === 1 ? "line" : "lines"})` : "No output";
  return (
    `<details class="output" data-key="o-${escapeHtml(e.callId)}"${failed ? " open" : ""}><summary>${label}</summary>` +
    `<pre>${escapeHtml(cappedOutput(e.output ?? ""))}</pre></details>`
  );
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

/** The job list above the todos: a row per job, Stop on a running one, Dismiss on an ended one.
 * A job of another session than the chat's says so (its Stop still works). */
export function renderJobs(state: ChatState): string {
  if (!state.jobs.jobs.length) return "";
  const row = (job: Job) => {
    const keys = `data-session="${escapeHtml(job.sessionId)}" data-job="${escapeHtml(job.jobId)}"`;
    const other = job.sessionId !== state.sessionId;
    const button =
      job.state === "running"
        ? `<button class="job-stop secondary" ${keys}${job.stopping ? " disabled" : ""} title="Stop ${escapeHtml(job.jobId)} (its whole process group)">Stop</button>`
        : `<button class="job-dismiss secondary" ${keys} title="Remove it from the list">Dismiss</button>`;
    return (
      `<li class="job ${escapeHtml(job.state)}" ${keys} title="${escapeHtml(jobLine(job))}">` +
      `<span class="job-id">${escapeHtml(job.jobId)}</span>` +
      `<code class="job-command">${escapeHtml(job.command)}</code>` +
      `<span class="job-state">${job.stopping ? "stopping…" : escapeHtml(job.state)}</span>` +
      (job.exitCode === null ? "" : `<span class="job-exit">exit code ${job.exitCode}</span>`) +
      (other ? `<span class="job-session">another chat</span>` : "") +
      button +
      `</li>`
    );
  };
  const running = state.jobs.running().length;
  const label = running ? `Jobs (${running} running)` : "Jobs";
  return `<div class="jobs-title">${label}</div><ul class="jobs">${state.jobs.jobs.map(row).join("")}</ul>`;
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
  /** The background jobs (renderJobs); empty when there are none. */
  jobs: string;
  busy: boolean;
  title: string;
  status: string;
  context: string;
  pending: { callId: string; title: string; kind: string; diff?: string; files?: string[]; always?: string } | null;
  /** The slash commands (chips above the prompt box, and its completion). */
  commands: { name: string; description: string }[];
}

export function viewModel(state: ChatState, status: string, commands: CommandInfo[] = []): ViewModel {
  return {
    html: state.entries.map((e, i, all) => renderEntry(e, i, all)).join("\n"),
    todos: renderTodos(state),
    jobs: renderJobs(state),
    busy: state.busy,
    title: state.title || (state.sessionId ? "Session" : "New chat"),
    status,
    context: contextEstimate(state),
    pending: state.pending ? { ...state.pending } : null,
    commands: commands.map((c) => ({ name: c.name, description: c.description })),
  };
}
