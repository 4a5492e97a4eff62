"""``Engines``: one store, and one engine per project root opened on first need, for a door that
serves several projects at once (the language server's workspace folders, the MCP server's
projects, the ACP agent's sessions).

Every engine shares the store and the registry of running turns, so a session is busy whichever
engine started its turn. New settings (``reconfigure``) open new engines at their next use; the
replaced ones stay open until the end, as a turn may still run in one, and a background job
started there can still be stopped (``stop_job`` asks each). Leaving the block aborts every
running turn, waits for them (``abort_wait`` seconds at most), then closes the engines and the
store.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, Self

import anyio

from totem_engine.api.engine import Engine, open_project
from totem_engine.api.history import History
from totem_engine.api.running import Turns
from totem_engine.config import Config, load_config
from totem_engine.jobs import JobNotFound
from totem_engine.mcp.specs import ServerSpec
from totem_engine.store import Session, Store
from totem_engine.tools.command_runner import CommandRunner
from totem_engine.workspace.files import Workspace
from totem_engine.trust import AskTrust


class Engines:
    """``holder`` names the door in the sessions' leases; the other arguments are
    ``open_project``'s, the same for every project; ``on_open(engine)`` sees each engine opened
    (a door learning its keys, showing its notices)."""

    def __init__(
        self,
        *,
        holder: str,
        config_file: Path | None = None,
        editor_settings: dict[str, Any] | None = None,
        ask_trust: AskTrust | None = None,
        model: str | None = None,
        mode: str | None = None,
        workspace: Workspace | None = None,
        on_open: Callable[[Engine], None] | None = None,
        abort_wait: float = 10.0,
    ):
        self.holder = holder
        self.config_file = config_file
        self.editor_settings = editor_settings
        self.ask_trust = ask_trust
        self.model = model
        self.mode = mode
        self.workspace = workspace
        self.on_open = on_open
        self.abort_wait = abort_wait
        self.store = Store()
        self.turns = Turns()
        self.history = History(self.store)
        self.opened: list[Engine] = []
        self._by_root: dict[Path, Engine] = {}
        self._opening: dict[Path, anyio.Lock] = {}  # one a root: a trust question holds up its project only
        self._generation = 0  # moved on by new settings: an engine opened on the old ones is not kept
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self.turns.abort_all(self.abort_wait)
            try:
                await self._stack.aclose()
            finally:
                await self.store.close()

    async def engine(self, root: Path) -> Engine:
        """The engine of the project at ``root``, opened on first need and kept."""
        root = root.resolve()
        async with self._opening.setdefault(root, anyio.Lock()):
            while (engine := self._by_root.get(root)) is None:
                generation = self._generation
                opened = await self._stack.enter_async_context(self._open(root))
                self.opened.append(opened)  # closed at the end either way
                if generation == self._generation:
                    self._by_root[root] = opened
                    if self.on_open is not None:
                        self.on_open(opened)
        return engine

    async def of_session(self, session_id: str) -> tuple[Engine, Session]:
        """The engine of the session's own project, and the session (``SessionNotFound``)."""
        session = await self.store.get_session(session_id)
        engine = await self.engine(Path(session.cwd))
        return engine, await engine.session(session_id)

    @contextlib.asynccontextmanager
    async def private(
        self, root: Path, *, workspace: Workspace | None = None, command_runner: CommandRunner | None = None,
        mcp_servers: Sequence[ServerSpec] = (), extra_roots: Sequence[Path] = (),
    ) -> AsyncIterator[Engine]:
        """An engine of its own for one client session (an ACP session: its file system, its
        terminal, its MCP servers, its extra roots), over the shared store and turns; closed with
        the block."""
        async with self._open(
            root.resolve(), workspace=workspace, command_runner=command_runner, mcp_servers=mcp_servers, extra_roots=extra_roots,
        ) as engine:
            yield engine

    def reconfigure(self, editor_settings: dict[str, Any] | None, model: str | None = None) -> None:
        """New settings for the engines opened from now on (each root's at its next use)."""
        self.editor_settings = editor_settings
        if model is not None:
            self.model = model
        self._by_root = {}
        self._generation += 1

    def set_defaults(self, *, model: str | None = None, mode: str | None = None) -> None:
        """The door's choice for new sessions, in every engine, all or none (ConfigError for a
        model a project's providers do not serve; an engine still opening gets it at its opening)."""
        engines = list(self._by_root.values())
        for engine in engines:  # checked everywhere before anything changes
            if model is not None:
                engine.resolve_model(model)
            if mode is not None:
                engine.set_default_mode(mode)
        for engine in engines:
            if model is not None:
                engine.set_default_model(model)
        if model is not None:
            self.model = model
        if mode is not None:
            self.mode = mode
        self._generation += 1

    def abort(self, session_id: str) -> bool:
        """Abort the session's running turn in this process; False when none runs."""
        return self.turns.abort(session_id)

    async def stop_job(self, session_id: str, job_id: str) -> Any:
        """A background job stopped, whichever engine started it (``JobNotFound``)."""
        for engine in self.opened:
            try:
                return await engine.stop_job(session_id, job_id)
            except JobNotFound:
                continue
        raise JobNotFound(f"there is no job {job_id!r} in session {session_id}")

    # --- for the language server (totem lsp) ------------------------------------------------

    def door_config(self) -> Config:
        """The config of no project: the user's file and the door's layers (``config_file``,
        ``editor_settings``), for the door's own keys before any project is open (the size of a
        message it reads, how long it waits for an answer). ``ConfigError`` when invalid."""
        return load_config(None, config_file=self.config_file, editor_settings=self.editor_settings).config

    def _open(self, root: Path, **injections: Any) -> contextlib.AbstractAsyncContextManager[Engine]:
        return open_project(
            root, holder=self.holder, config_file=self.config_file, editor_settings=self.editor_settings,
            ask_trust=self.ask_trust, model=self.model, mode=self.mode, store=self.store, turns=self.turns,
            workspace=injections.pop("workspace", None) or self.workspace, **injections,
        )
