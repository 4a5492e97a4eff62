"""The Totem language server: thin handlers that delegate at once (docs/protocol.md).

Only pygls, lsprotocol and the method names load at start-up; the engine (pydantic, httpx, the
store) loads after ``initialize`` (service.py), so the server answers ``initialize`` about as
fast as a bare pygls server.
"""

from __future__ import annotations

import asyncio
import sys
import logging
import threading
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import RPCRequest

from totem_lsp import protocol
from totem_lsp.code_actions import code_actions
from totem_lsp.options import InitializationOptions

if TYPE_CHECKING:
    from totem_lsp.service import Service

VERSION = "0.1.0"
log = logging.getLogger(__name__)


class BadToken(JsonRpcException):
    CODE = protocol.BAD_TOKEN


class TotemProtocol(LanguageServerProtocol):
    def handle_message(self, message):
        # On TCP, nothing but initialize is handled before the token was accepted: not a request
        # pipelined after a wrong one, not ``exit`` (which would stop the server).
        server = self._server
        if server.token is not None and not server.authenticated and getattr(message, "method", None) != types.INITIALIZE:
            if isinstance(message, RPCRequest):
                self._send_response(message.id, None, BadToken("Send initialize with the token first.").to_response_error())
            return
        super().handle_message(message)

    def get_result_type(self, method: str):
        # The applyEdit result stays raw JSON: lsprotocol's converter reads {"applied": "no"} as
        # applied, so totem_lsp/edits.py parses it strictly itself (messages.ApplyEditAnswer).
        return None if method == types.WORKSPACE_APPLY_EDIT else super().get_result_type(method)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"totem": {"protocolVersion": protocol.PROTOCOL_VERSION}}
        return result


class TotemServer(LanguageServer):
    def __init__(self, token: str | None = None):
        super().__init__("totem", VERSION, protocol_cls=TotemProtocol)
        self.token = token  # required in initializationOptions.token when listening on TCP
        self.authenticated = False  # whether the current connection sent the token
        self.options = InitializationOptions()
        self._service: Service | None = None

    def report_server_error(self, error: Exception, source) -> None:
        """Errors outside a request (a malformed notification, a client's bad message) go to the
        log, not to a pop-up in the user's editor: they are the client's bug, not the user's."""
        log.warning("%s: %s", getattr(source, "__name__", source), error)

    def service(self) -> "Service":
        if self._service is None:
            from totem_lsp.service import Service

            self._service = Service(self, settings=self.options.config, model=self.options.model)
        return self._service

    def start_tcp(self, host: str, port: int) -> None:
        """pygls' start_tcp, but only the client that sent the token owns the server: a connection
        without it can neither stop the server nor take the place of a client that is in."""
        self._stop_event = stop_event = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if self.authenticated:
                writer.close()  # one client at a time
                return
            if self.protocol.writer is not None:
                self.protocol.writer.close()  # a connection that never sent the token gives way
            self.protocol.set_writer(writer)
            await run_async(stop_event=stop_event, reader=reader, protocol=self.protocol, logger=log, error_handler=self.report_server_error)
            if self.authenticated and self.protocol.writer is writer:
                self.shutdown()  # the client left: so does the server

        async def serve() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            bound = self._server.sockets[0].getsockname()
            # The port actually bound (port 0 asks the system for a free one): clients read it here.
            print(f"totem lsp: listening on {bound[0]}:{bound[1]}", file=sys.stderr, flush=True)
            async with self._server:
                await self._server.serve_forever()

        try:
            asyncio.run(serve())
        except asyncio.CancelledError:
            pass


def create_server(token: str | None = None) -> TotemServer:
    server = TotemServer(token)

    @server.feature(types.INITIALIZE)
    def initialize(ls: TotemServer, params: types.InitializeParams) -> None:
        ls.options, problems = InitializationOptions.from_wire(params.initialization_options)
        for problem in problems:
            ls.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=problem))
        if ls.token is not None and not _same_token(ls.options.token or "", ls.token):
            # Answer with the error, then end this connection (not one that may replace it).
            asyncio.get_running_loop().call_later(0.05, _close, ls.protocol.writer)
            raise BadToken("Wrong or missing token in initializationOptions.token.")
        ls.authenticated = True

    @server.feature(types.INITIALIZED)
    def initialized(ls: TotemServer, params: types.InitializedParams) -> None:
        ls.service()  # load the engine now, before the first chat needs it

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: TotemServer, params: None) -> None:
        # Running turns are aborted, so their commands' process groups are killed, not orphaned.
        if ls._service is not None:
            await ls._service.aclose()

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def cancel_progress(ls: TotemServer, params: types.WorkDoneProgressCancelParams) -> None:
        ls.service().chats.cancel_progress(params.token)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TotemServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.service().diagnostics.forget(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: TotemServer, params: types.DidChangeConfigurationParams) -> None:
        await ls.service().reconfigure(params.settings)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: TotemServer, params: types.DidOpenTextDocumentParams) -> None:
        await ls.service().diagnostics.check(params.text_document.uri, external=False)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TotemServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.service().diagnostics.changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: TotemServer, params: types.DidSaveTextDocumentParams) -> None:
        await ls.service().diagnostics.check(params.text_document.uri, external=True)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Empty]),
    )
    def code_action(ls: TotemServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return code_actions(params)

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

    @server.feature(protocol.AGENTS)
    async def agents(ls: TotemServer, params: Any) -> list[dict[str, Any]]:
        return await ls.service().agents(params)

    @server.feature(protocol.AGENT_SAVE)
    async def agent_save(ls: TotemServer, params: Any) -> dict[str, str]:
        return await ls.service().agent_save(params)

    @server.feature(protocol.AGENT_DELETE)
    async def agent_delete(ls: TotemServer, params: Any) -> dict[str, str]:
        return await ls.service().agent_delete(params)

    @server.feature(protocol.COMMANDS)
    async def commands(ls: TotemServer, params: Any) -> list[dict[str, Any]]:
        return await ls.service().commands(params)

    # Commands take one argument, an object like the matching request's params.
    @server.command(protocol.CMD_ASK)
    async def ask_command(ls: TotemServer, arguments: Any) -> dict[str, Any]:
        return await ls.service().ask(_first(arguments))

    @server.command(protocol.CMD_ABORT)
    def abort_command(ls: TotemServer, arguments: Any) -> dict[str, bool]:
        return ls.service().abort(_first(arguments))

    @server.command(protocol.CMD_UNDO)
    async def undo_command(ls: TotemServer, arguments: Any) -> dict[str, Any]:
        return await ls.service().undo(_first(arguments))

    @server.command(protocol.CMD_REDO)
    async def redo_command(ls: TotemServer, arguments: Any) -> dict[str, Any]:
        return await ls.service().undo(_first(arguments), redo=True)

    return server


def _first(arguments: Any) -> Any:
    """The single argument of a command (``arguments`` is a JSON array; a namedtuple is an object)."""
    if isinstance(arguments, list) and arguments:
        return arguments[0]
    return arguments


def _close(writer: Any) -> None:
    if writer is not None:
        writer.close()


def _same_token(sent: str, token: str) -> bool:
    import hmac  # here, not at start-up: it loads hashlib (OpenSSL), and stdio needs no token

    return hmac.compare_digest(sent, token)
