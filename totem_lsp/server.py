"""The Totem language server: thin handlers that delegate at once (docs/protocol.md).

Only pygls, lsprotocol and the method names load at start-up; the engine (pydantic, httpx, the
store) loads after ``initialize`` (service.py), so the server answers ``initialize`` about as
fast as a bare pygls server.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from totem_lsp import protocol

if TYPE_CHECKING:
    from totem_lsp.service import Service

VERSION = "0.1.0"


class BadToken(JsonRpcException):
    CODE = protocol.BAD_TOKEN


class TotemProtocol(LanguageServerProtocol):
    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"totem": {"protocolVersion": protocol.PROTOCOL_VERSION}}
        return result


class TotemServer(LanguageServer):
    def __init__(self, token: str | None = None):
        super().__init__("totem", VERSION, protocol_cls=TotemProtocol)
        self.token = token  # required in initializationOptions.token when listening on TCP
        self.options: dict[str, Any] = {}
        self._service: Service | None = None

    def service(self) -> "Service":
        if self._service is None:
            from totem_lsp.service import Service

            config = self.options.get("config")
            self._service = Service(self, settings=config if isinstance(config, dict) else None, model=self.options.get("model"))
        return self._service


def create_server(token: str | None = None) -> TotemServer:
    server = TotemServer(token)

    @server.feature(types.INITIALIZE)
    def initialize(ls: TotemServer, params: types.InitializeParams) -> None:
        options = protocol.plain(params.initialization_options)
        ls.options = options if isinstance(options, dict) else {}
        if ls.token is not None and not hmac.compare_digest(str(ls.options.get("token", "")), ls.token):
            # Answer with the error, then end the connection.
            asyncio.get_running_loop().call_later(0.05, _close, ls)
            raise BadToken("Wrong or missing token in initializationOptions.token.")

    @server.feature(types.INITIALIZED)
    def initialized(ls: TotemServer, params: types.InitializedParams) -> None:
        ls.service()  # load the engine now, before the first chat needs it

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: TotemServer, params: types.DidChangeConfigurationParams) -> None:
        await ls.service().reconfigure(params.settings)

    @server.feature(protocol.CHAT)
    async def chat(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().chat(params)

    @server.feature(protocol.ABORT)
    def abort(ls: TotemServer, params: Any) -> None:
        ls.service().abort(params)

    @server.feature(protocol.SESSIONS)
    async def sessions(ls: TotemServer, params: Any) -> list[dict[str, Any]]:
        return await ls.service().sessions()

    @server.feature(protocol.SESSION)
    async def session(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().session(params)

    @server.feature(protocol.MODELS)
    async def models(ls: TotemServer, params: Any) -> list[dict[str, Any]]:
        return await ls.service().models()

    @server.feature(protocol.SET_MODEL)
    async def set_model(ls: TotemServer, params: Any) -> dict[str, str]:
        return await ls.service().set_model(params)

    @server.feature(protocol.UNDO)
    async def undo(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().undo(params)

    @server.feature(protocol.REDO)
    async def redo(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().undo(params, redo=True)

    @server.command(protocol.CMD_ASK)
    async def ask_command(ls: TotemServer, arguments: Any) -> dict[str, Any]:
        return await ls.service().ask(arguments)

    @server.command(protocol.CMD_ABORT)
    def abort_command(ls: TotemServer, arguments: Any) -> dict[str, bool]:
        return ls.service().abort(arguments)

    @server.command(protocol.CMD_UNDO)
    async def undo_command(ls: TotemServer, arguments: Any) -> dict[str, Any]:
        return await ls.service().undo(arguments)

    @server.command(protocol.CMD_REDO)
    async def redo_command(ls: TotemServer, arguments: Any) -> dict[str, Any]:
        return await ls.service().undo(arguments, redo=True)

    return server


def _close(ls: TotemServer) -> None:
    writer = ls.protocol.writer
    if writer is not None:
        writer.close()
