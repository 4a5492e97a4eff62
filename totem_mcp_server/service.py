"""What the tools work with: the session store, one engine per project, the turns running here.

One ``Store`` serves every project (the user's history database). A project's engine is opened
the first time a tool needs it, through ``opening.open_project`` as ``totem run`` opens one (the
user config, ``--config``, the project's own config as its trust allows; nobody asked about
trust), and kept until the server stops. A turn runs in the service's task group, not in the
request that started it, so a request cancelled by its client aborts the turn cleanly instead
of cutting it off. At the end, every running turn is aborted and waited for, then the engines
and the store are closed.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Self

import anyio
from anyio.abc import TaskGroup

from totem_engine.config import ConfigError
from totem_engine.local.errors import LocalServerError
from totem_engine.opening import open_runtime as open_project
from totem_engine.runtime import Runtime
from totem_engine.store import Session, Store
from totem_engine.turn.loop import Turn
from totem_engine.turn.terms import TurnResult
from totem_mcp_server.redaction import Redactor

HOLDER = "totem mcp serve"  # as a session's lease names this front end to another process
ABORT_WAIT = 10.0  # seconds the server's end waits for the turns it aborted


class Service:
    """``root``: the project a tool means when it names none (``--cwd``); ``config_file``:
    ``--config``, a layer of every project's config; ``redactor``: the keys no result may carry."""

    def __init__(self, *, root: Path, config_file: Path | None, redactor: Redactor, store: Store | None = None):
        self.root = root.resolve()
        self.config_file = config_file
        self.redactor = redactor
        self.store = store or Store()
        self.turns: dict[str, Turn] = {}  # session id -> the turn this process runs in it now
        self._runtimes: dict[Path, Runtime] = {}
        self._opening = anyio.Lock()
        self._engines = contextlib.AsyncExitStack()  # every engine opened, closed at the end
        self._stack = contextlib.AsyncExitStack()
        self._group: TaskGroup | None = None

    async def __aenter__(self) -> Self:
        # Closed in reverse: the turns aborted, the group left, the engines closed, the store.
        self._stack.push_async_callback(self.store.close)
        self._stack.push_async_callback(self._engines.aclose)
        self._group = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.push_async_callback(self._abort_all)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.__aexit__(*exc_info)

    async def _abort_all(self) -> None:
        """Every running turn aborted and waited for (``ABORT_WAIT`` seconds at most, then cut)."""
        assert self._group is not None
        with anyio.CancelScope(shield=True):
            for turn in list(self.turns.values()):
                turn.abort()
            with anyio.move_on_after(ABORT_WAIT):
                while self.turns:
                    await anyio.sleep(0.05)
        self._group.cancel_scope.cancel()

    def project(self, given: str | None) -> Path:
        """The project root a tool was given (absolute, or relative to ``root``), else ``root``;
        ConfigError when it is not a directory."""
        found = (self.root / given).resolve() if given else self.root
        if not found.is_dir():
            raise ConfigError(f"{found} is not a directory")
        return found

    async def runtime(self, root: Path) -> Runtime:
        """The engine of the project at ``root``, opened on first need and kept."""
        async with self._opening:
            runtime = self._runtimes.get(root)
            if runtime is None:
                opening = open_project(root, config_file=self.config_file, store=self.store, holder=HOLDER)
                try:
                    runtime = await self._engines.enter_async_context(opening)
                except LocalServerError as exc:
                    raise ConfigError(str(exc)) from None
                self.redactor.learn(runtime.config)
                self._runtimes[root] = runtime
        return runtime

    async def session(self, session_id: str) -> tuple[Session, Runtime]:
        """The session and its project's engine (SessionNotFound when there is no such session)."""
        session = await self.store.get_session(session_id)
        runtime = await self.runtime(Path(session.cwd).resolve())
        return await runtime.project_session(session_id), runtime

    async def run(self, turn: Turn) -> TurnResult:
        """The turn run to its end in the service's task group. When the request waiting for it
        is cancelled, the turn is aborted and its end still awaited. Raises what ``Turn.run``
        raises (``SessionInUse``)."""
        assert self._group is not None, "the service is not open"
        ended = anyio.Event()
        outcome: list[TurnResult | Exception] = []

        async def run() -> None:
            try:
                outcome.append(await turn.run())
            except Exception as exc:  # noqa: BLE001 - given to the request, not to the task group
                outcome.append(exc)
            finally:
                ended.set()

        registered = self.turns.setdefault(turn.session_id, turn) is turn  # a second one is refused by its lease
        self._group.start_soon(run)
        try:
            await ended.wait()
        except anyio.get_cancelled_exc_class():
            turn.abort()
            with anyio.CancelScope(shield=True):
                await ended.wait()
            raise
        finally:
            if registered:
                del self.turns[turn.session_id]
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return outcome[0]
