"""The engine for each workspace root the editor opened, configured from the editor's settings.

Config layers for the language server: the user file, the project file (restricted until the
project is trusted), the editor's settings (``initializationOptions.config`` and
``workspace/didChangeConfiguration``), in that order. A change of settings rebuilds the runtime
of each root before its next turn; one session store serves them all.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import anyio
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from totem_engine.config import ConfigError, load_config
from totem_engine.runtime import Runtime
from totem_engine.local import apply_local_default, release_local_provider
from totem_engine.local.server import LocalServerError
from totem_engine.store import Store
from totem_engine.trust import apply_trust
from totem_lsp.edits import EditorWorkspace
from totem_lsp.permission import Asker


class Projects:
    def __init__(self, server: LanguageServer, *, settings: dict[str, Any] | None, model: str | None):
        self.server = server
        self.settings = _without_nulls(settings or {})
        self.model = model  # the editor's choice, over the config's
        self.store = Store()
        self.workspace = EditorWorkspace(server)
        self._runtimes: dict[Path, Runtime] = {}
        self._retired: list[Runtime] = []  # replaced by new settings; a turn may still be using one
        self.notices: list[str] = []

    def roots(self) -> list[Path]:
        folders = [to_fs_path(f.uri) for f in self.server.workspace.folders.values()]
        roots = [Path(f).resolve() for f in folders if f]
        if not roots and self.server.workspace.root_path:
            roots = [Path(self.server.workspace.root_path).resolve()]
        return roots or [Path.cwd().resolve()]

    def root_for(self, uri: str | None) -> Path:
        """The workspace folder holding ``uri`` (the deepest one), else the first folder."""
        roots = self.roots()
        path = Path(to_fs_path(uri) or "").resolve() if uri else None
        if path is not None:
            holding = [r for r in roots if path == r or r in path.parents]
            if holding:
                return max(holding, key=lambda r: len(r.parts))
        return roots[0]

    async def runtime(self, root: Path) -> Runtime:
        runtime = self._runtimes.get(root)
        if runtime is None:
            loaded = load_config(root, editor_settings=self.settings)
            loaded, notice = await apply_trust(root, loaded, self.asker.trust)
            if notice:
                self.notices.append(notice)
            if self.model is None or self.model.startswith("local/"):
                # No model configured: the one `totem local setup` installed, while the server runs.
                try:
                    await anyio.to_thread.run_sync(apply_local_default, loaded.config, self.model)
                except LocalServerError as exc:
                    raise ConfigError(str(exc)) from None
            runtime = Runtime(root, loaded, store=self.store, workspace=self.workspace)
            self._runtimes[root] = runtime
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
        self._retired.extend(self._runtimes.values())
        self._runtimes = {}

    async def aclose(self) -> None:
        for runtime in [*self._retired, *self._runtimes.values()]:
            await runtime.close_providers()
        await self.store.close()
        release_local_provider()


def _without_nulls(settings: dict[str, Any]) -> dict[str, Any]:
    """Editors send null for settings the user left unset; unset means "not in this layer"."""
    out = {}
    for key, value in copy.deepcopy(settings).items():
        if isinstance(value, dict):
            value = _without_nulls(value)
        if value is not None:
            out[key] = value
    return out
