"""Background jobs: commands that run on while the agent works (the job tool, tools/job.py).

A job is a shell command started in the project root in a process group of its own, as ``bash``
starts one (tools/bash.py ``spawn``). A task of its own reads its output into a buffer that keeps
the head and the tail of what came since the last read, so a chatty server never blocks on a
full pipe and memory stays bounded; another waits for the shell to exit and says so (a ``job``
event). Jobs live as processes.py keeps them: by session, outliving the step and the turn that
started them, killed when their session's turn is aborted (unless ``jobs_survive_abort``) and
when the runtime closes. Killing a job kills its whole group, also what it left running after its
shell exited, so no process is left behind; in the sandbox what it started ends with its shell,
even a child that left the group (sandbox/bwrap.py ``sandbox_argv``).

The tasks are asyncio tasks, not an anyio task group: a job outlives the turn's cancel scope,
and the language server opens and closes a runtime from different tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from totem_engine.api import events as ev
from totem_engine.command_changes import CommandChanges
from totem_engine.command_env import command_environ
from totem_engine.processes import (
    Ending,
    ProcessNotFound,
    ProcessRefused,
    SessionProcess,
    SessionProcesses,
)
from totem_engine.sandbox.forward import LoopbackForward
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


class JobNotFound(ProcessNotFound):
    """No job of that id in the session."""


class JobRefused(ProcessRefused):
    """A job that may not start: too many run in the session, or the project is closing."""


@dataclass
class Job(SessionProcess):
    limit: int  # characters of unread output kept (its head and tail)
    state: ev.JobState = "running"
    unread: HeadTail = field(init=False)
    read_all: anyio.Event = field(default_factory=anyio.Event)  # the pipe is at its end
    ended: anyio.Event = field(default_factory=anyio.Event)  # the shell exited and it was said
    tasks: list[asyncio.Task] = field(default_factory=list)
    # Its ports forwarded to the host's 127.0.0.1 (sandbox/forward.py), as the user chose; None: not.
    forward: LoopbackForward | None = None
    forwarding: asyncio.Task | None = None

    def __post_init__(self) -> None:
        self.unread = HeadTail(self.limit)

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def exit_code(self) -> int | None:
        return self.process.returncode

    def take_output(self) -> str:
        """What it printed since the last read (head and tail when it was more than ``limit``)."""
        text, self.unread = self.unread.text(), HeadTail(self.limit)
        return text

    @property
    def offline(self) -> bool:
        """It runs in the sandbox with no network (command_changes.py ``CommandScope.offline``)."""
        return self.scope is not None and self.scope.offline

    def event(self) -> ev.Job:
        return ev.Job(
            session_id=self.session_id, job_id=self.id, command=self.command, state=self.state, exit_code=self.exit_code,
            offline=self.offline, forwarded=list(self.forward.forwarded) if self.forward else [],
            forward_taken=list(self.forward.taken) if self.forward else [],
        )

    async def unforward(self) -> None:
        """Its forward ended: the host's listeners closed, every relay killed."""
        if self.forwarding is not None:
            self.forwarding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.forwarding
            self.forwarding = None


class Jobs(SessionProcesses[Job]):
    """The jobs of every session of one runtime, by session. Each session's ``job`` events go to
    the front end of its latest job call (``listen``): a job can end after its turn."""

    noun = prefix = "job"
    NotFound = JobNotFound
    Refused = JobRefused

    def __init__(self, root: Path, commands: CommandChanges | None = None):
        super().__init__(root, commands)
        self._emit: dict[str, Emit] = {}

    def listen(self, session_id: str, emit: Emit) -> None:
        self._emit[session_id] = emit

    async def start(
        self, session_id: str, command: str, *, limit: int, emit: Emit, may_change: bool = True, escape: bool = False,
        unasked: bool = False, env_pass: tuple[str, ...] = (), forward: bool = False,
    ) -> Job:
        """``command`` started as a job of the session (``may_change``: not a read-only command;
        ``escape``: outside the sandbox, as the user allowed; ``unasked``: the user did not allow
        it, so it sees no secret file and no credential variable but those of ``env_pass``;
        ``forward``: the ports it listens on in a sandbox without network are forwarded to the
        host's 127.0.0.1, as the user chose, sandbox/forward.py)."""
        self._admit(session_id, MAX_RUNNING, "are running already")
        self.listen(session_id, emit)
        scope = await self._scope(session_id, command, may_change=may_change, escape=escape, unasked=unasked)
        env = command_environ(unasked=unasked, passed=env_pass)
        process = await spawn(command, self.root, scope.argv if scope else as_is, env)
        job = self._add(
            Job(id=self._next_id(session_id), session_id=session_id, command=command, process=process, limit=limit, scope=scope)
        )
        assert process.stdout is not None
        job.tasks = [
            asyncio.ensure_future(read_into(process.stdout, lambda text: job.unread.add(text), job.read_all)),
            asyncio.ensure_future(self._watch(job)),
        ]
        holder = scope.namespace_pid if forward and scope is not None else None
        if holder is not None:
            job.forward = LoopbackForward(holder, lambda: self._say(job))
            job.forwarding = asyncio.ensure_future(job.forward.run())
        await self._say(job)
        return job

    async def wait(self, job: Job, timeout: float) -> bool:
        """Whether the job ended within ``timeout`` seconds."""
        with anyio.move_on_after(timeout):
            await job.ended.wait()
        return job.ended.is_set()

    async def _end(self, job: Job, ending: Ending) -> None:
        with anyio.CancelScope(shield=True):  # an abort landing here must not leave the group alive
            if job.state == "running":
                job.state = ending
            await kill_group(job.process)  # also what an exited job left running in its group
            await job.unforward()
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
        await job.unforward()
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
