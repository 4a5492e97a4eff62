"""The engine for each workspace root the editor opened, configured from the editor's settings.

Config layers for the language server: the user file, the project file (restricted until the
project is trusted), the editor's settings (``initializationOptions.config`` and
``workspace/didChangeConfiguration``), in that order. A change of settings rebuilds the runtime
of each root before its next turn; one session store serves them all.
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Any

from pygls.lsp.server import LanguageServer

from totem_engine.config import ConfigError
from totem_engine.local.errors import LocalServerError
from totem_engine.opening import open_runtime as open_project
from totem_engine.runtime import Runtime
from totem_engine.store import Store
from totem_lsp.edits import EditorWorkspace
from totem_lsp.permission import Asker
from totem_lsp.uris import path_of


class Projects:
    def __init__(self, server: LanguageServer, *, settings: dict[str, Any] | None, model: str | None):
        self.server = server
        self.settings = _without_nulls(settings or {})
        self.model = model  # the editor's choice, over the config's
        self.mode: str | None = None  # totem/setMode without a session: new sessions' mode, over the config's
        self.store = Store()
        self.workspace = EditorWorkspace(server)
        self._runtimes: dict[Path, Runtime] = {}
        # Every runtime opened, closed with the server: one replaced by new settings stays open,
        # as a turn may still be using it.
        self._opened = contextlib.AsyncExitStack()
        self.opened: list[Runtime] = []  # the same runtimes, for what outlives a rebuild (jobs)
        self.notices: list[str] = []

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

    async def runtime(self, root: Path) -> Runtime:
        runtime = self._runtimes.get(root)
        if runtime is None:
            # No model configured: the one `totem local setup` installed, while the server runs.
            opening = open_project(
                root, editor_settings=self.settings, ask_trust=self.asker.trust, model=self.model,
                store=self.store, workspace=self.workspace, holder="totem lsp",
            )
            try:
                runtime = await self._opened.enter_async_context(opening)
            except LocalServerError as exc:
                raise ConfigError(str(exc)) from None
            if runtime.trust_notice:
                self.notices.append(runtime.trust_notice)
            self._runtimes[root] = runtime
            self.opened.append(runtime)
        return runtime

    @property
    def asker(self) -> Asker:
        """For questions asked before a runtime exists (trust): the editor's timeout or the default."""
        from totem_engine.config import Config

        timeout = self.settings.get("permission_timeout", Config().permission_timeout)
        return Asker(self.server, float(timeout))

    def asker_for(self, runtime: Runtime) -> Asker:
        return Asker(self.server, runtime.config.permission_timeout)

    def default_model(self, runtime: Runtime) -> str:
        return runtime.resolve_model(self.model)

    async def reconfigure(self, settings: dict[str, Any] | None, model: str | None = None) -> None:
        """New editor settings: runtimes are rebuilt before their next use (running turns keep theirs)."""
        self.settings = _without_nulls(settings or {})
        if model is not None:
            self.model = model
        self._runtimes = {}

    async def aclose(self) -> None:
        await self._opened.aclose()
        await self.store.close()


def _without_nulls(settings: dict[str, Any]) -> dict[str, Any]:
    """Editors send null for settings the user left unset; unset means "not in this layer"."""
    out = {}
    for key, value in copy.deepcopy(settings).items():
        if isinstance(value, dict):
            value = _without_nulls(value)
        if value is not None:
            out[key] = value
    return out
