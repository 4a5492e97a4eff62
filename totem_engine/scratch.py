"""Totem's own temporary folders, named by the process that made them; those of processes that
are gone are removed.

A folder made here is ``totem-KIND-PID-XXXXXXXX`` in the system's temporary folder. A process
that ends, even by SIGINT or SIGTERM, removes its own; one that was killed (SIGKILL, an editor
that crashed and took its server with it) cannot, and such a folder can hold copies of the
project's files (a script's stage in a sandbox overlay, a capture's index). So the first time a
process makes one, it removes every such folder of the user's whose process no longer runs.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from totem_engine.pids import alive
from totem_engine.sandbox.bwrap import make_removable

__all__ = ["folder", "make"]

KINDS = ("agent", "capture", "sandbox", "script")
_NAME = re.compile(rf"totem-(?:{'|'.join(KINDS)})-(\d+)-")
_swept = False


async def make(kind: str) -> Path:
    """A new folder ``totem-KIND-PID-…`` (``kind``: one of ``KINDS``), for its maker to remove
    (``tempfile.mkdtemp``)."""
    assert kind in KINDS
    return await anyio.to_thread.run_sync(_make, kind)


@asynccontextmanager
async def folder(kind: str) -> AsyncIterator[Path]:
    """A new folder ``totem-KIND-PID-…``, removed with what it holds when the block ends."""
    made = await make(kind)
    try:
        yield made
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_remove, made)


def _make(kind: str) -> Path:
    global _swept
    if not _swept:
        _swept = True
        _sweep(Path(tempfile.gettempdir()))
    return Path(tempfile.mkdtemp(prefix=f"totem-{kind}-{os.getpid()}-"))


def _sweep(temporary: Path) -> None:
    """Remove the user's Totem folders in ``temporary`` whose process is gone."""
    try:
        entries = list(os.scandir(temporary))
    except OSError:
        return
    for entry in entries:
        found = _NAME.match(entry.name)
        if found is None or int(found.group(1)) == os.getpid() or alive(int(found.group(1))):
            continue
        try:
            if entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == os.getuid():
                _remove(Path(entry.path))
        except OSError:
            continue


def _remove(path: Path) -> None:
    make_removable(path)  # an overlay's work folder is left mode 000
    shutil.rmtree(path, ignore_errors=True)
