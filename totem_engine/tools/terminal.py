"""terminal: programs that want a terminal (a REPL, ``npm init``, a y/n prompt, a curses program).

The terminals live in the runtime's registry (terminals.py), by session. ``start`` is asked like
``bash``; sending keys to, reading, stopping and listing the session's own terminals are
permission ``terminal``, allowed by default (processes.py, shared with the job tool).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import anyio
from pydantic import Field

from totem_engine.terminals import DEFAULT_WAIT, Terminal, Terminals
from totem_engine.tools.base import (
    Bounded,
    ToolContext,
    ToolInput,
    ToolResult,
)
from totem_engine.tools.bash import MAX_TIMEOUT, OUTSIDE_SANDBOX
from totem_engine.tools.processes import ProcessCall, ProcessTool, listing
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
class TerminalCall(ProcessCall):
    terminals: Terminals | None = None
    keys: str = ""  # send: what to type
    timeout: float = DEFAULT_WAIT  # start, send, read: seconds to wait at most for the screen to settle

    async def _run(self, ctx: ToolContext) -> ToolResult:
        assert self.terminals is not None
        terminals = self.terminals
        if self.action == "list":
            listed = terminals.of(ctx.session_id)
            return self._result(listing(listed, _state) or "No terminals in this session.", f"{len(listed)} terminals", {})
        if self.action == "start":
            terminal = await terminals.start(
                ctx.session_id, self.command, may_change=self.changes, escape=self.escape, unasked=self.unasked,
                env_pass=ctx.command_env_pass,
            )
        else:
            terminal = terminals.get(ctx.session_id, self.process_id)
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
        # No cap needed: a screen is at most COLUMNS x LINES characters.
        metadata = {"terminal": terminal.id, "exit_code": terminal.process.returncode}
        return self._result(f"{terminal.text() or '(empty screen)'}\n{status}", summary, metadata)


def _state(terminal: Terminal) -> str:
    """"term1 running", "term1 exited with code 0"."""
    code = terminal.process.returncode
    if code is None:
        return f"{terminal.id} running"
    return f"{terminal.id} exited with code {code}"


class TerminalTool(ProcessTool):
    name = "terminal"
    Input = TerminalInput
    example = "python3 -i"

    def __init__(self, terminals: Terminals):
        self.terminals = terminals

    def _call(self, args: TerminalInput, **fields: Any) -> TerminalCall:
        if args.action == "send" and not args.keys:
            raise ToolError('send needs keys: terminal(action="send", id="term1", keys="1+1\\n").')
        return TerminalCall(**fields, terminals=self.terminals, keys=args.keys or "", timeout=args.timeout or DEFAULT_WAIT)
