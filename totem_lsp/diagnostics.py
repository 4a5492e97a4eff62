"""Findings as diagnostics: the engine's checks, published per document.

Built-in rules run on open, on change (debounced 300 ms) and on save; external commands (the
project's own checks) only on save; after the agent changed a file, the findings of the checks
its call ran (``ToolEnd.checks``) are published as they are. Each
diagnostic carries ``data: {"totem": true, "fix": ...}`` so code actions can offer its fix.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from totem_engine.api.checks import CheckResult, Finding, Fix, run_checks
from totem_engine.api.workspace import relative
from totem_lsp.project import Projects
from totem_lsp.uris import path_of, uri_of

log = logging.getLogger(__name__)
DEBOUNCE = 0.3  # seconds

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def to_range(r) -> types.Range:
    return types.Range(
        start=types.Position(line=r.start.line, character=r.start.character),
        end=types.Position(line=r.end.line, character=r.end.character),
    )


def fix_data(fix: Fix | None) -> dict | None:
    if fix is None:
        return None
    rng = to_range(fix.range)
    return {
        "title": fix.title,
        "range": {"start": {"line": rng.start.line, "character": rng.start.character}, "end": {"line": rng.end.line, "character": rng.end.character}},
        "newText": fix.new_text,
    }


def to_diagnostic(finding: Finding) -> types.Diagnostic:
    return types.Diagnostic(
        range=to_range(finding.range),
        message=finding.message,
        severity=_SEVERITY[finding.severity],
        code=finding.code,
        source=finding.source,
        data={"totem": True, "fix": fix_data(finding.fix)},
    )


class Diagnostics:
    def __init__(self, server: LanguageServer, projects: Projects):
        self.server = server
        self.projects = projects
        self._builtin: dict[str, list[Finding]] = {}
        self._external: dict[str, list[Finding]] = {}
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task] = set()

    def changed(self, uri: str) -> None:
        """A keystroke: check again once the user pauses."""
        timer = self._pending.pop(uri, None)
        if timer is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        self._pending[uri] = loop.call_later(DEBOUNCE, lambda: self.spawn(self.check(uri, external=False)))

    def spawn(self, work) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def check(self, uri: str, *, external: bool) -> None:
        self._pending.pop(uri, None)
        path = path_of(uri)
        if path is None:
            return
        root = self.projects.root_for(uri)
        try:
            rel = relative(root, path)
        except ValueError:
            return
        engine = await self.projects.engines.engine(root)
        try:
            text = (await self.projects.workspace.read_bytes(path)).decode("utf-8", errors="replace")
        except OSError:
            return
        checkers = engine.editor_checkers()
        builtin = await run_checks([c for c in checkers if not c.external], root, rel, text)
        self._builtin[uri] = builtin.findings
        if external:
            result = await run_checks([c for c in checkers if c.external], root, rel, text)
            self._external[uri] = result.findings
            self._log_notes(result.notes)
        self.publish(uri)

    def after_agent_edit(self, root: Path, checks: dict[str, CheckResult]) -> None:
        """What the checks the agent's call ran found in each file it changed (``ToolEnd.checks``),
        published as it is: the checks do not run again for the editor."""
        for rel, checked in checks.items():
            uri = uri_of(root / rel)
            self._builtin[uri] = [f for f in checked.findings if not f.external]
            self._external[uri] = [f for f in checked.findings if f.external]
            self._log_notes(checked.notes)
            self.publish(uri)

    def _log_notes(self, notes: list[str]) -> None:
        for note in notes:
            self.server.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=note))

    async def findings(self, path: Path) -> list[Finding]:
        """Totem's latest findings on ``path`` (built-in and external), its built-in checks run now
        when it was never checked."""
        uri = uri_of(path)
        if uri not in self._builtin:
            await self.check(uri, external=False)
        return self._builtin.get(uri, []) + self._external.get(uri, [])

    def forget(self, uri: str) -> None:
        """A closed document: its diagnostics go away with it."""
        timer = self._pending.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self._builtin.pop(uri, None)
        self._external.pop(uri, None)
        self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def publish(self, uri: str) -> None:
        findings = self._builtin.get(uri, []) + self._external.get(uri, [])
        document = self.server.workspace.text_documents.get(uri)
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, diagnostics=[to_diagnostic(f) for f in findings], version=document.version if document else None
            )
        )
