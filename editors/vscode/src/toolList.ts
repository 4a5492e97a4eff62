// The tools a session's model has (`totem/tools`) as "Totem: Show Session Tools" lists them: the
// quick pick's title (model, mode, window), the reason the set was narrowed and the tools left
// out first, then one item a tool. No `vscode` here.

import type { SessionToolsInfo } from "./protocol";

export interface ToolItem {
  label: string;
  description?: string;
  detail?: string;
}

/** "Tools of local/qwen (build mode, window 32,768 tokens)". */
export function toolsTitle(listed: SessionToolsInfo): string {
  const window = typeof listed.contextWindow === "number" ? `, window ${listed.contextWindow.toLocaleString("en-US")} tokens` : "";
  return `Tools of ${listed.model} (${listed.mode} mode${window})`;
}

/** The narrowing first (why, and what is left out), code mode, then each tool with its
 * description and, in plan mode, what the mode refuses. */
export function toolItems(listed: SessionToolsInfo): ToolItem[] {
  const items: ToolItem[] = [];
  if (listed.narrowed) {
    items.push({ label: "$(warning) Narrowed", description: listed.narrowed, detail: `Left out: ${listed.leftOut.join(", ")}` });
  }
  if (listed.scripts) items.push({ label: "$(code) Code mode", description: "the model writes its calls as scripts" });
  for (const tool of listed.tools) {
    items.push({ label: tool.name, description: tool.description, ...(tool.refused ? { detail: tool.refused } : {}) });
  }
  return items;
}
