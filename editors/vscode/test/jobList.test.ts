// The job list's rules: which jobs it shows, how long an ended one stays, what the view draws.

import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { ChatState } from "../src/chatState";
import { jobLine } from "../src/jobList";
import type { JobState, TotemEvent } from "../src/protocol";
import { viewModel } from "../src/render";

const job = (sessionId: string, jobId: string, state: JobState, exitCode: number | null = null, command = "sleep 30"): TotemEvent => ({
  sessionId,
  kind: "job",
  jobId,
  command,
  state,
  exitCode,
});

function chatWithSession(sessionId = "ses_1"): ChatState {
  const s = new ChatState();
  s.beginTurn("start it");
  s.apply({ sessionId, kind: "turnStart", turnId: "trn_1", model: "m/a" });
  return s;
}

describe("JobList", () => {
  it("says when a job runs in the sandbox with no network, in its row and its line", () => {
    const s = chatWithSession();
    s.apply({ ...(job("ses_1", "job1", "running", null, "python3 -m http.server") as object), offline: true } as TotemEvent);
    s.apply(job("ses_1", "job2", "running"));
    assert.equal(jobLine(s.jobs.jobs[0]), "job1 `python3 -m http.server` · running · no network (sandbox)");
    assert.equal(jobLine(s.jobs.jobs[1]), "job2 `sleep 30` · running");
    const rows = viewModel(s, "idle").jobs;
    assert.match(rows, /data-job="job1"[^]*<span class="job-network"[^>]*>no network \(sandbox\)<\/span>/);
    assert.equal(rows.split("job-network").length, 2);
  });

  it("says which ports of a job are forwarded to this machine's loopback, as its events come", () => {
    const s = chatWithSession();
    const served = { ...(job("ses_1", "job1", "running", null, "python3 -m http.server 8000") as object), offline: true };
    s.apply(served as TotemEvent);
    s.apply({ ...served, forwarded: [8000], forwardTaken: [9000] } as TotemEvent);
    assert.equal(
      jobLine(s.jobs.jobs[0]),
      "job1 `python3 -m http.server 8000` · running · no network (sandbox) · ports forwarded to 127.0.0.1: 8000 · taken on this machine, not forwarded: 9000",
    );
    assert.match(viewModel(s, "idle").jobs, /<span class="job-network">ports forwarded to 127\.0\.0\.1: 8000 · taken/);
  });

  it("follows a job from running to its end, and draws Stop then Dismiss", () => {
    const s = chatWithSession();
    assert.equal(s.apply(job("ses_1", "job1", "running")), true);
    assert.deepEqual(s.jobs.running().map((j) => j.jobId), ["job1"]);
    let html = viewModel(s, "idle").jobs;
    assert.match(html, /Jobs \(1 running\)/);
    assert.match(html, /<li class="job running" data-session="ses_1" data-job="job1"/);
    assert.match(html, /<code class="job-command">sleep 30<\/code><span class="job-state">running<\/span><button class="job-stop secondary" data-session="ses_1" data-job="job1" title="[^"]*">Stop<\/button>/);
    assert.doesNotMatch(html, /job-exit|another chat/);

    s.apply(job("ses_1", "job1", "stopped", -15));
    assert.deepEqual(s.jobs.running(), []);
    html = viewModel(s, "idle").jobs;
    assert.match(html, /<div class="jobs-title">Jobs<\/div>/);
    assert.match(html, /<span class="job-state">stopped<\/span><span class="job-exit">exit code -15<\/span><button class="job-dismiss secondary"/);
    assert.doesNotMatch(html, /job-stop/);
    assert.equal(jobLine(s.jobs.jobs[0]), "job1 `sleep 30` · stopped · exit code -15");
  });

  it("keeps an ended job until the next turn, a running one across turns and New Chat", () => {
    const s = chatWithSession();
    s.apply(job("ses_1", "job1", "running"));
    s.apply(job("ses_1", "job2", "running", null, "npm run dev"));
    s.apply(job("ses_1", "job1", "exited", 0));
    s.apply({ sessionId: "ses_1", kind: "turnEnd", turnId: "trn_1", stopReason: "finished", text: "", model: "m/a" });
    assert.deepEqual(s.jobs.jobs.map((j) => [j.jobId, j.state]), [["job1", "exited"], ["job2", "running"]]);
    s.beginTurn("again");
    assert.deepEqual(s.jobs.jobs.map((j) => j.jobId), ["job2"]);
    // A new chat still lists the old session's running job (only this list can stop it), marked.
    s.reset();
    assert.deepEqual(s.jobs.jobs.map((j) => j.jobId), ["job2"]);
    assert.match(viewModel(s, "idle").jobs, /npm run dev<\/code><span class="job-state">running<\/span><span class="job-session">another chat<\/span><button class="job-stop/);
  });

  it("lists a job of another session or of a sub-agent, keyed by session and id", () => {
    const s = chatWithSession();
    s.apply(job("ses_1", "job1", "running"));
    s.apply(job("ses_2", "job1", "running", null, "python3 -m http.server"));
    s.apply({ ...job("ses_1", "job2", "running", null, "make watch"), parentCallId: "call_1", agent: "explore" } as TotemEvent);
    assert.deepEqual(s.jobs.jobs.map((j) => `${j.sessionId}/${j.jobId}`), ["ses_1/job1", "ses_2/job1", "ses_1/job2"]);
    s.apply(job("ses_2", "job1", "killed", -9, "python3 -m http.server"));
    assert.deepEqual(s.jobs.jobs.map((j) => j.state), ["running", "killed", "running"]);
    // Not a conversation entry.
    assert.deepEqual(s.entries.map((e) => e.type), ["user"]);
  });

  it("disables Stop while the stop is under way; dismisses only an ended job", () => {
    const s = chatWithSession();
    s.apply(job("ses_1", "job1", "running"));
    assert.equal(s.jobs.setStopping("ses_1", "job1", true)?.stopping, true);
    assert.match(viewModel(s, "idle").jobs, /<span class="job-state">stopping…<\/span><button class="job-stop secondary" data-session="ses_1" data-job="job1" disabled/);
    assert.equal(s.jobs.dismiss("ses_1", "job1"), false);
    s.jobs.stopped("ses_1", { jobId: "job1", state: "stopped", exitCode: -15 });
    assert.equal(s.jobs.jobs[0].stopping, false);
    assert.equal(s.jobs.jobs[0].state, "stopped");
    // A failed stop gives the button back.
    s.apply(job("ses_1", "job2", "running"));
    s.jobs.setStopping("ses_1", "job2", true);
    s.jobs.setStopping("ses_1", "job2", false);
    assert.match(viewModel(s, "idle").jobs, /data-job="job2" title="Stop job2[^"]*">Stop<\/button>/);
    assert.equal(s.jobs.dismiss("ses_1", "job1"), true);
    assert.deepEqual(s.jobs.jobs.map((j) => j.jobId), ["job2"]);
    assert.equal(s.jobs.setStopping("ses_1", "job9", true), undefined);
  });

  it("takes the running jobs for killed when the server stops", () => {
    const s = chatWithSession();
    s.apply(job("ses_1", "job1", "running"));
    s.apply(job("ses_1", "job2", "exited", 0));
    s.jobs.setStopping("ses_1", "job1", true);
    assert.equal(s.jobs.serverStopped(), true);
    assert.deepEqual(s.jobs.jobs.map((j) => [j.state, j.exitCode, !!j.stopping]), [["killed", null, false], ["exited", 0, false]]);
    assert.equal(s.jobs.serverStopped(), false);
  });

  it("escapes the command and draws nothing without jobs", () => {
    const s = chatWithSession();
    assert.equal(viewModel(s, "idle").jobs, "");
    s.apply(job("ses_1", "job1", "running", null, `echo "<b>hi</b>" > out.txt`));
    const html = viewModel(s, "idle").jobs;
    assert.match(html, /<code class="job-command">echo &quot;&lt;b&gt;hi&lt;\/b&gt;&quot; &gt; out\.txt<\/code>/);
    assert.doesNotMatch(html, /<b>hi/);
  });
});
