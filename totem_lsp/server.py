"""The Totem language server: thin handlers that delegate at once (docs/protocol.md).

Only pygls, lsprotocol and the method names load at start-up; the engine (pydantic, httpx, the
store) loads after ``initialize`` (service.py), so the server answers ``initialize`` about as
fast as a bare pygls server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cattrs import transform_error
from cattrs.errors import ClassValidationError
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import RPCRequest

from totem_lsp import protocol
from totem_lsp.code_actions import code_actions
from totem_lsp.framing import CHUNK, HEAD, BadFrame, Frames, RequestId, StdinReader, head_id
from totem_lsp.options import InitializationOptions

if TYPE_CHECKING:
    from totem_lsp.service import Service

VERSION = "0.1.0"
# The default of lsp_max_message_bytes (totem_engine/config.py), in force until the config is read.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
log = logging.getLogger(__name__)


class BadToken(JsonRpcException):
    CODE = protocol.BAD_TOKEN


class TotemProtocol(LanguageServerProtocol):
    def receive(self, frame: bytes | BadFrame) -> None:
        """One message off the stream (framing.py), parsed and checked before pygls handles it.

        Every request gets an answer: one that cannot be read or is not JSON-RPC is answered with
        an error, under its id when the id can be read, else under ``null`` (JSON-RPC 2.0 §5).
        """
        if isinstance(frame, BadFrame):
            self._refuse(frame.request_id, JsonRpcInvalidRequest(f"Invalid Request: {frame.reason}"))
            return
        try:
            data = json.loads(frame)
        except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested thousands deep
            self._refuse(head_id(frame[:HEAD]), JsonRpcParseError(f"Parse error: {exc}"))
            return
        problem = _not_json_rpc(data)
        if problem is not None:
            if not _is_response(data):  # a client's broken answer to us is not answered
                self._refuse(_request_id(data), JsonRpcInvalidRequest(f"Invalid Request: {problem}"))
            return
        if "method" in data:
            data.setdefault("params", None)  # JSON-RPC lets a request or notification leave params out
        try:
            message = self.structure_message(data)
        except JsonRpcException as exc:
            cause = exc.__cause__
            detail = "; ".join(transform_error(cause)) if isinstance(cause, ClassValidationError) else str(cause or exc)
            if "id" in data and "method" in data:
                self._refuse(data["id"], JsonRpcInvalidParams(f"Invalid params for {data['method']}: {detail}"))
            else:
                log.warning("dropped a message that does not fit its method: %s", detail)
            return
        self.handle_message(message)

    def handle_message(self, message):
        # Before initialize, only exit is taken (LSP 3.17 "initialize"); on TCP not even exit,
        # nor anything pipelined after a wrong token, until the token was accepted.
        server = self._server
        method = getattr(message, "method", None)
        if not server.authenticated and method != types.INITIALIZE:
            if method == types.EXIT and server.token is None:
                super().handle_message(message)
            elif isinstance(message, RPCRequest):
                if server.token is not None:
                    self._refuse(message.id, BadToken("Send initialize with the token first."))
                else:
                    self._refuse(message.id, JsonRpcServerNotInitialized("Server not initialized: send initialize first."))
            return
        if isinstance(message, RPCRequest) and method == types.INITIALIZE and server.authenticated:
            self._refuse(message.id, JsonRpcInvalidRequest("Invalid Request: initialize was already answered."))
            return
        if self._shutdown and method != types.EXIT:
            # pygls drops these unanswered; LSP says a request after shutdown is InvalidRequest.
            if isinstance(message, RPCRequest):
                self._refuse(message.id, JsonRpcInvalidRequest("Invalid Request: the server is shut down; only exit is taken."))
            return
        super().handle_message(message)

    def get_result_type(self, method: str):
        # The applyEdit result stays raw JSON: lsprotocol's converter reads {"applied": "no"} as
        # applied, so totem_lsp/edits.py parses it strictly itself (messages.ApplyEditAnswer).
        return None if method == types.WORKSPACE_APPLY_EDIT else super().get_result_type(method)

    def _refuse(self, request_id: RequestId | None, error: JsonRpcException) -> None:
        log.warning("refused a message: %s", error.message)
        if request_id is None:
            # pygls' response type leaves a null id out; JSON-RPC wants "id": null.
            self._send_data({"jsonrpc": self.VERSION, "id": None, "error": {"code": error.code, "message": error.message}})
        else:
            self._send_response(request_id, None, error.to_response_error())

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"totem": {"protocolVersion": protocol.PROTOCOL_VERSION}}
        return result


class TotemServer(LanguageServer):
    def __init__(self, token: str | None = None):
        super().__init__("totem", VERSION, protocol_cls=TotemProtocol)
        self.token = token  # required in initializationOptions.token when listening on TCP
        self.authenticated = False  # whether the current connection was initialized (on TCP: with the token)
        self.options = InitializationOptions()
        self.max_message_bytes = MAX_MESSAGE_BYTES  # until the config is read (read_message_limit)
        self.exit_code = 0  # 1 after an exit without shutdown, as LSP says
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

    def read_message_limit(self) -> None:
        """``lsp_max_message_bytes`` from the user's file and the editor's settings (a project's
        file has no say over the editor's connection). An invalid config keeps the limit in
        force; its error comes with the first request that needs the engine."""
        limit = self.service().message_limit()
        if limit is not None:
            self.max_message_bytes = limit

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """pygls' start_io with Totem's reader (framing.py); the exit code is kept in ``exit_code``."""
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        reader = StdinReader((stdin or sys.stdin.buffer).fileno())
        try:
            asyncio.run(self._read_messages(reader.read))
        except BrokenPipeError:
            log.error("The client closed its end of the pipe.")
        except KeyboardInterrupt:
            self.exit_code = 130
        except SystemExit as exc:  # the exit notification (pygls' lsp_exit)
            self.exit_code = exc.code if isinstance(exc.code, int) else 1
        finally:
            self.shutdown()

    async def _read_messages(self, read: Callable[[], Awaitable[bytes]]) -> None:
        frames = Frames(read, lambda: self.max_message_bytes)
        while not self._stop_event.is_set():
            frame = await frames.next()
            if frame is None:
                return
            try:
                self.protocol.receive(frame)
            except BrokenPipeError:
                raise
            except Exception:  # a bug in dispatch: logged; the next message is still read
                log.exception("Unable to handle a message")

    def start_tcp(self, host: str, port: int) -> None:
        """pygls' start_tcp, but only the client that sent the token owns the server: a connection
        without it can neither stop the server nor take the place of a client that is in."""
        self._stop_event = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if self.authenticated:
                writer.close()  # one client at a time
                return
            if self.protocol.writer is not None:
                self.protocol.writer.close()  # a connection that never sent the token gives way
            self.protocol.set_writer(writer)

            async def read() -> bytes:
                try:
                    return await reader.read(CHUNK)
                except ConnectionError:  # a reset is the end of this connection, like a close
                    return b""

            await self._read_messages(read)
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
        except SystemExit as exc:  # the exit notification (pygls' lsp_exit)
            self.exit_code = exc.code if isinstance(exc.code, int) else 1


def create_server(token: str | None = None) -> TotemServer:
    server = TotemServer(token)

    @server.feature(types.INITIALIZE)
    def initialize(ls: TotemServer, params: types.InitializeParams) -> None:
        ls.options, problems = InitializationOptions.from_wire(params.initialization_options)
        for problem in problems:
            ls.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=problem))
        if ls.token is not None and not _same_token(ls.options.token or "", ls.token):
            # Answer with the error, then end this connection (not one that may replace it). Not
            # at once: closing a socket with the client's pipelined messages unread resets it,
            # and the reset can destroy the answer before the client reads it.
            asyncio.get_running_loop().call_later(0.05, _close, ls.protocol.writer)
            raise BadToken("Wrong or missing token in initializationOptions.token.")
        ls.authenticated = True

    @server.feature(types.INITIALIZED)
    def initialized(ls: TotemServer, params: types.InitializedParams) -> None:
        ls.service()  # load the engine now, before the first chat needs it
        ls.read_message_limit()

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
        ls.service().reconfigure(params.settings)
        ls.read_message_limit()

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

    @server.feature(protocol.SET_MODE)
    async def set_mode(ls: TotemServer, params: Any) -> dict[str, str]:
        return await ls.service().set_mode(params)

    @server.feature(protocol.UNDO)
    async def undo(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().undo(params)

    @server.feature(protocol.REDO)
    async def redo(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().undo(params, redo=True)

    @server.feature(protocol.AGENTS)
    async def agents(ls: TotemServer, params: Any) -> list[dict[str, Any]]:
        return await ls.service().agents(params)

    @server.feature(protocol.HOOKS)
    async def hooks(ls: TotemServer, params: Any) -> list[dict[str, Any]]:
        return await ls.service().hooks(params)

    @server.feature(protocol.AGENT_SAVE)
    async def agent_save(ls: TotemServer, params: Any) -> dict[str, str]:
        return await ls.service().agent_save(params)

    @server.feature(protocol.AGENT_DELETE)
    async def agent_delete(ls: TotemServer, params: Any) -> dict[str, str]:
        return await ls.service().agent_delete(params)

    @server.feature(protocol.COMPACT)
    async def compact(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().compact(params)

    @server.feature(protocol.JOB_STOP)
    async def job_stop(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().job_stop(params)

    @server.feature(protocol.REWIND)
    async def rewind(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().rewind(params)

    @server.feature(protocol.RETRY)
    async def retry(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().retry(params)

    @server.feature(protocol.REGENERATE)
    async def regenerate(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().regenerate(params)

    @server.feature(protocol.VARIANT)
    async def variant(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().variant(params)

    @server.feature(protocol.FORK)
    async def fork(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().fork(params)

    @server.feature(protocol.COMPLETE)
    async def complete(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().complete(params)

    @server.feature(protocol.TOOLS)
    async def session_tools(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().session_tools(params)

    @server.feature(protocol.MCP_LOGIN)
    async def mcp_login(ls: TotemServer, params: Any) -> dict[str, Any]:
        return await ls.service().mcp_login(params)

    @server.feature(protocol.MCP_SERVERS)
    async def mcp_servers(ls: TotemServer, params: Any) -> list[dict[str, str]]:
        return await ls.service().mcp_servers(params)

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


def _same_token(sent: Any, token: str) -> bool:
    """Whether the client sent the token: a string, compared in constant time as UTF-8 bytes
    (compare_digest refuses non-ASCII str; surrogatepass keeps a lone surrogate comparable)."""
    import hmac  # here, not at start-up: it loads hashlib (OpenSSL), and stdio needs no token

    if not isinstance(sent, str):
        return False
    return hmac.compare_digest(sent.encode("utf-8", "surrogatepass"), token.encode("utf-8", "surrogatepass"))


def _not_json_rpc(data: Any) -> str | None:
    """What makes ``data`` no JSON-RPC 2.0 message, or None."""
    if not isinstance(data, dict):
        return "a message is a JSON object"
    if data.get("jsonrpc") != "2.0":
        return 'no "jsonrpc": "2.0"'
    if "method" in data and not isinstance(data["method"], str):
        return "method is not a string"
    if "id" in data and _request_id(data) is None:
        return "id is neither a number nor a string"
    if "method" not in data and "id" not in data:
        return "neither a method nor an id"
    return None


def _is_response(data: Any) -> bool:
    return isinstance(data, dict) and "id" in data and "method" not in data


def _request_id(data: Any) -> RequestId | None:
    value = data.get("id") if isinstance(data, dict) else None
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None
