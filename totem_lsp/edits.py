"""The engine's Workspace as the editor sees it: open buffers first, the disk second.

Reads of an open document return its buffer, unsaved changes included. A write to an open
document goes to the editor as a ``workspace/applyEdit`` WorkspaceEdit (a TextDocumentEdit at the
version the server last saw, editing only the lines that changed: text_edits.py), so it lands in
the editor's undo history as the change it is; a file that is not open,
or a client without applyEdit, is written on disk by the engine. Spec: LSP 3.17
``workspace/applyEdit``, ``WorkspaceEdit``, ``TextDocumentEdit``, ``DeleteFile``.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from totem_engine.api.workspace import DiskWorkspace, FileStat, ToolError
from totem_lsp.messages import ApplyEditAnswer, plain
from totem_lsp.text_edits import text_edits
from totem_lsp.uris import path_of, uri_of

log = logging.getLogger(__name__)
SYNC_WAIT = 2.0  # seconds to wait for the didChange of an applied edit


class EditorWorkspace:
    def __init__(self, server: LanguageServer):
        self.server = server
        self.disk = DiskWorkspace()

    def open_document(self, path: Path) -> TextDocument | None:
        return self.server.workspace.text_documents.get(uri_of(path))

    def _can_apply_edits(self) -> bool:
        workspace = self.server.client_capabilities.workspace
        return bool(workspace and workspace.apply_edit)

    def _resource_operations(self) -> set[str]:
        workspace = self.server.client_capabilities.workspace
        edit = workspace.workspace_edit if workspace else None
        return {str(op.value) for op in (edit.resource_operations or [])} if edit else set()

    async def read_bytes(self, path: Path) -> bytes:
        document = self.open_document(path)
        if document is not None:
            return document.source.encode("utf-8")
        return await self.disk.read_bytes(path)

    async def write_bytes(self, path: Path, data: bytes) -> None:
        document = self.open_document(path)
        if document is None or not self._can_apply_edits():
            await self.disk.write_bytes(path, data)
            return
        text = data.decode("utf-8")
        edits = text_edits(document.source, text, document.position_codec.client_num_units)
        if not edits:
            return  # the buffer already holds it
        edit = types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version),
            edits=edits,
        )
        await self._apply(types.WorkspaceEdit(document_changes=[edit]), f"Totem: edit {path.name}")
        await self._until_synced(document.uri, text)

    async def delete(self, path: Path) -> None:
        document = self.open_document(path)
        if document is not None and self._can_apply_edits() and "delete" in self._resource_operations():
            operation = types.DeleteFile(uri=document.uri, options=types.DeleteFileOptions(ignore_if_not_exists=True))
            await self._apply(types.WorkspaceEdit(document_changes=[operation]), f"Totem: delete {path.name}")
            if await self.disk.stat(path) is None:
                return
        await self.disk.delete(path)

    async def rename(self, source: Path, target: Path) -> None:
        await self.disk.rename(source, target)

    async def stat(self, path: Path) -> FileStat | None:
        document = self.open_document(path)
        if document is not None:
            return FileStat(is_dir=False, size=len(document.source.encode("utf-8")), mtime=0.0)
        return await self.disk.stat(path)

    async def list_dir(self, path: Path) -> list[tuple[str, bool]]:
        return await self.disk.list_dir(path)

    async def unsaved(self) -> list[Path]:
        """Open documents whose buffer differs from the disk (what grep and bash cannot see)."""
        changed = []
        for uri, document in list(self.server.workspace.text_documents.items()):
            path = path_of(uri)
            if path is None:
                continue
            try:
                on_disk = await self.disk.read_bytes(path)
            except OSError:
                on_disk = b""
            if document.source.encode("utf-8") != on_disk:
                changed.append(path)
        return changed

    async def _until_synced(self, uri: str, text: str) -> None:
        """Wait for the editor's ``didChange`` that carries the applied edit back.

        The engine's next read (the snapshot after the change, the next edit's freshness check)
        must see the new text, and clients may answer ``applyEdit`` before sending ``didChange``.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SYNC_WAIT
        while loop.time() < deadline:
            document = self.server.workspace.text_documents.get(uri)
            if document is None or document.source == text:
                return
            await asyncio.sleep(0.01)
        log.warning("%s: the editor applied the edit but did not report it with didChange", uri)

    async def _apply(self, edit: types.WorkspaceEdit, label: str) -> None:
        try:
            raw = await self.server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label))
            result = ApplyEditAnswer.model_validate(plain(raw))
        except JsonRpcException as exc:
            raise ToolError(f"The editor did not apply the edit: it answered with an error ({exc}).") from None
        except ValueError:  # anything but a JSON true for "applied" is not applied
            log.warning("malformed workspace/applyEdit result: %r", raw)
            raise ToolError("The editor did not apply the edit: its answer was malformed.") from None
        if not result.applied:
            reason = f": {result.failure_reason}" if result.failure_reason else ""
            raise ToolError(f"The editor did not apply the edit{reason}.")
