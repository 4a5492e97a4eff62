"""The one interface through which file tools read and write the project.

``DiskWorkspace`` reads and writes the disk. The language server supplies its own Workspace that
overlays the editor's open buffers, so no tool touches the disk directly. Paths given to a
Workspace are absolute and already confined to the project (workspace.paths).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat as stat_mod
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anyio

from totem_engine.workspace import temp_journal


@dataclass(frozen=True)
class FileStat:
    is_dir: bool
    size: int
    mtime: float


class Workspace(Protocol):
    async def read_bytes(self, path: Path) -> bytes: ...

    async def write_bytes(self, path: Path, data: bytes) -> None: ...

    async def delete(self, path: Path) -> None: ...

    async def rename(self, source: Path, target: Path) -> None: ...

    async def stat(self, path: Path) -> FileStat | None: ...

    async def list_dir(self, path: Path) -> list[tuple[str, bool]]: ...

    async def unsaved(self) -> list[Path]:
        """Files whose content here differs from the disk (an editor's unsaved buffers)."""
        ...


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename in the same folder.

    A failure at any point leaves the old file byte for byte as it was. An existing file keeps
    its mode; a new one gets the process's default mode. The temporary file is journaled before
    it exists (temp_journal.py), so one a kill leaves behind is swept by the next run.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat_mod.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    tmp = path.parent.resolve() / f".{path.name}.{secrets.token_hex(4)}.totem-tmp"
    temp_journal.record(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class DiskWorkspace:
    """The project as the disk holds it. Blocking I/O runs in worker threads."""

    async def unsaved(self) -> list[Path]:
        return []

    async def read_bytes(self, path: Path) -> bytes:
        return await anyio.to_thread.run_sync(path.read_bytes)

    async def write_bytes(self, path: Path, data: bytes) -> None:
        await anyio.to_thread.run_sync(write_atomically, path, data)

    async def delete(self, path: Path) -> None:
        await anyio.to_thread.run_sync(path.unlink)

    async def rename(self, source: Path, target: Path) -> None:
        def _rename() -> None:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)

        await anyio.to_thread.run_sync(_rename)

    async def stat(self, path: Path) -> FileStat | None:
        def _stat() -> FileStat | None:
            try:
                st = path.stat()
            except (FileNotFoundError, NotADirectoryError):
                return None
            return FileStat(is_dir=stat_mod.S_ISDIR(st.st_mode), size=st.st_size, mtime=st.st_mtime)

        return await anyio.to_thread.run_sync(_stat)

    async def list_dir(self, path: Path) -> list[tuple[str, bool]]:
        def _list() -> list[tuple[str, bool]]:
            with os.scandir(path) as entries:
                return sorted((e.name, e.is_dir()) for e in entries)

        return await anyio.to_thread.run_sync(_list)


async def unsaved_note(workspace: Workspace, root: Path, under: Path) -> str | None:
    """For tools that see only the disk (grep, bash): which files under ``under`` have unsaved
    changes in the editor, so the model knows the result may not match what the user sees."""
    paths = [p for p in await workspace.unsaved() if p == under or under in p.parents]
    if not paths:
        return None
    names = ", ".join(p.relative_to(root.resolve()).as_posix() for p in sorted(paths))
    return f"These files have unsaved changes in the editor, which this result did not see: {names}."
