// Notices for a user who is elsewhere (seed 001, "the notices of the browser"): when a turn ends
// or a question waits and the chat is not in sight, a notification says so, with a button that
// opens the chat. Here only what to say and when; extension.ts shows it (`totem.notify`).

import type { StopReason } from "./protocol";

/** Where the user is: whether the chat view is visible and the window has the focus. */
export interface Whereabouts {
  viewVisible: boolean;
  windowFocused: boolean;
}

/** The button of a notice. */
export const OPEN_CHAT = "Open Chat";

/** Whether a notice is due: notices on, and the chat out of the user's sight. */
export function noticeDue(enabled: boolean, where: Whereabouts): boolean {
  return enabled && (!where.viewVisible || !where.windowFocused);
}

const ENDED: Record<StopReason, string | undefined> = {
  finished: "finished",
  step_limit: "stopped at the step limit",
  guard: "was stopped by a guard",
  error: "failed",
  // The user stopped it: they are there.
  aborted: undefined,
};

/** The notice of a turn's end (`turnEnd`); none for a sub-agent's turn or one the user stopped. */
export function turnEndNotice(stopReason: StopReason, title: string | undefined, parentCallId?: string): string | undefined {
  const ended = ENDED[stopReason];
  if (parentCallId || !ended) return undefined;
  return `Totem ${ended}${title ? `: ${title}` : "."}`;
}

/** The notice of a question that waits for the user (a permission or the model's question). */
export function askNotice(kind: "permission" | "question", title: string, chat?: string): string {
  const where = chat ? ` (chat "${chat}")` : "";
  return kind === "permission" ? `Totem waits for your permission${where}: ${title}` : `Totem asks${where}: ${title}`;
}

/** A permission's heading, naming the chat that asks: with two chats open, the one asking. */
export function permissionHeading(title: string, chat: string): string {
  return `Totem wants to: ${title} (asked in the chat "${chat}")`;
}
