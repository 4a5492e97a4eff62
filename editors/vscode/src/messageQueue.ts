// Messages sent while a chat's turn runs: kept by the chat in the order they came (the server runs
// one turn a session, and this queue is the editor's alone), drawn under the conversation as
// queued (render.ts `renderQueue`), editable and removable until sent, each sent when the turn
// before it ends; a stop with messages queued asks whether to drop them (extension.ts `abort`).
import type { ChatParams } from "./protocol";

/** What a queued message is sent with besides its text, as it was when the user sent it. */
export interface QueuedWith {
  context?: ChatParams["context"];
  label?: string;
  editor?: ChatParams["editor"];
  images: { name: string; mimeType: string; data: string }[];
}

export interface QueuedMessage {
  /** Stable while queued: what the view's Edit and Remove name. */
  id: number;
  text: string;
  with: QueuedWith;
}

export class MessageQueue {
  private items: QueuedMessage[] = [];
  private lastId = 0;

  get messages(): readonly QueuedMessage[] {
    return this.items;
  }

  get size(): number {
    return this.items.length;
  }

  add(text: string, sentWith: QueuedWith): QueuedMessage {
    const message = { id: ++this.lastId, text, with: sentWith };
    this.items.push(message);
    return message;
  }

  /** The message's new text; false when it is no longer queued (sent or removed meanwhile). */
  edit(id: number, text: string): boolean {
    const message = this.items.find((m) => m.id === id);
    if (message) message.text = text;
    return !!message;
  }

  remove(id: number): boolean {
    const before = this.items.length;
    this.items = this.items.filter((m) => m.id !== id);
    return this.items.length < before;
  }

  /** The first message, taken off the queue to be sent. */
  take(): QueuedMessage | undefined {
    return this.items.shift();
  }

  clear(): void {
    this.items = [];
  }
}
