"""``bash`` in the ACP client's terminal, so the user watches the command in the editor.

After https://agentclientprotocol.com/protocol/terminals: ``terminal/create`` (command, args,
cwd, ``outputByteLimit``) starts the command and answers its ``terminalId`` at once; the call's
``tool_call_update`` carries ``{type: "terminal", terminalId}`` so the client shows it live;
``terminal/wait_for_exit`` answers ``{exitCode, signal}`` when it ends; ``terminal/kill`` ends it
and keeps its output; ``terminal/output`` answers ``{output, truncated, exitStatus}`` (the client
keeps the end when it cuts); ``terminal/release`` frees it (killing it if still running), the
client still showing its output in the call.

What stays Totem's (tools/command_runner.py): the permission was asked before this runs; the
timeout is Totem's clock around ``wait_for_exit``, then ``kill``; the output is cut to Totem's
cap as a local command's is; an abort (the task cancelled) kills and releases the terminal.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from acp import RequestError
from acp.schema import TerminalToolCallContent, ToolCallProgress

from totem_engine.api.workspace import CommandOutcome as Outcome
from totem_engine.api.workspace import HeadTail, ToolError

log = logging.getLogger(__name__)
BYTES_PER_CHAR = 4  # the client's limit is in bytes, Totem's cap in characters (UTF-8: at most 4 bytes each)
CLEANUP_WAIT = 5.0  # seconds the kill and release may take before a client that does not answer is left
CREATE_WAIT = 30.0  # seconds terminal/create may take: shielded from an abort, it must not hang one


class ClientTerminals:
    """Runs commands in the terminals of ``client`` (the SDK's connection). Built before the
    engine it is given to, so before the session exists: ``bind`` names the session once it
    does. ``shown``: call id -> terminal id, for the call's closing update (frontend.py)."""

    def __init__(self, client: Any):
        self.client = client
        self.session_id = ""
        self.send: Callable[[Any], Awaitable[None]] | None = None
        self.shown: dict[str, str] = {}

    def bind(self, session_id: str, send: Callable[[Any], Awaitable[None]]) -> None:
        """The session the commands run for, and how to send one of its ``session/update``s."""
        self.session_id = session_id
        self.send = send

    async def run(self, argv: list[str], *, cwd: Path, timeout: float, limit: int, call_id: str) -> Outcome:
        ids = {"session_id": self.session_id}
        try:
            # Shielded: a terminal started as an abort lands must still be known, to be killed.
            with anyio.CancelScope(shield=True), anyio.fail_after(CREATE_WAIT):
                created = await self.client.create_terminal(
                    **ids, command=argv[0], args=argv[1:], cwd=str(cwd), output_byte_limit=limit * BYTES_PER_CHAR,
                )
        except TimeoutError:
            raise ToolError(f"The editor did not answer terminal/create within {CREATE_WAIT:g} s.") from None
        except (RequestError, ConnectionError) as exc:
            raise ToolError(f"The editor's terminal did not start the command: {exc}") from None
        ids["terminal_id"] = created.terminal_id
        self.shown[call_id] = created.terminal_id
        assert self.send is not None, "bind() comes before the session's first turn"
        await self.send(ToolCallProgress(
            session_update="tool_call_update", tool_call_id=call_id,
            content=[TerminalToolCallContent(type="terminal", terminal_id=created.terminal_id)],
        ))
        exited = False
        try:
            with anyio.move_on_after(timeout) as deadline:
                status = await self.client.wait_for_terminal_exit(**ids)
                exited = True
            if not exited:
                await self.client.kill_terminal(**ids)
            shown = await self.client.terminal_output(**ids)
        except (RequestError, ConnectionError) as exc:
            raise ToolError(f"The editor's terminal failed: {exc}") from None
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_WAIT):
                await self._end(ids, killing=not exited and not deadline.cancelled_caught)
        collected = HeadTail(limit)
        if shown.truncated:
            collected.add("[The editor's terminal kept only the end of the output.]\n")
        collected.add(shown.output)
        if deadline.cancelled_caught:
            return Outcome(collected.text(), None, True)
        return Outcome(collected.text(), exit_code(status.exit_code, status.signal), False)

    async def _end(self, ids: dict[str, str], *, killing: bool) -> None:
        """The terminal killed (an abort: the command is still running) and released."""
        with contextlib.suppress(RequestError, ConnectionError):
            if killing:
                await self.client.kill_terminal(**ids)
            await self.client.release_terminal(**ids)


def exit_code(code: int | None, signal_name: str | None) -> int:
    """As a local process's return code: the exit code, or minus the number of the signal that
    ended it (``"SIGKILL"`` or ``"KILL"`` -> -9; a name this system does not know: -1)."""
    if code is not None:
        return code
    name = (signal_name or "").upper()
    try:
        return -signal.Signals[name if name.startswith("SIG") else f"SIG{name}"].value
    except KeyError:
        return -1
