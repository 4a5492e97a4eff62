"""The ACP agent's methods, thin: each checks its session and delegates (docs/acp.md).

The SDK's connection calls these by name (``acp.interfaces.Agent``), each request in a task of
its own, so ``session/cancel`` reaches a prompt that is still running. Engine errors become
JSON-RPC errors with their own message (``engine_errors``), never a crash.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio
from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from totem_acp.mcp_servers import Declared, client_specs
from totem_acp.prompt import Block
from totem_acp.replay import replayed
from totem_acp.session import AcpSession, project_root
from totem_acp.trust_question import ask_trust
from totem_acp.workspace import ClientWorkspace
from totem_engine.config_error import ConfigError
from totem_engine.local.errors import LocalServerError
from totem_engine.opening import open_runtime as open_project
from totem_engine.store import SessionElsewhere, SessionNotFound, Store

log = logging.getLogger(__name__)
CLOSE_WAIT = 10.0  # seconds the aborted turns get to end when the process stops


class TotemAgent:
    def __init__(self) -> None:
        self.client: Any = None
        self.capabilities = ClientCapabilities()
        self.store: Store | None = None
        self.sessions: dict[str, AcpSession] = {}
        self._stacks: dict[str, contextlib.AsyncExitStack] = {}
        # Sent once the answer naming the session has gone out (``after_answer``): the client
        # cannot place an update for a session it has not heard of yet.
        self._greetings: dict[str, Callable[[], Awaitable[None]]] = {}
        self.stopped_by: str | None = None  # the signal that stops the process, for the prompts' answers
        self._declared: dict[str, list[Declared] | None] = {}  # session id -> its client's mcpServers, to reopen it
        self._trust_asked: set[Path] = set()  # the untrusted projects asked about in this process

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: ClientCapabilities | None = None, client_info: Any = None, **_: Any
    ) -> InitializeResponse:
        self.capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="totem", title="Totem", version=_version()),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **_: Any) -> None:
        raise RequestError.invalid_params({"message": "Totem has no authentication methods: models are configured in its config"})

    async def new_session(
        self, cwd: str, mcp_servers: list[Declared] | None = None, additional_directories: list[str] | None = None, **_: Any
    ) -> NewSessionResponse:
        root = project_root(cwd)
        with engine_errors():
            session = await self._open(root, mcp_servers, None)
        modes, options = await session.modes(), await session.config_options()

        async def greet() -> None:
            await session.frontend.send(session.commands_update())

        self._greetings[session.id] = greet
        return NewSessionResponse(session_id=session.id, modes=modes, config_options=options)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Declared] | None = None,
        additional_directories: list[str] | None = None, **_: Any,
    ) -> LoadSessionResponse:
        root = project_root(cwd)
        with engine_errors():
            session = self.sessions.get(session_id) or await self._open(root, mcp_servers, session_id)
            stored = await session.runtime.store.get_session(session_id)
            messages = await session.runtime.store.messages(session_id)
        for update in replayed(stored, messages, root):
            await session.frontend.send(update)
        await session.frontend.send(session.commands_update())
        return LoadSessionResponse(modes=await session.modes(), config_options=await session.config_options())

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> ListSessionsResponse:
        """The stored sessions (of ``cwd`` when given), newest first."""
        import datetime

        store = await self._store()
        listed = await store.list_sessions(cwd=str(project_root(cwd)) if cwd else None)
        return ListSessionsResponse(sessions=[
            SessionInfo(
                session_id=s.id, cwd=s.cwd, title=s.title or None,
                updated_at=datetime.datetime.fromtimestamp(s.updated_at, datetime.UTC).isoformat(),
            )
            for s in listed
        ])

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> SetSessionModeResponse:
        await self._session(session_id).set_mode(mode_id)
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool, **_: Any) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        if config_id == "mode" and isinstance(value, str):
            await session.set_mode(value)
        elif config_id == "model" and isinstance(value, str):
            with engine_errors():
                await session.set_model(value)
        else:
            raise RequestError.invalid_params({"message": f"there is no option {config_id!r} taking {value!r}: model or mode"})
        return SetSessionConfigOptionResponse(config_options=await session.config_options())

    async def prompt(self, session_id: str, prompt: list[Block], **_: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.runtime.trust_notice and not session.runtime.trusted and session.root not in self._trust_asked:
            self._trust_asked.add(session.root)
            trusted = await ask_trust(session.frontend, session.root, session.runtime.trust_notice)
            if trusted is None:  # not an answer: the client is cancelling the prompt
                self._trust_asked.discard(session.root)
                return PromptResponse(stop_reason="cancelled")
            if trusted:
                with engine_errors():
                    session = await self._reopen(session)
        with engine_errors():
            response = await session.prompt(prompt)
        if self.stopped_by is not None and response.stop_reason == "cancelled":
            raise RequestError(-32603, f"Totem was stopped ({self.stopped_by}) during the turn")
        return response

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    def after_answer(self, session_id: str) -> Awaitable[None] | None:
        """What to send once the answer naming ``session_id`` has gone out (the connection's
        observer calls this for each outgoing result); None when nothing waits."""
        greet = self._greetings.pop(session_id, None)
        return greet() if greet is not None else None

    async def aclose(self, *, stopped_by: str | None = None) -> None:
        """Every running turn aborted and given ``CLOSE_WAIT`` seconds to end, then every
        session's engine closed (its MCP servers, jobs and terminals stopped), then the store."""
        self.stopped_by = stopped_by
        for session in self.sessions.values():
            session.cancel()
        with anyio.move_on_after(CLOSE_WAIT):
            while any(s.busy for s in self.sessions.values()):
                await anyio.sleep(0.02)
        with anyio.CancelScope(shield=True):
            for session_id in list(self._stacks):
                await self._stacks.pop(session_id).aclose()
            if self.store is not None:
                await self.store.close()

    async def _store(self) -> Store:
        if self.store is None:
            self.store = Store()
        return self.store

    async def _open(self, root: Any, mcp_servers: list[Declared] | None, session_id: str | None) -> AcpSession:
        """The session's engine: a new store session, or ``session_id`` (of this project)."""
        specs, left_out = client_specs(mcp_servers)
        fs = self.capabilities.fs
        workspace = ClientWorkspace(self.client, reads=bool(fs and fs.read_text_file), writes=bool(fs and fs.write_text_file))
        store = await self._store()
        stack = contextlib.AsyncExitStack()
        try:
            try:
                runtime = await stack.enter_async_context(open_project(root, store=store, workspace=workspace))
            except LocalServerError as exc:
                raise ConfigError(str(exc)) from None
            runtime.mcp.join(specs)
            if session_id is None:
                stored = await runtime.new_session(model=runtime.resolve_model(None), mode=runtime.config.mode, text="")
            else:
                stored = await runtime.project_session(session_id)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stack.aclose()
            raise
        workspace.session_id = stored.id
        session = AcpSession(runtime, stored.id, self.client, workspace, terminal=bool(self.capabilities.terminal))
        session.notices += left_out
        self.sessions[stored.id] = session
        self._declared[stored.id] = mcp_servers
        self._stacks[stored.id] = stack
        return session

    async def _reopen(self, session: AcpSession) -> AcpSession:
        """The session with an engine opened anew (its project now trusted: its whole config)."""
        await self._stacks.pop(session.id).aclose()
        del self.sessions[session.id]
        return await self._open(session.root, self._declared.pop(session.id, None), session.id)

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"message": f"no open session {session_id!r}: session/new or session/load it first"})
        return session


@contextlib.contextmanager
def engine_errors() -> Iterator[None]:
    """Engine errors as JSON-RPC errors carrying their own message."""
    try:
        yield
    except ConfigError as exc:
        raise RequestError(-32603, str(exc), {"errorClass": "ConfigError"}) from None
    except (SessionNotFound, SessionElsewhere) as exc:
        raise RequestError(-32602, str(exc)) from None


def _version() -> str:
    try:
        return version("totem-lsp")
    except PackageNotFoundError:
        return "0"
