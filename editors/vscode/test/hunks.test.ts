// Reviewing a proposal hunk by hunk: the hunks, leaving one, and what a reviewed text took.

import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { applyHunks, describeOutcome, hunks, proposalOffsets, reviewOutcome, splitLines } from "../src/hunks";

const ORIGINAL = "a\nb\nc\nd\ne\nf\ng\n";
const PROPOSED = "a\nB\nc\nd\ne\nf\nG\nh\n";

describe("hunks", () => {
  it("splits lines with their endings", () => {
    assert.deepEqual(splitLines("a\nb"), ["a\n", "b"]);
    assert.deepEqual(splitLines("a\n\n"), ["a\n", "\n"]);
    assert.deepEqual(splitLines(""), []);
  });

  it("finds each run of changed lines, in order", () => {
    assert.deepEqual(hunks(ORIGINAL, PROPOSED), [
      { originalStart: 1, originalLines: ["b\n"], proposalStart: 1, proposalLines: ["B\n"] },
      { originalStart: 6, originalLines: ["g\n"], proposalStart: 6, proposalLines: ["G\n", "h\n"] },
    ]);
    // An insertion and a deletion have no lines on one side.
    assert.deepEqual(hunks("a\nc\n", "a\nb\nc\n"), [{ originalStart: 1, originalLines: [], proposalStart: 1, proposalLines: ["b\n"] }]);
    assert.deepEqual(hunks("a\nb\n", "a\n"), [{ originalStart: 1, originalLines: ["b\n"], proposalStart: 1, proposalLines: [] }]);
    assert.deepEqual(hunks(ORIGINAL, ORIGINAL), []);
  });

  it("applies the hunks taken, and finds a hunk's place in the proposal", () => {
    assert.equal(applyHunks(ORIGINAL, PROPOSED, (i) => i === 0), "a\nB\nc\nd\ne\nf\ng\n");
    assert.equal(applyHunks(ORIGINAL, PROPOSED, (i) => i === 1), "a\nb\nc\nd\ne\nf\nG\nh\n");
    assert.equal(applyHunks(ORIGINAL, PROPOSED, () => true), PROPOSED);
    const second = hunks(ORIGINAL, PROPOSED)[1];
    const { start, end } = proposalOffsets(PROPOSED, second);
    assert.equal(PROPOSED.slice(start, end), "G\nh\n");
    // Leaving it: its place in the proposal gets the original lines back.
    assert.equal(PROPOSED.slice(0, start) + second.originalLines.join("") + PROPOSED.slice(end), "a\nB\nc\nd\ne\nf\ng\n");
  });

  it("says what a reviewed text took of the proposal", () => {
    assert.deepEqual(reviewOutcome(ORIGINAL, PROPOSED, PROPOSED), { kind: "proposed" });
    assert.deepEqual(reviewOutcome(ORIGINAL, PROPOSED, ORIGINAL), { kind: "unchanged" });
    assert.deepEqual(reviewOutcome(ORIGINAL, PROPOSED, "a\nB\nc\nd\ne\nf\ng\n"), { kind: "hunks", taken: 1, total: 2 });
    assert.deepEqual(reviewOutcome(ORIGINAL, PROPOSED, "a\nBee\nc\nd\ne\nf\ng\n"), { kind: "edited" });
    assert.equal(describeOutcome("app.py", { kind: "hunks", taken: 1, total: 2 }), "took 1 of 2 hunks of app.py");
    assert.equal(describeOutcome("app.py", { kind: "edited" }), "edited the change to app.py before accepting it");
  });
});
