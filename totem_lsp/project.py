"""The engine for each workspace root the editor opened, configured from the editor's settings.

One ``Engines`` (totem_engine/api/engines.py) serves every root over one session store. Config
layers for the language server: the user file, the project file (restricted until the project
is trusted), the editor's settings (``initializationOptions.config`` and
``workspace/didChangeConfiguration``), in that order. A change of settings opens a new engine of
each root at its next use; a turn running in the old one keeps it. Which root a document or a
session belongs to is the editor's business, so it is answered here.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from totem_engine.api.engine import Engine
from totem_engine.api.engines import Engines
from totem_engine.api.history import Session
from totem_engine.config_error import ConfigError
from totem_lsp.edits import EditorWorkspace
from totem_lsp.permission import Asker
from totem_lsp.uris import path_of

PERMISSION_TIMEOUT = 600.0  # the config's default, while the config is invalid (its opening then fails anyway)


class Projects:
    def __init__(self, server: LanguageServer, *, settings: dict[str, Any] | None, model: str | None):
        self.server = server
        self.workspace = EditorWorkspace(server)
        # The editor's model (initializationOptions.model) over the config's; no model configured
        # at all: the one `totem local setup` installed, started while the server runs.
        self.engines = Engines(
            holder="totem lsp", editor_settings=_without_nulls(settings or {}), model=model,
            ask_trust=self._ask_trust, workspace=self.workspace, on_open=self._opened,
        )

    def roots(self) -> list[Path]:
        roots = [path for f in self.server.workspace.folders.values() if (path := path_of(f.uri))]
        if not roots and self.server.workspace.root_path:
            roots = [Path(self.server.workspace.root_path).resolve()]
        return roots or [Path.cwd().resolve()]

    def root_for(self, uri: str | None) -> Path:
        """The workspace folder holding ``uri`` (the deepest one), else the first folder."""
        roots = self.roots()
        path = path_of(uri) if uri else None
        if path is not None:
            holding = [r for r in roots if path == r or r in path.parents]
            if holding:
                return max(holding, key=lambda r: len(r.parts))
        return roots[0]

    async def engine(self, uri: str | None = None) -> Engine:
        """The engine of the folder holding ``uri`` (else the first folder's)."""
        return await self.engines.engine(self.root_for(uri))

    async def of_session(self, session_id: str) -> tuple[Engine, Session]:
        """The engine of the session's own project, whatever document the request came from."""
        return await self.engines.of_session(session_id)

    def asker_for(self, engine: Engine) -> Asker:
        return Asker(self.server, engine.config.permission_timeout)

    def message_limit(self) -> int | None:
        """``lsp_max_message_bytes`` of the user's file and the editor's settings (a project's
        file has no say over the editor's connection); None while they are invalid."""
        try:
            return self.engines.door_config().lsp_max_message_bytes
        except ConfigError:
            return None

    def reconfigure(self, settings: dict[str, Any] | None, model: str | None = None) -> None:
        """New editor settings: each root's engine opened again at its next use."""
        self.engines.reconfigure(_without_nulls(settings or {}), model)

    async def aclose(self) -> None:
        """Every running turn aborted and waited for, then the engines and the store closed."""
        await self.engines.aclose()

    async def _ask_trust(self, root: Path, reasons: list[str]) -> bool:
        """Asked before the project's engine exists: the timeout is the user's and the editor's."""
        try:
            timeout = self.engines.door_config().permission_timeout
        except ConfigError:
            timeout = PERMISSION_TIMEOUT
        return await Asker(self.server, timeout).trust(root, reasons)

    def _opened(self, engine: Engine) -> None:
        """What an untrusted project's own config lost, shown once, as the engine opens."""
        if engine.trust_notice:
            self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=engine.trust_notice))


def _without_nulls(settings: dict[str, Any]) -> dict[str, Any]:
    """Editors send null for settings the user left unset; unset means "not in this layer"."""
    out = {}
    for key, value in copy.deepcopy(settings).items():
        if isinstance(value, dict):
            value = _without_nulls(value)
        if value is not None:
            out[key] = value
    return out
