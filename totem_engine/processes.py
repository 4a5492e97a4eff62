"""What background jobs (jobs.py) and interactive terminals (terminals.py) share: programs the
agent starts in a session, which outlive the step and the turn that started them, not the session.

``SessionProcesses`` keeps them by session and numbers them there (``job1``, ``term1`` ...),
refuses a start past the session's limit or once the project is closing, stops one, kills a
session's all at once (an aborted turn, turn/loop.py, unless ``jobs_survive_abort``) and every
one when the runtime closes (``aclose``), each with its whole process group. A subclass starts
its own kind and says how one ends.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Generic, Literal, TypeVar

import anyio
from anyio.abc import Process

from totem_engine.api.errors import EngineError
from totem_engine.command_changes import CommandChanges, CommandScope
from totem_engine.file_changes import FileChange


class ProcessNotFound(EngineError, LookupError):
    """No job or terminal of that id in the session."""

    kind = "not_found"


class ProcessRefused(RuntimeError):
    """A job or terminal that may not start: too many run in the session, or the project is closing."""


@dataclass
class SessionProcess(ABC):
    """One started program: its ``id`` in the session, the ``command`` the agent gave, the shell
    that runs it (``process``, the leader of its group), and where it runs and what it changed
    (``scope``, command_changes.py)."""

    id: str
    session_id: str
    command: str
    process: Process
    started_at: float = field(default_factory=time.monotonic, kw_only=True)
    scope: CommandScope | None = field(default=None, kw_only=True)

    @property
    @abstractmethod
    def running(self) -> bool: ...


P = TypeVar("P", bound=SessionProcess)

Ending = Literal["stopped", "killed"]  # stopped by the agent; killed with its session's turn or the runtime


class SessionProcesses(ABC, Generic[P]):
    """The processes of one kind of every session of one runtime, by session. ``noun`` names
    the kind in messages, ``prefix`` its ids; ``NotFound`` and ``Refused`` are its errors."""

    noun: ClassVar[str]
    prefix: ClassVar[str]
    NotFound: ClassVar[type[ProcessNotFound]]
    Refused: ClassVar[type[ProcessRefused]]

    def __init__(self, root: Path, commands: CommandChanges | None = None):
        self.root = root
        self.commands = commands  # None: they run as they are and nothing they change is kept
        self._by_session: dict[str, dict[str, P]] = {}
        self._closed = False

    def of(self, session_id: str) -> list[P]:
        return list(self._by_session.get(session_id, {}).values())

    def running(self, session_id: str) -> bool:
        """Whether any of the session's is still running."""
        return any(found.running for found in self.of(session_id))

    def get(self, session_id: str, process_id: str) -> P:
        found = self._by_session.get(session_id, {}).get(process_id)
        if found is None:
            known = ", ".join(self._by_session.get(session_id, {})) or "none"
            raise self.NotFound(f"There is no {self.noun} {process_id!r} in this session (its {self.noun}s: {known}).")
        return found

    async def take_in(self, found: P) -> list[FileChange]:
        """What it changed since it started or was last read (command_changes.py)."""
        if found.scope is None:
            return []
        with anyio.CancelScope(shield=True):
            return await found.scope.take_in()

    async def stop(self, session_id: str, process_id: str) -> P:
        """Its group killed (SIGTERM, then SIGKILL after a grace period)."""
        found = self.get(session_id, process_id)
        await self._end(found, "stopped")
        return found

    async def kill_session(self, session_id: str) -> None:
        """Every one of the session killed (an aborted turn), all at once: each may take the grace period."""
        async with anyio.create_task_group() as group:
            for found in self.of(session_id):
                group.start_soon(self._end, found, "killed")

    async def aclose(self) -> None:
        """Every one of every session killed; none starts after it."""
        self._closed = True
        with anyio.CancelScope(shield=True):
            for session_id in list(self._by_session):
                await self.kill_session(session_id)

    def _admit(self, session_id: str, most: int, full: str) -> None:
        """``Refused`` when the project is closing or ``most`` of the session's are running
        (``full`` says so: "are running already")."""
        if self._closed:
            raise self.Refused(f"The project is closing: no {self.noun} can start.")
        if sum(found.running for found in self.of(session_id)) >= most:
            raise self.Refused(f"{most} {self.noun}s {full}: stop one first ({self.noun} list shows them).")

    async def _scope(
        self, session_id: str, command: str, *, may_change: bool, escape: bool, unasked: bool,
    ) -> CommandScope | None:
        """Where ``command`` runs and what it changes is kept (command_changes.py); None without ``commands``."""
        if self.commands is None:
            return None
        return await self.commands.scope(
            session_id, command=command, may_change=may_change, long_lived=True, escape=escape, unasked=unasked,
        )

    def _next_id(self, session_id: str) -> str:
        """The id of the session's next one: ``prefix`` and its number in the session."""
        return f"{self.prefix}{len(self._by_session.get(session_id, {})) + 1}"

    def _add(self, started: P) -> P:
        self._by_session.setdefault(started.session_id, {})[started.id] = started
        return started

    @abstractmethod
    async def _end(self, found: P, ending: Ending) -> None:
        """Its whole group killed, shielded: an abort landing there must not leave it alive."""
