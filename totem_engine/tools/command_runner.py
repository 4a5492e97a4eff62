"""Where a ``bash`` command runs when it does not run in Totem's own process.

A front end may offer a ``CommandRunner`` (``Agent.command_runner``): the ACP front end runs
commands in the client's terminal (totem_acp/terminal.py), so the user sees them in the editor.
Whoever runs it, the permission check, the timeout, the output cap and the abort stay Totem's:
the runner gets the command as the user would type it (``sh -c COMMAND``, a credential variable
Totem would leave out unset with ``env -u``), the timeout and the cap, and it must kill the
command when its task is cancelled. A command that runs in the sandbox never reaches a runner:
it stays in Totem's sandbox (tools/bash.py ``_run``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass
class Outcome:
    """What a command left: its merged output (already cut to the cap), its exit code (negative:
    the signal that ended it; None: killed at the timeout) and whether the timeout killed it."""

    output: str
    exit_code: int | None
    timed_out: bool


class CommandRunner(Protocol):
    async def run(self, argv: list[str], *, cwd: Path, timeout: float, limit: int, call_id: str) -> Outcome:
        """Run ``argv`` in ``cwd`` for the call ``call_id``; kill it after ``timeout`` seconds
        (then ``timed_out``) and when cancelled; keep at most ``limit`` characters of output.
        Raises ``ToolError`` when the command cannot be started."""
        ...
