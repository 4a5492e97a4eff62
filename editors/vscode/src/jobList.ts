// The background jobs the chat view lists (the `job` tool's; docs/events.md `job`): running
// ones with a Stop button (`totem/jobStop`), ended ones with how they ended until the next turn
// or until the user dismisses them. No `vscode` here.
//
// The list is the window's, not one session's: a job outlives its turn, and a chat the user
// left (New Chat, another session) may still have one running that only this list can stop.

import type { JobState, JobStatus, TotemEvent } from "./protocol";

export interface Job {
  sessionId: string;
  jobId: string;
  command: string;
  state: JobState;
  exitCode: number | null;
  /** It runs in the sandbox with no network: a server it starts answers the session's commands,
   * not the user's browser (the `job` event's `offline`). */
  offline?: boolean;
  /** Its ports forwarded to this machine's 127.0.0.1, as the user chose (the `job` event's
   * `forwarded`), and those the machine had taken (`forwardTaken`). */
  forwarded?: number[];
  forwardTaken?: number[];
  /** A `totem/jobStop` was sent and has not answered yet (its button is disabled). */
  stopping?: boolean;
}

export class JobList {
  jobs: Job[] = [];

  /** A `job` event, of any session; returns whether the list changed. */
  apply(event: Extract<TotemEvent, { kind: "job" }>): boolean {
    const job = this.find(event.sessionId, event.jobId);
    if (!job) {
      this.jobs.push({
        sessionId: event.sessionId, jobId: event.jobId, command: event.command, state: event.state, exitCode: event.exitCode,
        offline: event.offline === true, forwarded: event.forwarded ?? [], forwardTaken: event.forwardTaken ?? [],
      });
      return true;
    }
    Object.assign(job, {
      command: event.command, state: event.state, exitCode: event.exitCode,
      forwarded: event.forwarded ?? [], forwardTaken: event.forwardTaken ?? [],
    });
    if (event.state !== "running") job.stopping = false;
    return true;
  }

  /** The answer of `totem/jobStop`: the job as it ended (its `job` event says the same). */
  stopped(sessionId: string, result: JobStatus): void {
    const job = this.find(sessionId, result.jobId);
    if (job) Object.assign(job, { state: result.state, exitCode: result.exitCode, stopping: false });
  }

  /** Marks a stop as sent (true) or failed (false); returns the job when it is listed. */
  setStopping(sessionId: string, jobId: string, stopping: boolean): Job | undefined {
    const job = this.find(sessionId, jobId);
    if (job) job.stopping = stopping && job.state === "running";
    return job;
  }

  /** Removes an ended job from the list; a running one stays (stop it first). */
  dismiss(sessionId: string, jobId: string): boolean {
    const before = this.jobs.length;
    this.jobs = this.jobs.filter((j) => !(j.sessionId === sessionId && j.jobId === jobId && j.state !== "running"));
    return this.jobs.length !== before;
  }

  /** The server stopped (restart, crash): it kills every job on its way out, and their last
   * events may not have come. */
  serverStopped(): boolean {
    const running = this.running();
    for (const job of running) Object.assign(job, { state: "killed", stopping: false });
    return running.length > 0;
  }

  /** A new turn: the ended jobs have been seen, only the running ones stay. */
  dropEnded(): void {
    this.jobs = this.jobs.filter((j) => j.state === "running");
  }

  running(): Job[] {
    return this.jobs.filter((j) => j.state === "running");
  }

  find(sessionId: string, jobId: string): Job | undefined {
    return this.jobs.find((j) => j.sessionId === sessionId && j.jobId === jobId);
  }
}

export const NO_NETWORK = "no network (sandbox)";

/** "ports forwarded to 127.0.0.1: 8000" and the ports taken on this machine; "" without a forward. */
export function forwardNote(job: Job): string {
  const said = [];
  if (job.forwarded?.length) said.push(`ports forwarded to 127.0.0.1: ${job.forwarded.join(", ")}`);
  if (job.forwardTaken?.length) said.push(`taken on this machine, not forwarded: ${job.forwardTaken.join(", ")}`);
  return said.join(" · ");
}

/** "job1 `sleep 30` · running", "job1 `sleep 30` · stopped · exit code -15", "… · no network (sandbox)". */
export function jobLine(job: Job): string {
  const end = job.exitCode === null ? "" : ` · exit code ${job.exitCode}`;
  const forward = forwardNote(job);
  return `${job.jobId} \`${job.command}\` · ${job.stopping ? "stopping…" : job.state}${end}${job.offline ? ` · ${NO_NETWORK}` : ""}${forward ? ` · ${forward}` : ""}`;
}
