"""terminal: programs that want a terminal (a REPL, ``npm init``, a y/n prompt, a curses program).

The terminals live in the runtime's registry (terminals.py), by session. ``start`` is asked like
``bash`` (the same rules, matched against each simple command, and ``outside_sandbox`` as
``sandbox-escape``: bash.py ``asked_as``); sending keys to, reading, stopping and listing the session's own terminals are permission
``terminal``, allowed by default: what a started program may do was asked at its start.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated, Literal

import anyio
from pydantic import Field

from totem_engine.terminals import (
    DEFAULT_WAIT,
    Terminal,
    TerminalNotFound,
    TerminalRefused,
    Terminals,
)
from totem_engine.tools.base import Action, Bounded, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.tools.bash import MAX_TIMEOUT, OUTSIDE, OUTSIDE_SANDBOX, asked_as
from totem_engine.vocab.accounts import short
from totem_engine.vocab.tools import ToolError

TerminalAction = Literal["start", "send", "read", "stop", "list"]


class TerminalInput(ToolInput):
    action: TerminalAction = Field(description="start, send, read, stop or list.")
    command: str | None = Field(None, description="start: the program to run in the project root (a shell command).")
    keys: str | None = Field(
        None, description="send: what to type. A newline or <Enter> presses Enter; <Tab>, <Esc>, <Up>, <Down>, <Left>, "
        "<Right>, <Backspace> and <C-c> (any <C-letter>) press those keys."
    )
    id: str | None = Field(None, description="send, read, stop: the terminal's id, as start gave it (term1).")
    timeout: Annotated[float | None, Bounded(default=DEFAULT_WAIT, maximum=MAX_TIMEOUT)] = Field(
        None, description=f"start, send, read: seconds to wait at most for the program to stop printing (default {DEFAULT_WAIT:g})."
    )
    outside_sandbox: bool | None = Field(None, description=f"start, {OUTSIDE_SANDBOX}")


@dataclass
class TerminalCall(Action):
    terminals: Terminals | None = None
    action: TerminalAction = "list"
    command: str = ""
    keys: str = ""
    terminal_id: str = ""
    timeout: float = DEFAULT_WAIT
    escape: bool = False  # start: outside the sandbox, as the user allowed

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.terminals is not None
        try:
            return await self._run(self.terminals, ctx)
        except (TerminalNotFound, TerminalRefused) as exc:
            raise ToolError(str(exc)) from None

    async def _run(self, terminals: Terminals, ctx: ToolContext) -> ToolResult:
        if self.action == "list":
            listed = terminals.of(ctx.session_id)
            return self._result("\n".join(_line(t) for t in listed) or "No terminals in this session.", f"{len(listed)} terminals")
        if self.action == "start":
            terminal = await terminals.start(ctx.session_id, self.command, may_change=self.changes, escape=self.escape)
        else:
            terminal = terminals.get(ctx.session_id, self.terminal_id)
        if self.action == "stop":
            await terminals.stop(ctx.session_id, terminal.id)
            ctx.taken.extend(await terminals.take_in(terminal))
            return self._screen(terminal, f"{terminal.id} stopped")
        if self.action == "send":
            if not terminal.running:
                raise ToolError(f"{_state(terminal)}: there is nothing to send keys to (its last screen: terminal read).")
            await terminal.type(self.keys)
        await terminal.settle(self.timeout)
        if terminal.ended.is_set():
            with anyio.move_on_after(1):  # the pty ends a moment before the exit is reaped
                await terminal.process.wait()
        ctx.taken.extend(await terminals.take_in(terminal))  # what it changed so far joins this turn
        return self._screen(terminal, _state(terminal))

    def _screen(self, terminal: Terminal, summary: str) -> ToolResult:
        row, column = terminal.screen.cursor.y + 1, terminal.screen.cursor.x + 1
        status = f"[{_state(terminal)}; cursor at line {row}, column {column}]"
        return self._result(f"{terminal.text() or '(empty screen)'}\n{status}", summary, terminal)

    def _result(self, text: str, summary: str, terminal: Terminal | None = None) -> ToolResult:
        # No cap needed: a screen is at most COLUMNS x LINES characters.
        notes = "".join(f"\n[{note}]" for note in self.notes)
        metadata = {"terminal": terminal.id, "exit_code": terminal.process.returncode} if terminal else {}
        return ToolResult(output=text + notes, summary=summary, metadata=metadata)


def _state(terminal: Terminal) -> str:
    """"term1 running", "term1 exited with code 0"."""
    code = terminal.process.returncode
    if code is None:
        return f"{terminal.id} running"
    return f"{terminal.id} exited with code {code}"


def _line(terminal: Terminal) -> str:
    return f"{_state(terminal)}, started {round(time.monotonic() - terminal.started_at)} s ago: {short(terminal.command, 100)}"


class TerminalTool(Tool):
    name = "terminal"
    Input = TerminalInput

    def __init__(self, terminals: Terminals):
        self.terminals = terminals

    async def prepare(self, args: TerminalInput, ctx: ToolContext) -> Action:
        if args.action == "start":
            if not args.command or not args.command.strip():
                raise ToolError('start needs a command: terminal(action="start", command="python3 -i").')
            permission, escape = await asked_as(ctx, args.command, args.outside_sandbox)
            return TerminalCall(
                title=f"terminal: $ {args.command}{OUTSIDE if escape else ''}", **permission, notes=list(args.notes),
                runs_commands=True, terminals=self.terminals, action="start", command=args.command,
                timeout=args.timeout or DEFAULT_WAIT, escape=escape,
            )
        if args.action != "list" and not args.id:
            raise ToolError(f'{args.action} needs the id of a terminal (start gave it; terminal(action="list") shows them).')
        if args.action == "send" and not args.keys:
            raise ToolError('send needs keys: terminal(action="send", id="term1", keys="1+1\\n").')
        return TerminalCall(
            title=f"terminal {args.action} {args.id or ''}".rstrip(), permission="terminal", patterns=[args.action],
            always_pattern=args.action, notes=list(args.notes), terminals=self.terminals, action=args.action,
            runs_commands=args.action != "list",
            keys=args.keys or "", terminal_id=args.id or "", timeout=args.timeout or DEFAULT_WAIT,
        )
