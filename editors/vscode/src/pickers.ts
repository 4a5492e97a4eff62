// The quick picks and dialogs of the palette commands and the chat's buttons: which session to
// open, which agent file to edit, which model and mode, how far a rewind goes. Each returns the
// user's choice (undefined: dismissed); the extension sends the request.

import * as vscode from "vscode";
import type { AgentInfo, FileChange, HookInfo, Mode, ModelInfo, SessionInfo } from "./protocol";
import { hookItem, NO_HOOKS } from "./hookList";
import { sessionTitle } from "./chatState";

/** A session of `list` to open ("new": a new chat). `current`: the shown chat's; `open`: those with a tab. */
export async function pickSession(list: SessionInfo[], current: string | undefined, open: Set<string | undefined>): Promise<string | "new" | undefined> {
  type Item = vscode.QuickPickItem & { sessionId?: string };
  const items: Item[] = [
    { label: "$(add) New chat" },
    ...list.map((s) => ({
      label: (s.sessionId === current ? "$(check) " : "") + (sessionTitle(s.title) || "(untitled)"),
      description: [s.model, s.sessionId === current ? "current" : open.has(s.sessionId) ? "open in a tab" : ""].filter(Boolean).join(" · "),
      detail: new Date(s.updatedAt * 1000).toLocaleString(),
      sessionId: s.sessionId,
    })),
  ];
  const picked = await vscode.window.showQuickPick(items, { title: "Totem sessions", placeHolder: "Reopen a session" });
  if (!picked) return undefined;
  return picked.sessionId ?? "new";
}

/** The file of an agent to open (the agents the `task` tool can start, with their source). */
export async function pickAgentFile(agents: AgentInfo[]): Promise<string | undefined> {
  const picked = await vscode.window.showQuickPick(
    agents.map((a) => ({
      label: a.name,
      description: a.source,
      detail: [a.description, a.tools ? `tools: ${a.tools.join(", ")}` : "all tools", a.model ?? ""].filter(Boolean).join(" · "),
      file: a.file,
    })),
    { title: "Totem agents", placeHolder: "Open an agent's file to edit it", matchOnDescription: true },
  );
  return picked?.file;
}

/** The config file of a hook to open (the hooks the config files declare, whether each runs);
 * none configured: says so. */
export async function pickHookFile(hooks: HookInfo[], home: string): Promise<string | undefined> {
  if (hooks.length === 0) {
    void vscode.window.showInformationMessage(`Totem: ${NO_HOOKS}`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    hooks.map((h) => hookItem(h, home)),
    { title: "Totem hooks", placeHolder: "Open a hook's config file", matchOnDescription: true, matchOnDetail: true },
  );
  return picked?.file;
}

/** A model of `models`, the current one first and marked (so Enter keeps it), or one the user
 * types as `provider/model` (a provider's model its list leaves out): the typed text is an item. */
export async function pickModel(models: ModelInfo[], current: string | undefined, forSession: boolean): Promise<string | undefined> {
  type Item = vscode.QuickPickItem & { id: string };
  const items: Item[] = models.map((m) => ({
    label: (m.id === current ? "$(check) " : "") + m.id,
    id: m.id,
    description: [m.id === current ? "current" : "", m.contextWindow ? `${m.contextWindow.toLocaleString("en-US")} tokens` : ""].filter(Boolean).join(" · ") || undefined,
  }));
  items.sort((a, b) => Number(b.id === current) - Number(a.id === current));
  const pick = vscode.window.createQuickPick<Item>();
  pick.title = "Totem model";
  pick.placeholder = `${forSession ? "For this session" : "For new sessions"}; or type provider/model`;
  pick.items = items;
  pick.onDidChangeValue((value) => {
    const typed = typedModel(value, models);
    pick.items = typed ? [{ label: typed, id: typed, description: "typed: use this model", alwaysShow: true }, ...items] : items;
  });
  return new Promise((resolve) => {
    pick.onDidAccept(() => {
      resolve(pick.selectedItems[0]?.id);
      pick.hide();
    });
    pick.onDidHide(() => {
      resolve(undefined);
      pick.dispose();
    });
    pick.show();
  });
}

/** `value` as a model to use when it reads `provider/model` and is not listed already. */
export function typedModel(value: string, models: ModelInfo[]): string | undefined {
  const typed = value.trim();
  return /^[^\s/]+\/\S+$/.test(typed) && !models.some((m) => m.id === typed) ? typed : undefined;
}

/** An MCP server to log in to, of the declared URL servers; none declared: says so. */
export async function pickMcpServer(servers: { name: string; url: string }[]): Promise<string | undefined> {
  if (servers.length === 0) {
    void vscode.window.showInformationMessage("Totem: no MCP server with a URL is declared (mcp.json); only those have a login.");
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    servers.map((s) => ({ label: s.name, description: s.url })),
    { title: "Totem: log in to an MCP server", placeHolder: "The server to log in to (its login page opens in the browser)" },
  );
  return picked?.label;
}

export async function pickMode(current: Mode, forSession: boolean): Promise<Mode | undefined> {
  const picked = await vscode.window.showQuickPick(
    [
      { label: "build", description: current === "build" ? "current" : undefined, detail: "Changes files and runs commands, asking as the rules say" },
      { label: "plan", description: current === "plan" ? "current" : undefined, detail: "Reads and plans; changes nothing" },
    ],
    { title: "Totem mode", placeHolder: forSession ? "For this session" : "For new sessions" },
  );
  return picked?.label as Mode | undefined;
}

/** How far a rewind goes: the files too or not. */
export async function pickRewind(): Promise<{ files: boolean } | undefined> {
  const both = "Rewind the conversation and the files";
  const picked = await vscode.window.showQuickPick(
    [
      { label: both, detail: "Takes back what the agent changed since this message (through the snapshots)" },
      { label: "Rewind the conversation only", detail: "The files stay as they are" },
    ],
    { title: "Totem: rewind to before this message", placeHolder: "Later messages are set aside, not deleted" },
  );
  return picked ? { files: picked.label === both } : undefined;
}

/** Files the user changed since (a rewind's dry run named them): overwrite them too? */
export async function confirmOverwrite(conflicts: FileChange[]): Promise<boolean | undefined> {
  const overwrite = "Overwrite them";
  const answer = await vscode.window.showWarningMessage(
    `You changed ${conflicts.map((f) => f.path).join(", ")} since. Overwrite your changes too?`,
    { modal: true, detail: "Otherwise those files are left as they are and the others go back." },
    overwrite,
    "Leave them",
  );
  return answer === undefined ? undefined : answer === overwrite;
}
