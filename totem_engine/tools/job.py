"""job: commands that run in the background (a dev server, a watcher), started, read and stopped.

The jobs themselves live in the runtime's registry (jobs.py), by session. ``start`` is asked
like ``bash``; reading, waiting for, stopping and listing the session's own jobs are permission
``job``, allowed by default (processes.py, shared with the terminal tool). When a job would run in
the sandbox without network, its question offers one more answer (``FORWARD``): allow it and
forward the ports it listens on to this machine's 127.0.0.1 (sandbox/forward.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from totem_engine.jobs import Job, Jobs
from totem_engine.tools.base import Action, Bounded, PermissionChoice, ToolContext, ToolInput, ToolResult
from totem_engine.tools.bash import MAX_OUTPUT, MAX_TIMEOUT, OUTSIDE_SANDBOX, sandboxed
from totem_engine.tools.processes import ProcessCall, ProcessTool, listing

DEFAULT_WAIT = 30  # seconds
# What a job with no network means for a server it runs (sandbox/session.py: one namespace a session).
OFFLINE = (
    "a server it starts answers this session's later commands on 127.0.0.1, but not the user's browser nor"
    " anything else outside the sandbox, and it reaches nothing outside. Tell the user so; to reach it from"
    " outside, the job must run with outside_sandbox: true (the user is asked) or the config must allow the"
    " sandbox's network (sandbox_network)"
)

# The answer a sandboxed job's start question offers beside the four: the job still has no network.
FORWARD = PermissionChoice(
    "forward_ports",
    "Allow, and forward its ports to this machine's loopback (127.0.0.1 only; the job still has no outside network)",
)

JobAction = Literal["start", "output", "wait", "stop", "list"]


class JobInput(ToolInput):
    action: JobAction = Field(description="start, output, wait, stop or list.")
    command: str | None = Field(None, description="start: the shell command to run in the project root.")
    id: str | None = Field(None, description="output, wait, stop: the job's id, as start gave it (job1).")
    timeout: Annotated[int | None, Bounded(default=DEFAULT_WAIT, maximum=MAX_TIMEOUT)] = Field(
        None, description=f"wait: seconds to wait for the job to end (default {DEFAULT_WAIT}, at most {MAX_TIMEOUT})."
    )
    outside_sandbox: bool | None = Field(None, description=f"start, {OUTSIDE_SANDBOX}")


@dataclass
class JobCall(ProcessCall):
    jobs: Jobs | None = None
    timeout: int = DEFAULT_WAIT  # wait: seconds

    async def _run(self, ctx: ToolContext) -> ToolResult:
        assert self.jobs is not None
        jobs = self.jobs
        jobs.listen(ctx.session_id, ctx.publish)  # its end goes to the latest turn's front end
        if self.action == "start":
            job = await jobs.start(
                ctx.session_id, self.command, limit=min(ctx.output_budget, MAX_OUTPUT), emit=ctx.publish, may_change=self.changes,
                escape=self.escape, unasked=self.unasked, env_pass=ctx.command_env_pass, forward=self.chosen == FORWARD.id,
            )
            if job.forward is not None:
                where = (
                    ", in the sandbox with no network; the user chose to forward the ports it listens on to their"
                    " machine's 127.0.0.1 (the same port numbers), so their browser reaches its server there"
                    f' (job(action="output", id="{job.id}") says which ports are forwarded)'
                )
            else:
                where = f", in the sandbox with no network: {OFFLINE}" if job.offline else ""
            return self._job_result(
                f"Started {job.id}: `{job.command}` (process group {job.process.pid}){where}. It keeps running after"
                f' this call; read what it prints with job(action="output", id="{job.id}"), stop it with'
                f' job(action="stop", id="{job.id}").',
                f"started {job.id}" + (" (no network, ports forwarded)" if job.forward else " (no network)" if job.offline else ""), job,
            )
        if self.action == "list":
            listed = jobs.of(ctx.session_id)
            return self._job_result(listing(listed, _state) or "No jobs in this session.", f"{len(listed)} jobs", None)
        job = jobs.get(ctx.session_id, self.process_id)
        if self.action == "wait":
            await jobs.wait(job, self.timeout)
        elif self.action == "stop":
            await jobs.stop(ctx.session_id, job.id)
        ctx.taken.extend(await jobs.take_in(job))  # what it changed so far joins this turn
        output = job.take_output().rstrip("\n") or "(no new output)"
        still = job.state == "running" and self.action == "wait"
        status = f"[{_state(job)}" + (f"; still running after {self.timeout} s" if still else "") + "]"
        return self._job_result(f"{output}\n{status}", _state(job), job)

    def _job_result(self, text: str, summary: str, job: Job | None) -> ToolResult:
        return self._result(text, summary, {"job": job.id, "state": job.state, "exit_code": job.exit_code} if job else {})


def _state(job: Job) -> str:
    """"job1 running", "job1 exited with code 0", "job1 stopped (code -15)"."""
    if job.state == "running":
        return f"{job.id} running" + (" with no network (sandbox)" if job.offline else "") + _forwarded(job)
    if job.state == "exited":
        return f"{job.id} exited with code {job.exit_code}"
    return f"{job.id} {job.state} (code {job.exit_code})"


def _forwarded(job: Job) -> str:
    """"; ports forwarded to 127.0.0.1: 8000" and the ports the host had taken, while it runs."""
    if job.forward is None:
        return ""
    said = ""
    if job.forward.forwarded:
        said += "; ports forwarded to 127.0.0.1: " + ", ".join(map(str, job.forward.forwarded))
    if job.forward.taken:
        said += "; not forwarded, taken on this machine: " + ", ".join(map(str, job.forward.taken))
    return said or "; its ports are forwarded to 127.0.0.1 as it opens them (none yet)"


class JobTool(ProcessTool):
    name = "job"
    Input = JobInput
    example = "npm run dev"

    def __init__(self, jobs: Jobs):
        self.jobs = jobs

    async def prepare(self, args: JobInput, ctx: ToolContext) -> Action:
        """``start`` as processes.py asks it, with ``FORWARD`` offered when it would run in the
        sandbox without network."""
        action = await super().prepare(args, ctx)
        if isinstance(action, JobCall) and action.action == "start" and not action.escape and await _offline(ctx):
            action.choices = (FORWARD,)
        return action

    def _call(self, args: JobInput, **fields: Any) -> JobCall:
        return JobCall(**fields, jobs=self.jobs, timeout=args.timeout or DEFAULT_WAIT)


async def _offline(ctx: ToolContext) -> bool:
    """Whether the session's commands run in the sandbox without network."""
    return ctx.commands is not None and not ctx.commands.sandbox.network and await sandboxed(ctx) is True
