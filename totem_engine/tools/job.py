"""job: commands that run in the background (a dev server, a watcher), started, read and stopped.

The jobs themselves live in the runtime's registry (jobs.py), by session. ``start`` is asked
like ``bash`` (the same rules, matched against each simple command, and ``outside_sandbox`` as
``sandbox-escape``: bash.py ``asked_as``); reading, waiting for, stopping and listing the
session's own jobs are permission ``job``, allowed by default.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from totem_engine.jobs import Job, JobNotFound, JobRefused, Jobs
from totem_engine.tools.base import Action, Bounded, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.tools.bash import (
    MAX_OUTPUT,
    MAX_TIMEOUT,
    OUTSIDE,
    OUTSIDE_SANDBOX,
    asked_as,
)
from totem_engine.vocab.accounts import short
from totem_engine.vocab.tools import ToolError

DEFAULT_WAIT = 30  # seconds

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
class JobCall(Action):
    jobs: Jobs | None = None
    action: JobAction = "list"
    command: str = ""
    job_id: str = ""
    timeout: int = DEFAULT_WAIT
    escape: bool = False  # start: outside the sandbox, as the user allowed

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.jobs is not None
        self.jobs.listen(ctx.session_id, ctx.publish)  # its end goes to the latest turn's front end
        try:
            return await self._run(self.jobs, ctx)
        except (JobNotFound, JobRefused) as exc:
            raise ToolError(str(exc)) from None

    async def _run(self, jobs: Jobs, ctx: ToolContext) -> ToolResult:
        if self.action == "start":
            job = await jobs.start(
                ctx.session_id, self.command, limit=min(ctx.output_budget, MAX_OUTPUT), emit=ctx.publish, may_change=self.changes,
                escape=self.escape,
            )
            return self._result(
                f"Started {job.id}: `{job.command}` (process group {job.process.pid}). It keeps running after this"
                f' call; read what it prints with job(action="output", id="{job.id}"), stop it with'
                f' job(action="stop", id="{job.id}").',
                f"started {job.id}", job,
            )
        if self.action == "list":
            listed = jobs.of(ctx.session_id)
            lines = [_line(job) for job in listed] or ["No jobs in this session."]
            return self._result("\n".join(lines), f"{len(listed)} jobs", None)
        job = jobs.get(ctx.session_id, self.job_id)
        if self.action == "wait":
            await jobs.wait(job, self.timeout)
        elif self.action == "stop":
            await jobs.stop(ctx.session_id, job.id)
        ctx.taken.extend(await jobs.take_in(job))  # what it changed so far joins this turn
        output = job.take_output().rstrip("\n") or "(no new output)"
        still = job.state == "running" and self.action == "wait"
        status = f"[{_state(job)}" + (f"; still running after {self.timeout} s" if still else "") + "]"
        return self._result(f"{output}\n{status}", _state(job), job)

    def _result(self, text: str, summary: str, job: Job | None) -> ToolResult:
        notes = "".join(f"\n[{note}]" for note in self.notes)
        metadata = {"job": job.id, "state": job.state, "exit_code": job.exit_code} if job else {}
        return ToolResult(output=text + notes, summary=summary, metadata=metadata)


def _state(job: Job) -> str:
    """"job1 running", "job1 exited with code 0", "job1 stopped (code -15)"."""
    if job.state == "running":
        return f"{job.id} running"
    if job.state == "exited":
        return f"{job.id} exited with code {job.exit_code}"
    return f"{job.id} {job.state} (code {job.exit_code})"


def _line(job: Job) -> str:
    return f"{_state(job)}, started {round(time.monotonic() - job.started_at)} s ago: {short(job.command, 100)}"


class JobTool(Tool):
    name = "job"
    Input = JobInput

    def __init__(self, jobs: Jobs):
        self.jobs = jobs

    async def prepare(self, args: JobInput, ctx: ToolContext) -> Action:
        if args.action == "start":
            if not args.command or not args.command.strip():
                raise ToolError('start needs a command: job(action="start", command="npm run dev").')
            permission, escape = await asked_as(ctx, args.command, args.outside_sandbox)
            return JobCall(
                title=f"job: $ {args.command}{OUTSIDE if escape else ''}", **permission, notes=list(args.notes),
                runs_commands=True, jobs=self.jobs, action="start", command=args.command, escape=escape,
            )
        if args.action != "list" and not args.id:
            raise ToolError(f'{args.action} needs the id of a job (start gave it; job(action="list") shows them).')
        return JobCall(
            title=f"job {args.action} {args.id or ''}".rstrip(), permission="job", patterns=[args.action],
            always_pattern=args.action, notes=list(args.notes), jobs=self.jobs, action=args.action,
            job_id=args.id or "", timeout=args.timeout or DEFAULT_WAIT, runs_commands=args.action != "list",
        )
