"""A chat message's attachments resolved against the editor: its ``context``, and the mentions in
its text (totem_engine/api/attachments.py), buffer first and confined to the project.

``@path`` and ``@path#L10-20`` name a project file (an open buffer's text, unsaved changes
included, else the disk); ``#buffer``, ``#selection`` and ``#diagnostics`` name the document the
editor shows (``editor``, else ``context``): its whole text, the lines of its selection, its
diagnostics (those the editor sent, else Totem's own for it). A mention that names nothing that
can be read (no such file, a path outside the project, a binary file, no document) is left in
the text as typed and attaches nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path

from totem_engine.api.attachments import (
    Attachment,
    AttachmentKind,
    Mention,
    excerpt,
    find_mentions,
)
from totem_engine.api.checks import Finding
from totem_engine.api.workspace import (
    ToolError,
    looks_binary,
    relative,
    resolve_in_project,
)
from totem_lsp.messages import ChatContext, ChatParams, EditorDiagnostic, Range
from totem_lsp.uris import path_of

log = logging.getLogger(__name__)
_SEVERITY = {1: "error", 2: "warning", 3: "information", 4: "hint"}


class Attacher:
    """Resolves attachments in one project ``root``: ``read`` reads a file as the editor sees it;
    ``findings(path)`` gives Totem's own latest findings on a file (diagnostics.py)."""

    def __init__(self, root: Path, read, findings):
        self.root = root
        self.read = read
        self.findings = findings

    async def attachments(self, params: ChatParams) -> list[Attachment]:
        found: list[Attachment] = []
        if params.context is not None:
            context = await self._context(params.context)
            if context is not None:
                found.append(context)
        editor = params.editor or params.context
        for mention in find_mentions(params.text):
            attached = await (self._file(mention) if mention.kind == "file" else self._editor(mention, editor, params))
            if attached is None:
                log.info("mention %s names nothing that can be attached", mention.token)
            else:
                found.append(attached)
        return found

    async def _context(self, context: ChatContext) -> Attachment | None:
        """The place the message is about: its lines when a range is given, else the file named."""
        rel = self._relative(path_of(context.uri))
        if rel is None:
            return None
        if context.range is None:
            return Attachment("context", rel)
        text = await self._text(self.root / rel)
        if text is None:
            return Attachment("context", rel)
        first, last = _lines(context.range)
        body, shown = excerpt(text[0], first, last, rel)
        return Attachment("context", rel, body=body, lines=shown)

    async def _file(self, mention: Mention) -> Attachment | None:
        assert mention.path is not None
        try:
            target = resolve_in_project(self.root, mention.path)
        except ToolError:  # outside the project (BoundaryError), or no path at all
            return None
        return await self._whole_or_lines("file", target, mention.first, mention.last, mention.token)

    async def _editor(self, mention: Mention, editor: ChatContext | None, params: ChatParams) -> Attachment | None:
        path = path_of(editor.uri) if editor else None
        rel = self._relative(path)
        if editor is None or path is None or rel is None:
            return None
        if mention.kind == "buffer":
            return await self._whole_or_lines("buffer", path, None, None, mention.token)
        if mention.kind == "selection":
            if editor.range is None or editor.range.start == editor.range.end:
                return None
            return await self._whole_or_lines("selection", path, *_lines(editor.range), mention.token)
        sent = params.editor.diagnostics if params.editor is not None else None
        lines = [_sent_line(d) for d in sent] if sent is not None else [_finding_line(f) for f in await self.findings(path)]
        return Attachment("diagnostics", rel, body="\n".join(lines) or "(none)", findings=len(lines), mention=mention.token)

    async def _whole_or_lines(
        self, kind: AttachmentKind, path: Path, first: int | None, last: int | None, token: str
    ) -> Attachment | None:
        rel = self._relative(path)
        text = await self._text(path) if rel is not None else None
        if rel is None or text is None:
            return None
        body, shown = excerpt(text[0], first, last, rel)
        whole = shown is None and body == text[0].removesuffix("\n")
        return Attachment(kind, rel, body=body, lines=shown, mention=token, seen=text[1] if whole else None)

    async def _text(self, path: Path) -> tuple[str, bytes] | None:
        """A text file's content and bytes as the editor sees it; None when it cannot be read."""
        try:
            data = await self.read(path)
        except OSError:
            return None
        if looks_binary(data):
            return None
        return data.decode("utf-8", errors="replace"), data

    def _relative(self, path: Path | None) -> str | None:
        if path is None:
            return None
        try:
            return relative(self.root, path)
        except ValueError:
            return None


def _lines(selection: Range) -> tuple[int, int]:
    """An LSP range as 1-based inclusive lines: a range ending at character 0 of a later line
    does not hold that line."""
    first, last = selection.start.line, selection.end.line
    if selection.end.character == 0 and last > first:
        last -= 1
    return first + 1, last + 1


def _finding_line(finding: Finding) -> str:
    start = finding.range.start
    return f"{start.line + 1}:{start.character + 1} {finding.severity} {finding.code}: {finding.message} ({finding.source})"


def _sent_line(diagnostic: EditorDiagnostic) -> str:
    start = diagnostic.range.start
    severity = _SEVERITY.get(diagnostic.severity or 1, "error")
    code = f" {diagnostic.code}" if diagnostic.code is not None else ""
    source = f" ({diagnostic.source})" if diagnostic.source else ""
    return f"{start.line + 1}:{start.character + 1} {severity}{code}: {diagnostic.message}{source}"
