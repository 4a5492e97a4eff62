"""Logging in to a remote MCP server ahead of a turn (``totem mcp login NAME``).

The authorization code comes back to a loopback listener on 127.0.0.1 and an ephemeral port
(RFC 8252 section 7.3, which the MCP authorization spec asks native clients to use): it answers
one ``GET /callback?code=...&state=...`` with a page saying the login is done, and hands the code
to the SDK's flow (oauth.py). The login is the server's start as a turn would do it, with that
redirect and a ``show_url`` of the door's (the CLI opens the browser, or prints the URL; the
language server asks the editor to open it, ``window/showDocument``): the
tokens are stored as they are issued, and the tools it lists say the login works.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from totem_engine.api.errors import EngineError
from totem_engine.keys import remove_login
from totem_engine.mcp.specs import ServerSpec, load_specs

if TYPE_CHECKING:
    from totem_engine.mcp.connection import ServerConnection

_PAGE = b"<!doctype html><title>Totem</title><p>Logged in. You may close this tab and return to Totem.</p>\n"


class LoginFailed(EngineError):
    """The login did not complete: the message says why, for the user."""

    kind = "unavailable"


@dataclass(frozen=True)
class LoggedIn:
    server: str
    url: str
    tools: list[str]


def http_spec(root: Path, name: str) -> ServerSpec:
    """The declared streamable HTTP server ``name`` (user's or project's mcp.json); LoginFailed
    when there is none by that name or it is a stdio server."""
    spec = load_specs(root).get(name)
    if spec is None:
        raise LoginFailed(f"no MCP server {name} is declared (docs/config.md \"MCP servers\")")
    if spec.url is None:
        raise LoginFailed(f"MCP server {name} is a stdio server: only a URL server has a login")
    return spec


def url_servers(root: Path) -> dict[str, str]:
    """The declared streamable HTTP servers (user's or project's mcp.json), the ones a login is
    for: name to URL, by name."""
    return {name: spec.url for name, spec in sorted(load_specs(root).items()) if spec.url is not None}


async def log_in(root: Path, name: str, show_url: Callable[[str], Awaitable[None]], timeout: float = 300) -> LoggedIn:
    """Log in to the server ``name`` within ``timeout`` seconds, its login kept (keys.py)."""
    spec = http_spec(root, name)
    async with logged_in(spec, root, show_url, timeout) as connection:
        tools = [tool.name for tool in connection.tools]
    return LoggedIn(name, spec.url or "", tools)


@contextlib.asynccontextmanager
async def logged_in(
    spec: ServerSpec, root: Path, show_url: Callable[[str], Awaitable[None]], timeout: float = 300
) -> AsyncIterator[ServerConnection]:
    """The URL server ``spec`` started, through a login when it asks for one (and its kept
    login when it has one); stopped on leaving. LoginFailed when it did not start."""
    from totem_engine.mcp.connection import ServerConnection, StartFailed

    async def exited(connection: ServerConnection) -> None:
        return None

    async with _callback_listener() as (redirect_uri, code):
        connection = ServerConnection(spec, root, on_exit=exited, login=(show_url, redirect_uri, code))
        try:
            await connection.start(timeout)
        except StartFailed as exc:
            raise LoginFailed(f"MCP server {spec.name}: {exc}") from None
        try:
            yield connection
        finally:
            await connection.stop()


def log_out(root: Path, name: str) -> bool:
    """Forget the login of the server ``name``; True when there was one."""
    spec = http_spec(root, name)
    return remove_login(spec.url or "")


@contextlib.asynccontextmanager
async def _callback_listener() -> AsyncIterator[tuple[str, Callable[[], Awaitable[object]]]]:
    """The redirect URI, and a wait for the ``AuthorizationCodeResult`` it receives."""
    from mcp.client.auth import AuthorizationCodeResult

    received: asyncio.Future[AuthorizationCodeResult] = asyncio.get_running_loop().create_future()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode("ascii", errors="replace")
            parts = urlsplit(target)
            query = {key: values[0] for key, values in parse_qs(parts.query).items()}
            if parts.path != "/callback" or not ("code" in query or "error" in query):
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            body = _PAGE if "code" in query else f"Login refused: {query['error']}".encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            if not received.done():
                if "code" in query:
                    received.set_result(AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss")))
                else:
                    received.set_exception(LoginFailed(f"the authorization server refused: {query['error']}"))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, IndexError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError):
                await writer.drain()
                writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def code() -> AuthorizationCodeResult:
        return await asyncio.shield(received)

    try:
        yield f"http://127.0.0.1:{port}/callback", code
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await server.wait_closed()
