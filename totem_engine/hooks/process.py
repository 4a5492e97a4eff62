"""One hook's command, run: JSON on its stdin, its exit code and what it printed.

It runs as the user, outside the sandbox (it is the user's own code, like their shell), with the
project as its working folder, in a process group of its own, so its timeout and an abort kill
everything it started. Its environment is Totem's without what looks like a credential
(command_env.py): a hook script has no business with the model's API key. What it prints is
kept up to ``MAX_OUTPUT`` bytes a stream; the rest is read and dropped, so a chatty hook cannot
fill the memory or stall on a full pipe.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

from totem_engine.command_env import command_environ

MAX_OUTPUT = 64 * 1024  # bytes kept of each of stdout and stderr


@dataclass(frozen=True)
class Ran:
    """How a hook's command ended. ``exit_code`` None: it did not end by itself (``timed_out``) or
    never started (``failed``: why)."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    failed: str | None = None


def hook_environ(root: Path, passed: tuple[str, ...]) -> dict[str, str]:
    """A hook's environment: Totem's less its credentials (but ``passed``), and the project's
    folder under Claude Code's name too, so a script that finds its files through it works."""
    env = command_environ(unasked=True, passed=passed)
    env["TOTEM_PROJECT_DIR"] = env["CLAUDE_PROJECT_DIR"] = str(root)
    return env


async def run_command(command: str, payload: dict, *, cwd: Path, env: dict[str, str], timeout: float) -> Ran:
    """Run ``command`` with ``/bin/sh -c``, ``payload`` as JSON on its stdin, for at most
    ``timeout`` seconds. Never raises for the command's sake: a command that cannot start, fails
    or hangs is a ``Ran`` that says so."""
    try:
        process = await anyio.open_process(
            ["/bin/sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=cwd, env=env, start_new_session=True,
        )
    except OSError as exc:
        return Ran(None, failed=f"could not start: {exc.strerror or exc}")
    out, err = bytearray(), bytearray()
    try:
        with anyio.move_on_after(timeout) as waited:
            async with anyio.create_task_group() as group:
                group.start_soon(_feed, process, json.dumps(payload).encode())
                group.start_soon(_drain, process.stdout, out)
                group.start_soon(_drain, process.stderr, err)
            await process.wait()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                _kill_group(process)
                await process.wait()
    if waited.cancelled_caught:
        return Ran(None, _text(out), _text(err), timed_out=True)
    return Ran(process.returncode, _text(out), _text(err))


def _text(data: bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")


async def _feed(process: Process, data: bytes) -> None:
    """The payload on stdin, then end of file; a hook that never reads it is no error."""
    assert process.stdin is not None
    try:
        await process.stdin.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    finally:
        await process.stdin.aclose()


async def _drain(stream: ByteReceiveStream | None, kept: bytearray) -> None:
    if stream is None:
        return
    async for chunk in stream:
        room = MAX_OUTPUT - len(kept)
        if room > 0:
            kept += chunk[:room]


def _kill_group(process: Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
