// What a tool card says of its call: the command a `bash` call ran, and how the call ended, with a
// command that exited non-zero, timed out or was killed counted as a failure (the engine ends such
// a call "ok": it ran; its summary and output say how it ended). No `vscode` here.

/** The tools whose command is shown on their card, under the model's description. */
const RUNS_COMMAND = new Set(["bash"]);

/** The command a call runs, when its card shows one (`input.command` of a `bash` call). */
export function callCommand(tool: string, input: unknown): string | undefined {
  const command = (input as { command?: unknown } | null | undefined)?.command;
  return RUNS_COMMAND.has(tool) && typeof command === "string" ? command : undefined;
}

/** How a call ended, for its card: `failed` draws it as a failure; `text` is its result line. */
export interface CallOutcome { failed: boolean; text: string }

/** The engine's words for a command's end: `exit N` and `timed out after N s` (tools/bash.py). */
const EXIT = /^exit (-?\d+)$/;

export function callOutcome(tool: string, status: string | undefined, summary: string | undefined, output?: string): CallOutcome | undefined {
  if (!status) return undefined;
  // A summary that only repeats the status ("interrupted: interrupted") says it once.
  const said = summary && summary !== status ? summary : "";
  if (RUNS_COMMAND.has(tool) && /^timed out/.test(said)) return { failed: true, text: `failed: ${said}` };
  if (status !== "ok") return { failed: true, text: said ? `${status}: ${said}` : status };
  if (!RUNS_COMMAND.has(tool)) return { failed: false, text: said ? `ok: ${said}` : "ok" };
  const exit = EXIT.exec(said);
  const code = exit ? Number(exit[1]) : exitInOutput(output);
  if (code !== undefined && code < 0) return { failed: true, text: `failed: killed (signal ${-code})` };
  if (code) return { failed: true, text: `failed: exit ${code}` };
  return { failed: false, text: said ? `ok: ${said}` : "ok" };
}

/** The `[exit code N]` line a command's output ends with when it exited non-zero. */
function exitInOutput(output: string | undefined): number | undefined {
  const found = /^\[exit code (-?\d+)\]$/m.exec(output ?? "");
  return found ? Number(found[1]) : undefined;
}
