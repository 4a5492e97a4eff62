"""The ACP agent's methods, thin: each checks its session and delegates (docs/acp.md).

The SDK's connection calls these by name (``acp.interfaces.Agent``), each request in a task of
its own, so ``session/cancel`` reaches a prompt that is still running. Engine refusals become
JSON-RPC errors with their own message (errors.py, one table), never a crash.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio
from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    CloseSessionResponse,
    DeleteSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    LogoutResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from totem_acp.errors import engine_errors
from totem_acp.mcp_servers import Declared, client_specs
from totem_acp.prompt import Block
from totem_acp.replay import replayed
from totem_acp.session import AcpSession, extra_roots, project_root
from totem_acp.terminal import ClientTerminals
from totem_acp.trust_question import ask_trust
from totem_acp.workspace import ClientWorkspace
from totem_engine.api.engines import Engines
from totem_engine.api.errors import SessionBusy

log = logging.getLogger(__name__)
CLOSE_WAIT = 10.0  # seconds the aborted turns get to end when the process stops


class TotemAgent:
    def __init__(self) -> None:
        self.client: Any = None
        self.capabilities = ClientCapabilities()
        # One store for the process; each session opens an engine of its own over it (_open).
        self.engines = Engines(holder="totem acp", abort_wait=CLOSE_WAIT)
        self.sessions: dict[str, AcpSession] = {}
        self._stacks: dict[str, contextlib.AsyncExitStack] = {}  # session id -> its engine, open
        # Sent once the answer naming the session has gone out (``after_answer``): the client
        # cannot place an update for a session it has not heard of yet.
        self._greetings: dict[str, Callable[[], Awaitable[None]]] = {}
        self.stopped_by: str | None = None  # the signal that stops the process, for the prompts' answers
        self._declared: dict[str, list[Declared] | None] = {}  # session id -> its client's mcpServers, to reopen it
        self._trust_asked: set[Path] = set()  # the untrusted projects asked about in this process
        # A session/prompt's or session/resume's request id -> (method, session), until answered.
        self._requests: dict[Any, tuple[str, str]] = {}

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
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), resume=SessionResumeCapabilities(), close=SessionCloseCapabilities(),
                    delete=SessionDeleteCapabilities(), additional_directories=SessionAdditionalDirectoriesCapabilities(),
                ),
            ),
            agent_info=Implementation(name="totem", title="Totem", version=_version()),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **_: Any) -> None:
        raise RequestError.invalid_params({"message": "Totem has no authentication methods: models are configured in its config"})

    async def logout(self, **_: Any) -> LogoutResponse:
        """Nothing to log out of (no ``authMethods``): answered, not advertised (``auth.logout``)."""
        return LogoutResponse()

    async def new_session(
        self, cwd: str, mcp_servers: list[Declared] | None = None, additional_directories: list[str] | None = None, **_: Any
    ) -> NewSessionResponse:
        root, extra = project_root(cwd), extra_roots(additional_directories)
        with engine_errors():
            session = await self._open(root, mcp_servers, None, extra)
            modes, options = await session.modes(), await session.config_options()

        async def greet() -> None:
            await session.frontend.send(session.commands_update())

        self._greetings[session.id] = greet
        return NewSessionResponse(session_id=session.id, modes=modes, config_options=options)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Declared] | None = None,
        additional_directories: list[str] | None = None, **_: Any,
    ) -> LoadSessionResponse:
        """The stored session replayed. One already open on this connection is checked as a fresh
        process checks it: a ``cwd`` other than its project is refused (``SessionElsewhere``)."""
        root, extra = project_root(cwd), extra_roots(additional_directories)
        with engine_errors():
            session = await self._stored(root, mcp_servers, session_id, extra)
            history = session.engine.history
            updates = replayed(await history.messages(session_id), await history.todos(session_id), root)
        for update in updates:
            await session.frontend.send(update)
        await session.frontend.send(session.commands_update())
        with engine_errors():
            await session.tell_changes()  # its title
            return LoadSessionResponse(modes=await session.modes(), config_options=await session.config_options())

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: list[Declared] | None = None,
        additional_directories: list[str] | None = None, **_: Any,
    ) -> ResumeSessionResponse:
        """The stored session opened as ``session/load`` opens it, without the replay: the client
        has the conversation already. Its commands and title follow the answer."""
        root, extra = project_root(cwd), extra_roots(additional_directories)
        with engine_errors():
            session = await self._stored(root, mcp_servers, session_id, extra)
            modes, options = await session.modes(), await session.config_options()

        async def greet() -> None:
            await session.frontend.send(session.commands_update())
            with contextlib.suppress(Exception):  # a title not told is not worth a traceback
                await session.tell_changes()

        self._greetings[session.id] = greet
        return ResumeSessionResponse(modes=modes, config_options=options)

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        """The session's running turn aborted, then its engine closed (its MCP servers, jobs and
        terminals stopped); a later request naming it is refused until it is loaded again."""
        session = self._session(session_id)
        await self._close(session)
        return CloseSessionResponse()

    async def delete_session(self, session_id: str, **_: Any) -> DeleteSessionResponse:
        """The stored session deleted (``History.delete``): closed first when open here, refused
        while a turn runs in it (here: ``SessionBusy``; elsewhere: ``SessionInUse``)."""
        with engine_errors():
            session = self.sessions.get(session_id)
            if session is not None:
                if session.busy:
                    raise SessionBusy(session_id, "a turn is still running; it cannot be deleted")
                await self._close(session)
            await self.engines.history.delete(session_id)
        return DeleteSessionResponse()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> ListSessionsResponse:
        """The stored sessions (of ``cwd`` when given), newest first."""
        import datetime

        listed = await self.engines.history.sessions(project_root(cwd) if cwd else None)
        return ListSessionsResponse(sessions=[
            SessionInfo(
                session_id=s.id, cwd=s.cwd, title=s.title or None,
                updated_at=datetime.datetime.fromtimestamp(s.updated_at, datetime.UTC).isoformat(),
            )
            for s in listed
        ])

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> SetSessionModeResponse:
        session = self._session(session_id)
        with engine_errors():
            await session.set_mode(mode_id)
            await session.tell_changes()  # the mode option
        return SetSessionModeResponse()

    async def set_session_model(self, session_id: str, model_id: str, **_: Any) -> dict[str, Any]:
        """CodeCompanion's ``session/set_model`` (unstable, gone from the schema): the ``model`` option."""
        session = self._session(session_id)
        with engine_errors():
            await session.set_model(model_id)
            await session.tell_changes()
        return {}

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool, **_: Any) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        with engine_errors():
            if config_id == "mode" and isinstance(value, str):
                await session.set_mode(value)
            elif config_id == "model" and isinstance(value, str):
                await session.set_model(value)
            elif config_id == "thought_level" and isinstance(value, str):
                await session.set_thought_level(value)
            else:
                raise RequestError.invalid_params(
                    {"message": f"there is no option {config_id!r} taking {value!r}: model, mode or thought_level"}
                )
            return SetSessionConfigOptionResponse(config_options=await session.config_options())

    async def prompt(self, session_id: str, prompt: list[Block], **_: Any) -> PromptResponse:
        session = self._session(session_id)
        engine = session.engine
        if engine.trust_notice and not engine.trusted and session.root not in self._trust_asked:
            self._trust_asked.add(session.root)
            trusted = await ask_trust(session.frontend, engine, engine.trust_notice)
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

    def observe(self, incoming: bool, message: dict[str, Any]) -> Awaitable[None] | None:
        """Each message in or out (the connection's observer): a ``session/prompt``'s id kept
        until it is answered, so ``$/cancel_request`` can name it; a ``session/resume``'s answer
        (which does not name its session) followed by its greeting."""
        params = message.get("params")
        if incoming and message.get("method") in ("session/prompt", "session/resume") and "id" in message:
            self._requests[message["id"]] = (message["method"], str(params.get("sessionId")) if isinstance(params, dict) else "")
        elif not incoming and "method" not in message:
            method, session_id = self._requests.pop(message.get("id"), ("", ""))
            if method == "session/resume":
                return self.after_answer(session_id)
        return None

    async def cancel_request(self, request_id: int | str | None, **_: Any) -> None:
        """``$/cancel_request``: a running ``session/prompt`` is cancelled as ``session/cancel``
        cancels it (it answers ``cancelled``); Totem's other requests are answered at once, so
        one named there, or an id already answered, is ignored quietly."""
        method, session_id = self._requests.get(request_id, ("", ""))
        if method == "session/prompt":
            await self.cancel(session_id)

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
            await self.engines.aclose()

    async def _open(
        self, root: Path, mcp_servers: list[Declared] | None, session_id: str | None, extra: tuple[Path, ...] = (),
    ) -> AcpSession:
        """The session with an engine of its own: a new stored session, or ``session_id`` (of
        this project: ``SessionElsewhere`` otherwise, ``SessionNotFound`` when there is none);
        ``extra``: its ``additionalDirectories``, roots its file tools reach besides ``root``."""
        specs, left_out = client_specs(mcp_servers)
        fs = self.capabilities.fs
        workspace = ClientWorkspace(self.client, reads=bool(fs and fs.read_text_file), writes=bool(fs and fs.write_text_file))
        terminals = ClientTerminals(self.client) if self.capabilities.terminal else None
        stack = contextlib.AsyncExitStack()
        try:
            engine = await stack.enter_async_context(
                self.engines.private(root, workspace=workspace, command_runner=terminals, mcp_servers=specs, extra_roots=extra)
            )
            if terminals is not None and not engine.config.acp_client_terminal:
                # The runner is given at opening and the config is read there: opened again without it.
                terminals = None
                await stack.aclose()
                engine = await stack.enter_async_context(
                    self.engines.private(root, workspace=workspace, mcp_servers=specs, extra_roots=extra)
                )
            stored = await engine.new_session() if session_id is None else await engine.session(session_id)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stack.aclose()
            raise
        forms = bool(self.capabilities.elicitation and self.capabilities.elicitation.form is not None)
        session = AcpSession(engine, stored.id, self.client, workspace=workspace, terminals=terminals, forms=forms)
        session.notices += left_out
        self.sessions[stored.id] = session
        self._declared[stored.id] = mcp_servers
        self._stacks[stored.id] = stack
        return session

    async def _stored(
        self, root: Path, mcp_servers: list[Declared] | None, session_id: str, extra: tuple[Path, ...],
    ) -> AcpSession:
        """The stored session ``session_id`` open on this connection with the roots ``extra``:
        the one already open (checked as a fresh process checks it: ``SessionElsewhere`` for
        another ``cwd``), else a new engine for it (also when its roots differ)."""
        session = self.sessions.get(session_id)
        if session is not None and session.engine.extra_roots != extra:
            await self._close(session)  # other roots: an engine of its own for them
            session = None
        if session is None:
            return await self._open(root, mcp_servers, session_id, extra)
        await session.engine.session(session_id, root=root)
        return session

    async def _close(self, session: AcpSession) -> None:
        """``session``'s turn aborted and given ``CLOSE_WAIT`` seconds to end, then its engine closed."""
        session.cancel()
        with anyio.move_on_after(CLOSE_WAIT):
            while session.busy:
                await anyio.sleep(0.02)
        self.sessions.pop(session.id, None)
        self._declared.pop(session.id, None)
        self._greetings.pop(session.id, None)
        with anyio.CancelScope(shield=True):
            await self._stacks.pop(session.id).aclose()

    async def _reopen(self, session: AcpSession) -> AcpSession:
        """The session with an engine opened anew (its project now trusted: its whole config)."""
        await self._stacks.pop(session.id).aclose()
        del self.sessions[session.id]
        return await self._open(session.root, self._declared.pop(session.id, None), session.id, session.engine.extra_roots)

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"message": f"no open session {session_id!r}: session/new or session/load it first"})
        return session


def _version() -> str:
    try:
        return version("totem-lsp")
    except PackageNotFoundError:
        return "0"
