// The chat view's HTML, from a ChatState. No `vscode` here. Markdown is rendered with raw HTML
// disabled, so nothing the model writes becomes markup of its own.

import MarkdownIt from "markdown-it";
import { AgentThread, threadLabel } from "./agentThread";
import { ChatState, Entry, PendingAsk, toolLine } from "./chatState";
import { Job, NO_NETWORK, forwardNote, jobLine } from "./jobList";
import { callOutcome } from "./toolCard";
import type { Tab } from "./chatList";
import type { CommandInfo, Mode } from "./protocol";

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
    case "user": {
      const chips = (e.chips ?? []).map((c) => `<span class="chip mention" title="Attached for the model">${escapeHtml(c)}</span>`).join("");
      // Rewind: the conversation (and, if the user says so, the files) back to before this message.
      // Fork: a new session with the conversation up to this message and its answer.
      const fork = e.exchangeEnd
        ? `<button class="fork icon" data-message="${escapeHtml(e.exchangeEnd)}" title="A new session with the conversation up to this message and its answer">⎇ Fork</button>`
        : "";
      const rewind = e.messageId
        ? `<div class="msg-actions"><button class="rewind icon" data-message="${escapeHtml(e.messageId)}" title="Rewind to before this message">↶ Rewind</button>${fork}</div>`
        : "";
      return (
        `<div class="msg user"${e.messageId ? ` data-message="${escapeHtml(e.messageId)}"` : ""}>` +
        (e.context ? `<div class="ctx">${escapeHtml(e.context)}</div>` : "") +
        `<div class="body">${renderMarkdown(e.text)}</div>` +
        (e.images?.length
          ? `<div class="images">${e.images.map((i) => `<img class="attachment" src="${escapeHtml(i.src)}" alt="${escapeHtml(i.name)}" title="${escapeHtml(i.name)}">`).join("")}</div>`
          : "") +
        (chips ? `<div class="chips">${chips}</div>` : "") +
        rewind +
        `</div>`
      );
    }
    case "text":
      return `<div class="msg answer" data-part="${escapeHtml(e.partId)}">${renderMarkdown(e.text)}</div>`;
    case "reasoning":
      return (
        `<details class="reasoning" data-key="r-${escapeHtml(e.partId)}"><summary>Reasoning</summary>` +
        `<div class="body">${mdBreaks.render(e.text)}</div></details>`
      );
    case "tool": {
      // A card: the call and its result, what the user said or took of it, and what folds under
      // it (a command's output, a sub-agent's thread), open when the call failed.
      // A command that exited non-zero, timed out or was killed is a failure too (toolCard.ts).
      const outcome = callOutcome(e.tool, e.status, e.summary, e.output);
      const cls = !e.status ? "tool running" : `tool ${escapeHtml(e.status)}${outcome?.failed ? " failed" : ""}`;
      // The command itself, under the model's description of it (unless the title is the command).
      const command = e.command && !e.title.includes(e.command) ? `<pre class="tool-command"><code>$ ${escapeHtml(e.command)}</code></pre>` : "";
      return (
        `<div class="${cls}" data-call="${escapeHtml(e.callId)}" title="${escapeHtml(toolLine(e))}">` +
        `<div class="tool-title">▸ ${escapeHtml(e.title)}</div>` +
        command +
        (e.thread ? renderThread(e.callId, e.thread, failedCall(e.status)) : "") +
        `<div class="tool-result">${escapeHtml(outcome?.text ?? "…")}</div>` +
        (e.feedback ? `<div class="feedback">Your feedback: ${escapeHtml(e.feedback)}</div>` : "") +
        (e.review ?? []).map((line) => `<div class="review">You ${escapeHtml(line)}</div>`).join("") +
        (e.output !== undefined ? renderOutput(e, outcome?.failed ?? false) : "") +
        `</div>`
      );
    }
    case "notice":
      return `<div class="notice ${escapeHtml(e.level)}">${escapeHtml(e.message)}</div>`;
    case "error": {
      // Retry takes up the failed turn (totem/retry), or sends again a message that never
      // started one; offered on the chat's last error only.
      const last = entries.slice(index + 1).every((x) => x.type !== "user" && x.type !== "error");
      const retry = !last ? "" : e.retry
        ? `<button class="retry secondary" title="Take up the failed turn again">Retry</button>`
        : e.resend ? `<button class="retry secondary" data-text="${escapeHtml(e.resend)}" title="Send the message again">Retry</button>` : "";
      return (
        `<div class="notice error"><div class="error-message">${escapeHtml(e.errorClass)}: ${escapeHtml(e.message)}</div>` +
        (e.hint ? `<div class="hint">${escapeHtml(e.hint)}</div>` : "") +
        retry +
        `</div>`
      );
    }
    case "end": {
      const reason = e.stopReason === "finished" ? "" : ` (${escapeHtml(e.stopReason)})`;
      const request = e.requestId ? ` data-request="${escapeHtml(e.requestId)}"` : "";
      // The answer's variants (‹ 1/2 ›, totem/variant) and a new one (totem/regenerate).
      const v = e.variant;
      const variants = v && e.requestId
        ? `<span class="variants">` +
          `<button class="variant icon" data-index="${v.index - 1}"${v.index > 0 ? "" : " disabled"} title="The previous answer">‹</button>` +
          `<span class="variant-count">${v.index + 1}/${v.count}</span>` +
          `<button class="variant icon" data-index="${v.index + 1}"${v.index + 1 < v.count ? "" : " disabled"} title="The next answer">›</button></span>`
        : "";
      const again = e.requestId ? `<button class="regenerate icon" title="Answer this message again (the answer so far is kept as a variant)">↻ Regenerate</button>` : "";
      return `<div class="model"${request} data-index="${index}">${variants}${again}<span class="model-name">— ${escapeHtml(e.model)}${reason}</span></div>`;
    }
  }
}

/** A call that did not do what it was asked: its card's folds are open. */
function failedCall(status: string | undefined): boolean {
  return status === "error" || status === "denied" || status === "interrupted";
}

/** A command's output, folded under its line; open when the call failed (a non-zero exit). */
function renderOutput(e: Extract<Entry, { type: "tool" }>, failed: boolean): string {
  const lines = (e.output ?? "").replace(/\n$/, "").split("\n").length;
  const label = e.output ? `Output (${lines} ${lines === 1 ? "line" : "lines"})` : "No output";
  return (
    `<details class="output" data-key="o-${escapeHtml(e.callId)}"${failed ? " open" : ""}><summary>${label}</summary>` +
    `<pre>${escapeHtml(cappedOutput(e.output ?? ""))}</pre></details>`
  );
}

/** A sub-agent's thread: collapsed (the webview keeps a block the user opened open), above
 * the call's result and so above the answer. Its text is "agent-text", never "answer". */
function renderThread(callId: string, thread: AgentThread, open = false): string {
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
    `<details class="agent" data-key="a-${escapeHtml(callId)}" data-agent="${escapeHtml(thread.agent)}"${open ? " open" : ""}>` +
    `<summary>${escapeHtml(threadLabel(thread))}</summary><div class="thread">${body}</div></details>`
  );
}

/** The chat's queued messages (messageQueue.ts), under the conversation: each with Edit and Remove. */
export function renderQueue(state: ChatState): string {
  if (!state.queue.size) return "";
  const items = state.queue.messages.map(
    (m) =>
      `<li class="queued-message" data-queued="${m.id}"><span class="queued-text">${escapeHtml(m.text)}</span>` +
      `<button class="queue-edit" data-queued="${m.id}" title="Edit this message before it is sent">Edit</button>` +
      `<button class="queue-remove" data-queued="${m.id}" title="Remove it: it will not be sent">Remove</button></li>`,
  );
  return `<div class="queue"><div class="queue-title">Queued: sent when the turn ends</div><ol>${items.join("")}</ol></div>`;
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
      (job.offline ? `<span class="job-network" title="A server it starts answers this chat's commands, not your browser">${NO_NETWORK}</span>` : "") +
      (forwardNote(job) ? `<span class="job-network">${escapeHtml(forwardNote(job))}</span>` : "") +
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

/** The context ring: how much of the window the next request takes (the `context` event). */
export interface Ring { percent: number | null; label: string; tooltip: string }

/** The parts of the `context` event's `breakdown` (docs/events.md), for people. */
const PART_NAMES: Record<string, string> = {
  system: "system prompt and tools",
  history: "history",
  toolResults: "tool results",
  attachments: "attachments",
  output: "kept for the answer",
};

export function contextRing(state: ChatState): Ring | null {
  if (state.contextTokens === undefined) return null;
  const n = (x: number) => x.toLocaleString("en-US");
  const used = state.contextTokens;
  const window = state.contextWindow;
  const percent = window ? Math.min(100, Math.round((100 * used) / window)) : null;
  const lines = [window ? `${n(used)} of ${n(window)} tokens (${percent}%)` : `${n(used)} tokens (window unknown)`];
  for (const [part, tokens] of Object.entries(state.contextBreakdown ?? {})) lines.push(`${PART_NAMES[part] ?? part}: ${n(tokens)}`);
  return { percent, label: window ? `${percent}%` : `~${n(used)}`, tooltip: lines.join("\n") };
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
  pending: PendingAsk | null;
  /** The slash commands (chips above the prompt box). */
  commands: { name: string; description: string }[];
  /** The window's chats, one tab each. */
  tabs: Tab[];
  ring: Ring | null;
  /** The model picker: the models to choose from and the chat's; the mode picker's mode. */
  models: string[];
  model: string;
  mode: Mode;
  /** Whether the chat's model may see images (not known not to): the attach button, pasting images. */
  vision: boolean;
  /** Whether nothing says if it sees images (`vision: null`): the attach button says so. */
  visionUnknown: boolean;
}

/** The window's part of the view: its chats, the models to pick from. */
/** `blind`: the models `totem/models` says do not see images (`vision: false`); `unsure`: those
 * it does not know of (`vision: null`). */
export interface ViewExtras { tabs?: Tab[]; models?: string[]; mode?: Mode; blind?: string[]; unsure?: string[] }

export function viewModel(state: ChatState, status: string, commands: CommandInfo[] = [], extras: ViewExtras = {}): ViewModel {
  const model = state.model ?? "";
  const models = [...new Set([...(extras.models ?? []), ...(model ? [model] : [])])];
  return {
    tabs: extras.tabs ?? [],
    ring: contextRing(state),
    models,
    model,
    mode: state.mode ?? extras.mode ?? "build",
    // Unknown (null) is not "no": a `[models]` entry of the config may say it sees images.
    vision: !(extras.blind ?? []).includes(model),
    visionUnknown: (extras.unsure ?? []).includes(model),
    html: state.entries.map((e, i, all) => renderEntry(e, i, all)).join("\n") + renderQueue(state),
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
