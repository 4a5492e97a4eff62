"""What the tools work with: the engines (one store, one engine per project) and the task group
the turns run in.

A project's engine is opened the first time a tool needs it (``Engines``, holder
``totem mcp serve``: the user config, ``--config``, the project's own config as its trust allows;
nobody asked about trust), and kept until the server stops; each one opened teaches the engine's redaction
its keys. A turn runs in the service's task group, not in the request that started it, so a
request cancelled by its client aborts the turn cleanly and still waits for its end instead of
cutting it off. At the end, every running turn is aborted and waited for, then the engines and
the store are closed.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Self

import anyio
from anyio.abc import TaskGroup

from totem_engine.api.engine import Engine
from totem_engine.api.engines import Engines
from totem_engine.api.errors import EngineError, SessionBusy
from totem_engine.api.history import Session
from totem_engine.api.running import Result, Running
from totem_engine.api.secrets import learn

HOLDER = "totem mcp serve"  # as a session's lease names this front end to another process
ABORT_WAIT = 10.0  # seconds the server's end waits for the turns it aborted


class Service:
    """``root``: the project a tool means when it names none (``--cwd``); ``config_file``:
    ``--config``, a layer of every project's config. Each project opened teaches the engine's
    redaction its keys (``api.secrets.learn``): no result carries one."""

    def __init__(self, *, root: Path, config_file: Path | None):
        self.root = root.resolve()
        self.engines = Engines(
            holder=HOLDER, config_file=config_file, on_open=lambda engine: learn(engine.config), abort_wait=ABORT_WAIT
        )
        self._stack = contextlib.AsyncExitStack()
        self._group: TaskGroup | None = None

    async def __aenter__(self) -> Self:
        # Closed in reverse: the turns aborted and waited for, the group left, the engines closed.
        await self._stack.enter_async_context(self.engines)
        self._group = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.push_async_callback(self._abort_all)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.__aexit__(*exc_info)

    async def _abort_all(self) -> None:
        assert self._group is not None
        with anyio.CancelScope(shield=True):
            await self.engines.turns.abort_all(ABORT_WAIT)
        self._group.cancel_scope.cancel()

    def project(self, given: str | None) -> Path:
        """The project root a tool was given (absolute, or relative to ``root``), else ``root``;
        refused when it is not a directory."""
        found = (self.root / given).resolve() if given else self.root
        if not found.is_dir():
            raise EngineError(f"{found} is not a directory")
        return found

    async def engine(self, project: str | None) -> Engine:
        """The engine of the project a tool was given (``project``)."""
        return await self.engines.engine(self.project(project))

    async def session(self, session_id: str) -> tuple[Engine, Session]:
        """The engine of the session's own project, and the session (``SessionNotFound``)."""
        return await self.engines.of_session(session_id)

    async def run(self, running: Running) -> Result:
        """The turn run to its end in the service's task group. When the request waiting for it
        is cancelled, the turn is aborted and its end still awaited. Raises what ``result()``
        raises (``SessionInUse``: another process runs the session)."""
        assert self._group is not None, "the service is not open"
        ended = anyio.Event()
        outcome: list[Result | Exception] = []

        async def run() -> None:
            try:
                outcome.append(await running.result())
            except Exception as exc:  # noqa: BLE001 - given to the request, not to the task group
                outcome.append(exc)
            finally:
                ended.set()

        self._group.start_soon(run)
        try:
            await ended.wait()
        except anyio.get_cancelled_exc_class():
            running.abort()
            with anyio.CancelScope(shield=True):
                await ended.wait()
            raise
        if not outcome:  # the server is stopping: its task group cut the turn short
            raise SessionBusy(running.session_id, "the server is stopping")
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return outcome[0]
