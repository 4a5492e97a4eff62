"""Background jobs: commands that run on while the agent works (the job tool, tools/job.py).

A job is a shell command started in the project root in a process group of its own, as ``bash``
starts one (tools/bash.py ``spawn``). A task of its own reads its output into a buffer that keeps
the head and the tail of what came since the last read, so a chatty server never blocks on a
full pipe and memory stays bounded; another waits for the shell to exit and says so (a ``job``
event). Jobs outlive the step and the turn that started them, not the session: an aborted turn
kills its session's jobs (loop.py, unless ``jobs_survive_abort``) and ``Jobs.aclose``, when the
runtime closes, kills every job. Killing a job kills its whole group, also what it left running
after its shell exited, so no process is left behind.

The tasks are asyncio tasks, not an anyio task group: a job outlives the turn's cancel scope,
and the language server opens and closes a runtime from different tasks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import Process

from totem_engine.api import events as ev
from totem_engine.api.errors import EngineError
from totem_engine.command_changes import CommandChanges, CommandScope
from totem_engine.file_changes import FileChange
from totem_engine.tools.bash import (
    DRAIN_SECONDS,
    HeadTail,
    as_is,
    kill_group,
    read_into,
    spawn,
)

log = logging.getLogger(__name__)

MAX_RUNNING = 10  # jobs running at once in one session: a model looping on `start` stops here

Emit = Callable[[ev.Event], Awaitable[None]]


class JobNotFound(EngineError, LookupError):
    """No job of that id in the session."""

    kind = "not_found"


class JobRefused(RuntimeError):
    """A job that may not start: too many run in the session, or the project is closing."""


@dataclass
class Job:
    id: str
    session_id: str
    command: str
    process: Process
    limit: int  # characters of unread output kept (its head and tail)
    started_at: float = field(default_factory=time.monotonic)
    state: ev.JobState = "running"
    unread: HeadTail = field(init=False)
    read_all: anyio.Event = field(default_factory=anyio.Event)  # the pipe is at its end
    ended: anyio.Event = field(default_factory=anyio.Event)  # the shell exited and it was said
    tasks: list[asyncio.Task] = field(default_factory=list)
    scope: CommandScope | None = None  # where it runs, and what it changed (command_changes.py)

    def __post_init__(self) -> None:
        self.unread = HeadTail(self.limit)

    @property
    def exit_code(self) -> int | None:
        return self.process.returncode

    def take_output(self) -> str:
        """What it printed since the last read (head and tail when it was more than ``limit``)."""
        text, self.unread = self.unread.text(), HeadTail(self.limit)
        return text

    def event(self) -> ev.Job:
        return ev.Job(session_id=self.session_id, job_id=self.id, command=self.command, state=self.state, exit_code=self.exit_code)


class Jobs:
    """The jobs of every session of one runtime, by session. Each session's ``job`` events go to
    the front end of its latest job call (``listen``): a job can end after its turn."""

    def __init__(self, root: Path, commands: CommandChanges | None = None):
        self.root = root
        self.commands = commands  # None: jobs run as they are and nothing they change is kept
        self._jobs: dict[str, dict[str, Job]] = {}
        self._emit: dict[str, Emit] = {}
        self._closed = False

    def listen(self, session_id: str, emit: Emit) -> None:
        self._emit[session_id] = emit

    async def start(
        self, session_id: str, command: str, *, limit: int, emit: Emit, may_change: bool = True, escape: bool = False,
    ) -> Job:
        """``command`` started as a job of the session (``may_change``: not a read-only command;
        ``escape``: outside the sandbox, as the user allowed)."""
        if self._closed:
            raise JobRefused("The project is closing: no job can start.")
        jobs = self._jobs.setdefault(session_id, {})
        if sum(job.state == "running" for job in jobs.values()) >= MAX_RUNNING:
            raise JobRefused(f"{MAX_RUNNING} jobs are running already: stop one first (job list shows them).")
        self.listen(session_id, emit)
        scope = None
        if self.commands is not None:
            scope = await self.commands.scope(session_id, command=command, may_change=may_change, long_lived=True, escape=escape)
        process = await spawn(command, self.root, scope.argv if scope else as_is)
        job = Job(id=f"job{len(jobs) + 1}", session_id=session_id, command=command, process=process, limit=limit, scope=scope)
        jobs[job.id] = job
        assert process.stdout is not None
        job.tasks = [
            asyncio.ensure_future(read_into(process.stdout, lambda text: job.unread.add(text), job.read_all)),
            asyncio.ensure_future(self._watch(job)),
        ]
        await self._say(job)
        return job

    def of(self, session_id: str) -> list[Job]:
        return list(self._jobs.get(session_id, {}).values())

    def get(self, session_id: str, job_id: str) -> Job:
        job = self._jobs.get(session_id, {}).get(job_id)
        if job is None:
            known = ", ".join(self._jobs.get(session_id, {})) or "none"
            raise JobNotFound(f"There is no job {job_id!r} in this session (its jobs: {known}).")
        return job

    async def wait(self, job: Job, timeout: float) -> bool:
        """Whether the job ended within ``timeout`` seconds."""
        with anyio.move_on_after(timeout):
            await job.ended.wait()
        return job.ended.is_set()

    async def take_in(self, job: Job) -> list[FileChange]:
        """What the job changed since it started or was last read (command_changes.py)."""
        if job.scope is None:
            return []
        with anyio.CancelScope(shield=True):
            return await job.scope.take_in()

    async def stop(self, session_id: str, job_id: str) -> Job:
        """Its group killed (SIGTERM, then SIGKILL after a grace period); ``stopped`` when it was running."""
        job = self.get(session_id, job_id)
        await self._end(job, "stopped")
        return job

    async def kill_session(self, session_id: str) -> None:
        """Every job of the session killed (an aborted turn), all at once: each may take the grace period."""
        async with anyio.create_task_group() as group:
            for job in self.of(session_id):
                group.start_soon(self._end, job, "killed")

    async def aclose(self) -> None:
        """Every job of every session killed; no job starts after it."""
        self._closed = True
        with anyio.CancelScope(shield=True):
            for session_id in list(self._jobs):
                await self.kill_session(session_id)

    async def _end(self, job: Job, state: ev.JobState) -> None:
        with anyio.CancelScope(shield=True):  # an abort landing here must not leave the group alive
            if job.state == "running":
                job.state = state
            await kill_group(job.process)  # also what an exited job left running in its group
            await job.ended.wait()
            for task in job.tasks:
                task.cancel()
            await job.process.aclose()

    async def _watch(self, job: Job) -> None:
        await job.process.wait()
        with anyio.move_on_after(DRAIN_SECONDS):  # what is still in the pipe; a child may hold it open
            await job.read_all.wait()
        if job.state == "running":
            job.state = "exited"
        await self._say(job)
        job.ended.set()

    async def _say(self, job: Job) -> None:
        emit = self._emit.get(job.session_id)
        if emit is None:
            return
        try:
            await emit(job.event())
        except Exception:  # a front end gone (the editor closed) must not keep the job from ending
            log.exception("could not send the job event of %s", job.id)
