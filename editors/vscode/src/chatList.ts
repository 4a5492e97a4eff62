// The window's chats, one a session, shown as tabs in the chat view: which one is shown, which
// chat an event belongs to, opening a stored session in a tab of its own. A turn runs in its
// chat whichever tab is shown. No `vscode` here.

import { ChatState } from "./chatState";
import { JobList } from "./jobList";
import type { SessionHistory, TotemEvent } from "./protocol";

export interface Tab { key: number; title: string; busy: boolean; current: boolean }

export class ChatList {
  /** The background jobs of every chat of the window (a job outlives the chat that started it). */
  readonly jobs = new JobList();
  chats: ChatState[] = [new ChatState(this.jobs)];
  current: ChatState = this.chats[0];

  /** The chat of a session, if one is open. */
  forSession(sessionId: string): ChatState | undefined {
    return this.chats.find((c) => c.sessionId === sessionId);
  }

  byKey(key: number): ChatState | undefined {
    return this.chats.find((c) => c.key === key);
  }

  /** Apply an event to its chat; returns the chat it changed, if any. A `turnStart` of a session
   * no chat has is a chat's first turn (the oldest chat waiting for its session), else a turn
   * started elsewhere (the "Ask Totem to fix" action): it gets a chat of its own, shown unless
   * the chat shown is busy. */
  apply(event: TotemEvent): ChatState | undefined {
    if (event.kind === "job") return this.jobs.apply(event) ? this.current : undefined;
    let chat = this.forSession(event.sessionId);
    if (!chat && event.kind === "turnStart") {
      chat = this.chats.find((c) => c.awaitingSession);
      if (!chat) {
        chat = this.add();
        chat.entries.push({ type: "user", text: "(asked from the editor)" });
        chat.awaitingSession = true;
        if (!this.current.busy) this.current = chat;
      }
    }
    if (!chat) return undefined;
    return chat.apply(event) ? chat : undefined;
  }

  /** A new chat, shown: the shown one when it is still empty. */
  newChat(): ChatState {
    if (!this.current.empty) this.current = this.add();
    return this.current;
  }

  /** Show a stored session: its own tab when open already, else a new one (or the empty shown one). */
  open(history: SessionHistory): ChatState {
    const chat = this.forSession(history.sessionId) ?? (this.current.empty ? this.current : this.add());
    if (!chat.busy) chat.load(history);
    this.current = chat;
    return chat;
  }

  select(key: number): boolean {
    const chat = this.byKey(key);
    if (!chat || chat === this.current) return false;
    this.current = chat;
    return true;
  }

  /** Close a tab (not one whose turn runs); the last one closed leaves an empty chat. */
  close(key: number): boolean {
    const index = this.chats.findIndex((c) => c.key === key);
    if (index < 0 || this.chats[index].busy) return false;
    this.chats.splice(index, 1);
    if (!this.chats.length) this.chats.push(new ChatState(this.jobs));
    if (!this.chats.includes(this.current)) this.current = this.chats[Math.min(index, this.chats.length - 1)];
    return true;
  }

  tabs(): Tab[] {
    return this.chats.map((c) => ({ key: c.key, title: c.title || (c.sessionId ? "Session" : "New chat"), busy: c.busy, current: c === this.current }));
  }

  private add(): ChatState {
    const chat = new ChatState(this.jobs);
    this.chats.push(chat);
    return chat;
  }
}
