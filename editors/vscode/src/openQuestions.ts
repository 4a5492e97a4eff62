// The permissions put to the user as a modal that wait for an answer. Dismissing the modal
// (Cancel, Escape) is no answer: the question stays open in its chat's panel, whose buttons
// answer it and whose "Show question" puts the modal up again. The protocol's answers are
// allow or reject only (docs/protocol.md, totem/permission), so a dismissal answers nothing.
// No `vscode` here.

import type { PermissionAnswer, PermissionOutcome, PermissionParams } from "./protocol";

interface Open { params: PermissionParams; resolve: (answer: PermissionAnswer) => void }

export class OpenQuestions {
  private readonly open = new Map<string, Open>();

  /** A question that waits until `answer` (or its turn's end) settles it. */
  ask(params: PermissionParams): Promise<PermissionAnswer> {
    return new Promise((resolve) => this.open.set(params.callId, { params, resolve }));
  }

  /** The open question of `callId`, if it is still open. */
  get(callId: string): PermissionParams | undefined {
    return this.open.get(callId)?.params;
  }

  /** Answer the question of `callId`; false when it is not open (answered, or never asked).
   * `choice`: with allow_once, the id of one of the request's `choices`. */
  answer(callId: string, outcome: PermissionOutcome, feedback?: string, choice?: string): boolean {
    const found = this.open.get(callId);
    if (!found) return false;
    this.open.delete(callId);
    found.resolve({ outcome, ...(feedback ? { feedback } : {}), ...(choice ? { choice } : {}) });
    return true;
  }

  /** The turn of `sessionId` ended (or the server went, `undefined`): its questions are moot.
   * The server no longer waits, so the reject is never read as the user's. */
  drop(sessionId?: string): void {
    for (const [callId, { params }] of this.open) {
      if (sessionId === undefined || params.sessionId === sessionId) this.answer(callId, "reject_once");
    }
  }
}
