"""The engine's Workspace through the ACP client's file system, so the agent reads what the
editor shows (unsaved buffers too) and its edits land in the editor.

After https://agentclientprotocol.com/protocol/file-system: ``fs/read_text_file`` (absolute
path) answers ``{content}``, ``fs/write_text_file`` (absolute path, content) writes. Used only
for what the client declared in ``clientCapabilities.fs``; everything else is the disk's, as
the language server's Workspace does (totem_lsp/edits.py):

- Text only: a file whose bytes on disk are not UTF-8 is read from the disk; bytes that are not
  UTF-8 are written to the disk.
- A read the client answers with an error (a file it does not know) falls back to the disk,
  which raises ``FileNotFoundError`` for a file that is nowhere.
- ACP has no delete, rename, stat or listing: those are the disk's, except that a file written
  through the client and not (yet) on disk is known to ``stat`` by what was written.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from acp import RequestError

from totem_engine.api.workspace import DiskWorkspace, FileStat, ToolError

log = logging.getLogger(__name__)


class ClientWorkspace:
    """``client``: the SDK's connection to the client; ``reads``/``writes``: what it offers.
    Built before the engine it is given to, so before the session exists: ``bind`` names it."""

    def __init__(self, client: Any, *, reads: bool, writes: bool):
        self.client = client
        self.reads = reads
        self.writes = writes
        self.session_id = ""
        self.disk = DiskWorkspace()
        self._written: dict[Path, int] = {}  # through the client: path -> size in bytes

    def bind(self, session_id: str) -> None:
        """The session the client's file system is asked for."""
        self.session_id = session_id

    async def read_bytes(self, path: Path) -> bytes:
        if not self.reads:
            return await self.disk.read_bytes(path)
        try:
            on_disk: bytes | None = await self.disk.read_bytes(path)
        except (FileNotFoundError, NotADirectoryError):
            on_disk = None
        if on_disk is not None and not _is_text(on_disk):
            return on_disk
        try:
            answer = await self.client.read_text_file(session_id=self.session_id, path=str(path))
        except RequestError as exc:
            if on_disk is None:
                raise FileNotFoundError(str(path)) from None
            log.info("fs/read_text_file %s answered %s; read from disk", path, exc)
            return on_disk
        return answer.content.encode("utf-8")

    async def write_bytes(self, path: Path, data: bytes) -> None:
        if not self.writes or not _is_text(data):
            await self.disk.write_bytes(path, data)
            return
        try:
            await self.client.write_text_file(session_id=self.session_id, path=str(path), content=data.decode("utf-8"))
        except RequestError as exc:
            raise ToolError(f"The editor did not write {path.name}: {exc}") from None
        self._written[path] = len(data)

    async def delete(self, path: Path) -> None:
        self._written.pop(path, None)
        await self.disk.delete(path)

    async def rename(self, source: Path, target: Path) -> None:
        await self.disk.rename(source, target)

    async def stat(self, path: Path) -> FileStat | None:
        found = await self.disk.stat(path)
        if found is None and path in self._written:
            return FileStat(is_dir=False, size=self._written[path], mtime=0.0)
        return found

    async def list_dir(self, path: Path) -> list[tuple[str, bool]]:
        return await self.disk.list_dir(path)

    async def unsaved(self) -> list[Path]:
        """The files written through the client whose disk content differs (the editor may not
        have saved them): what grep and bash, which read the disk, do not see."""
        if not self.reads:
            return []
        changed = []
        for path in list(self._written):
            try:
                on_disk = await self.disk.read_bytes(path)
            except OSError:
                on_disk = None
            try:
                shown = (await self.client.read_text_file(session_id=self.session_id, path=str(path))).content.encode("utf-8")
            except RequestError:
                continue
            if shown != on_disk:
                changed.append(path)
        return changed


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
