"""ripgrep as grep and glob run it: when it can answer for the project, its flags, its output.

Both tools have a built-in engine that gives the same answer; ripgrep is used when it is on PATH
and honours exactly the project's ignore rules (``ripgrep_for``). It runs in its own process
group, killed when the call is cancelled.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO

import anyio
from anyio.abc import ByteReceiveStream

from totem_engine.workspace.walk import start_rules

# .gitignore only: no .ignore, global or exclude files, no config file, with or without git.
FLAGS = ("--no-config", "--no-require-git", "--no-ignore-dot", "--no-ignore-exclude", "--no-ignore-global")


def missing_note() -> str | None:
    """What a result of the built-in engine says when rg is not installed at all."""
    if shutil.which("rg") is not None:
        return None
    return "[ripgrep (rg) is not installed, so the built-in search answered: the same result, slower on a large project.]"


def ripgrep_for(root: Path, start: Path) -> str | None:
    """The rg executable to use, or None when the built-in engine must answer.

    ripgrep also honours .gitignore files above the project root, and applies the rules of the
    folders above an explicitly named ignored folder; in those cases, and for a single file,
    only the built-in engine gives the project's answer.
    """
    rg = shutil.which("rg")
    if rg is None or not start.is_dir() or start_rules(root, start)[1]:
        return None
    if any((folder / ".gitignore").exists() for folder in root.resolve().parents):
        return None
    return rg


async def run_ripgrep(args: list[str], root: Path, on_line: Callable[[bytes], None]) -> tuple[int, str]:
    """Run rg with ``args`` in ``root``, each line of its output to ``on_line`` (without the
    newline); its exit code and what it wrote to stderr."""
    return await _run(args, root, subprocess.PIPE, lambda stdout: _feed_lines(stdout, on_line))


async def read_ripgrep(args: list[str], root: Path) -> tuple[int, bytes, str]:
    """Run rg with ``args`` in ``root``: its exit code, its whole output, what it wrote to stderr.

    The output goes to a temporary file, read once rg has ended: rg writes once per file it
    searched, and waking the event loop for each of those writes cost more than rg's search.
    The file has no name (``TemporaryFile``): a killed process leaves nothing behind.
    """
    with tempfile.TemporaryFile() as output:
        code, errors = await _run(args, root, output, None)
        output.seek(0)
        # Off the loop: the counts of a search over a large tree are megabytes.
        return code, await anyio.to_thread.run_sync(output.read), errors


async def _run(
    args: list[str], root: Path, stdout: int | IO[bytes], read: Callable[[ByteReceiveStream], Awaitable[None]] | None
) -> tuple[int, str]:
    # Shielded: a cancel landing mid-spawn would leave a started group nobody kills.
    with anyio.CancelScope(shield=True):
        process = await anyio.open_process(args, cwd=root, stdin=subprocess.DEVNULL, stdout=stdout, start_new_session=True)
    async with process:
        try:
            assert process.stderr is not None
            errors = bytearray()
            async with anyio.create_task_group() as tg:
                tg.start_soon(_drain, process.stderr, errors)
                if read is not None:
                    assert process.stdout is not None
                    await read(process.stdout)
            code = await process.wait()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            raise
    return code, errors.decode("utf-8", "replace").strip()


async def _feed_lines(stream: ByteReceiveStream, on_line: Callable[[bytes], None]) -> None:
    # Big reads, lines handed over in a plain loop, and a long line's pieces joined once: an
    # async generator per line and re-copying a partial line per chunk cost more than rg did.
    pending: list[bytes] = []
    while True:
        try:
            chunk = await stream.receive(1 << 20)
        except anyio.EndOfStream:
            break
        end = chunk.rfind(b"\n")
        if end < 0:
            pending.append(chunk)
            continue
        pending.append(chunk[:end])
        for line in b"".join(pending).split(b"\n"):
            on_line(line)
        pending = [chunk[end + 1 :]]
    if rest := b"".join(pending):
        on_line(rest)


async def _drain(stream: ByteReceiveStream, into: bytearray) -> None:
    async for chunk in stream:
        into.extend(chunk)
