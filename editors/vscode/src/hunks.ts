// The hunks of a proposed change, for reviewing it hunk by hunk: which runs of lines differ
// between a file and Totem's proposal, putting a hunk back as it was, and what a reviewed text
// took of the proposal. Line diff by jsdiff (`diffLines`). No `vscode` here.

import { diffLines } from "diff";

/** One run of changed lines. Lines keep their line endings; indexes are 0-based. */
export interface Hunk {
  /** Where the run starts in the original, and the lines it replaces there (none: an insertion). */
  originalStart: number;
  originalLines: string[];
  /** Where it starts in the proposal, and the lines the proposal has instead (none: a deletion). */
  proposalStart: number;
  proposalLines: string[];
}

/** `text` as lines, each with its line ending ("a\nb" is ["a\n", "b"]). */
export function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** The hunks that turn `original` into `proposal`, in order. */
export function hunks(original: string, proposal: string): Hunk[] {
  const found: Hunk[] = [];
  let o = 0;
  let p = 0;
  let open: Hunk | undefined;
  for (const change of diffLines(original, proposal)) {
    const lines = splitLines(change.value);
    if (!change.added && !change.removed) {
      open = undefined;
      o += lines.length;
      p += lines.length;
      continue;
    }
    if (!open) {
      open = { originalStart: o, originalLines: [], proposalStart: p, proposalLines: [] };
      found.push(open);
    }
    if (change.removed) {
      open.originalLines.push(...lines);
      o += lines.length;
    } else {
      open.proposalLines.push(...lines);
      p += lines.length;
    }
  }
  return found;
}

/** `original` with the hunks of `proposal` that `take` marks (by index) applied. */
export function applyHunks(original: string, proposal: string, take: (index: number) => boolean): string {
  const lines = splitLines(original);
  const out: string[] = [];
  let o = 0;
  hunks(original, proposal).forEach((h, i) => {
    out.push(...lines.slice(o, h.originalStart));
    out.push(...(take(i) ? h.proposalLines : h.originalLines));
    o = h.originalStart + h.originalLines.length;
  });
  out.push(...lines.slice(o));
  return out.join("");
}

/** The character offsets in `proposal` of hunk `h`'s lines: what "leave this hunk" replaces
 * with `h.originalLines`. */
export function proposalOffsets(proposal: string, h: Hunk): { start: number; end: number } {
  const lines = splitLines(proposal);
  const start = lines.slice(0, h.proposalStart).join("").length;
  return { start, end: start + h.proposalLines.join("").length };
}

/** What a reviewed text did with a proposal: all of it, none, some of its hunks, or the user's
 * own edit. */
export type ReviewOutcome =
  | { kind: "proposed" }
  | { kind: "unchanged" }
  | { kind: "hunks"; taken: number; total: number }
  | { kind: "edited" };

/** At most this many hunks are matched against every subset of them; above, a text that is
 * neither all nor none of the proposal counts as edited. */
const MAX_SUBSET_HUNKS = 12;

export function reviewOutcome(original: string, proposed: string, accepted: string): ReviewOutcome {
  if (accepted === proposed) return { kind: "proposed" };
  if (accepted === original) return { kind: "unchanged" };
  const total = hunks(original, proposed).length;
  if (total <= MAX_SUBSET_HUNKS) {
    for (let mask = 1; mask < 2 ** total - 1; mask++) {
      if (applyHunks(original, proposed, (i) => (mask & (1 << i)) !== 0) === accepted) {
        let taken = 0;
        for (let i = 0; i < total; i++) if (mask & (1 << i)) taken++;
        return { kind: "hunks", taken, total };
      }
    }
  }
  return { kind: "edited" };
}

/** "took 1 of 2 hunks of app.py", for the chat. */
export function describeOutcome(path: string, outcome: ReviewOutcome): string {
  switch (outcome.kind) {
    case "proposed":
      return `took the whole change to ${path}`;
    case "unchanged":
      return `took none of the change to ${path}`;
    case "hunks":
      return `took ${outcome.taken} of ${outcome.total} hunks of ${path}`;
    case "edited":
      return `edited the change to ${path} before accepting it`;
  }
}
