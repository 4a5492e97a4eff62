"""Running a project's command (a check or a formatter): in the project root, through ``/bin/sh``,
in its own process group, with a time limit. A command that cannot start or times out is a
``problem`` string, never an exception; what is left of its process group is killed.
"""

from __future__ import annotations

import os
import shlex
import signal
from dataclasses import dataclass
from pathlib import Path

import anyio


@dataclass(frozen=True)
class CommandOutput:
    stdout: str
    stderr: str
    returncode: int | None
    problem: str | None = None  # "could not start (...)", "timed out after N s"

    def first_error_line(self) -> str:
        """The first non-blank line of stderr (or stdout), for a one-line note."""
        for stream in (self.stderr, self.stdout):
            for line in stream.splitlines():
                if line.strip():
                    return line.strip()[:300]
        return ""


def with_file(command: str, path: Path) -> str:
    """``command`` with ``{file}`` replaced by ``path``, quoted for the shell."""
    return command.replace("{file}", shlex.quote(str(path)))


async def run_command(root: Path, command: str, *, timeout: float) -> CommandOutput:
    try:
        # Shielded: a cancel landing mid-spawn would leave a started group nobody kills.
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(["/bin/sh", "-c", command], cwd=root, start_new_session=True, stdin=None)
    except OSError as exc:
        return CommandOutput("", "", None, f"could not start ({exc})")
    out: list[bytes] = []
    err: list[bytes] = []
    try:
        with anyio.fail_after(timeout):
            async with process:

                async def drain(stream, into: list[bytes]) -> None:
                    async for chunk in stream:
                        into.append(chunk)

                async with anyio.create_task_group() as group:
                    group.start_soon(drain, process.stdout, out)
                    group.start_soon(drain, process.stderr, err)
                await process.wait()
    except TimeoutError:
        return CommandOutput(_text(out), _text(err), None, f"timed out after {timeout:g} s")
    finally:
        # The whole group: a shell killed on timeout would otherwise leave its children running.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
    return CommandOutput(_text(out), _text(err), process.returncode)


def _text(chunks: list[bytes]) -> str:
    return b"".join(chunks).decode("utf-8", errors="replace")
