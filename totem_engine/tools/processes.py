"""What the job and terminal tools (job.py, terminal.py) share: their calls over a session's
processes (processes.py) and how they are asked.

``start`` is asked like ``bash`` (the same rules, matched against each simple command, and
``outside_sandbox`` as ``sandbox-escape``: bash.py ``asked_as``); every other action acts on the
session's own processes, under the tool's own permission (``job``, ``terminal``), allowed by
default: what a started program may do was asked at its start. An unknown id or a refused start
is the model's to fix, so it comes back as a ``ToolError``.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from totem_engine.processes import ProcessNotFound, ProcessRefused, SessionProcess
from totem_engine.tools.base import Action, Tool, ToolContext, ToolResult
from totem_engine.tools.bash import OUTSIDE, asked_as
from totem_engine.vocab.accounts import short
from totem_engine.vocab.tools import ToolError

P = TypeVar("P", bound=SessionProcess)


class ProcessArgs(Protocol):
    """What the tools' inputs (``JobInput``, ``TerminalInput``) have in common."""

    action: str
    command: str | None
    id: str | None
    outside_sandbox: bool | None
    notes: list[str]


@dataclass
class ProcessCall(Action):
    """One call of the tool: its ``action``, the ``command`` to start or the ``process_id`` to
    act on, and for ``start`` whether it runs outside the sandbox (``escape``), as the user allowed."""

    action: str = "list"
    command: str = ""
    process_id: str = ""
    escape: bool = False

    async def apply(self, ctx: ToolContext) -> ToolResult:
        try:
            return await self._run(ctx)
        except (ProcessNotFound, ProcessRefused) as exc:
            raise ToolError(str(exc)) from None

    @abstractmethod
    async def _run(self, ctx: ToolContext) -> ToolResult: ...

    def _result(self, text: str, summary: str, metadata: dict[str, Any]) -> ToolResult:
        notes = "".join(f"\n[{note}]" for note in self.notes)
        return ToolResult(output=text + notes, summary=summary, metadata=metadata)


def listing(found: Sequence[P], state: Callable[[P], str]) -> str:
    """One line each: its ``state`` ("job1 running"), how long ago it started, its command."""
    return "\n".join(f"{state(p)}, started {round(time.monotonic() - p.started_at)} s ago: {short(p.command, 100)}" for p in found)


class ProcessTool(Tool):
    """A tool over the session's processes of one kind; ``example`` is a command ``start`` shows
    when it is given none. ``_call`` makes the subclass's call from the input and the fields
    decided here."""

    example: ClassVar[str]

    def may_change(self, action: Action) -> bool:
        """``start`` as ``bash`` (its command); keys sent to a program may make it do anything;
        reading, waiting for, stopping and listing the session's processes change nothing."""
        verb = action.action if isinstance(action, ProcessCall) else "start"
        if verb == "start":
            return bool(action.changes)
        return verb == "send"

    async def prepare(self, args: ProcessArgs, ctx: ToolContext) -> Action:
        if args.action == "start":
            if not args.command or not args.command.strip():
                raise ToolError(f'start needs a command: {self.name}(action="start", command="{self.example}").')
            permission, escape = await asked_as(ctx, args.command, args.outside_sandbox)
            return self._call(
                args, title=f"{self.name}: $ {args.command}{OUTSIDE if escape else ''}", **permission,
                notes=list(args.notes), runs_commands=True, action="start", command=args.command, escape=escape,
            )
        if args.action != "list" and not args.id:
            raise ToolError(f'{args.action} needs the id of a {self.name} (start gave it; {self.name}(action="list") shows them).')
        return self._call(
            args, title=f"{self.name} {args.action} {args.id or ''}".rstrip(), permission=self.name, patterns=[args.action],
            always_pattern=args.action, notes=list(args.notes), runs_commands=args.action != "list", action=args.action,
            process_id=args.id or "",
        )

    @abstractmethod
    def _call(self, args: Any, **fields: Any) -> ProcessCall: ...
