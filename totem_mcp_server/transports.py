"""The two ways in: stdio, and streamable HTTP on a loopback address with a bearer token.

stdio is the SDK's (``MCPServer.run_stdio_async``): JSON-RPC lines on stdin and stdout, the
server ending when stdin closes. HTTP follows
https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http at
``http://HOST:PORT/mcp``, served by uvicorn on a socket bound here (port 0: a free one), behind
``BearerToken`` (auth.py) and the SDK's own Host/Origin check for loopback.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

from totem_mcp_server.auth import BearerToken

ENDPOINT = "/mcp"


def loopback_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as ``(host, port)``; ValueError unless the host
    is a loopback address (127.0.0.1, ::1, localhost) and the port a number."""
    host, _, port = value.rpartition(":")
    host = host.strip("[]")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--http wants HOST:PORT, got {value!r}")
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(f"--http listens on loopback only (127.0.0.1:PORT or [::1]:PORT), not {host!r}")
    return host, int(port)


async def serve_stdio(server: MCPServer) -> None:
    """Serve until stdin closes, or the caller's scope is cancelled (a signal): then the running
    requests are cancelled at once (their turns aborted), and this returns once the SDK's reader
    has seen stdin close (its read cannot be interrupted)."""
    await server.run_stdio_async()


class _Uvicorn:
    """uvicorn's server without its own signal handling: the command's takes SIGINT and
    SIGTERM (main.py) and asks it to ``stop``, so the turns are aborted before the process ends
    (uvicorn would raise the signal again once it stopped, ending the process there)."""

    def __init__(self, app: object):
        import contextlib

        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):  # type: ignore[override]
                yield

        self.server = Server(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False))

    async def serve(self, sock: socket.socket) -> None:
        await self.server.serve(sockets=[sock])

    def stop(self) -> None:
        self.server.should_exit = True


async def serve_http(
    server: MCPServer, host: str, port: int, token: str, say: Callable[[str], None], on_stop: Callable[[Callable[[], None]], None]
) -> None:
    """Serve at ``http://HOST:PORT/mcp`` until stopped: ``on_stop`` is given the function that
    stops it; ``say`` gets the URL once the socket is bound (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    # Listening before the URL is said: a client that connects at once waits in the backlog
    # until uvicorn accepts, instead of being refused while the app is built.
    sock.listen()
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    say(f"http://{shown}:{sock.getsockname()[1]}{ENDPOINT}")
    uvicorn = _Uvicorn(BearerToken(server.streamable_http_app(streamable_http_path=ENDPOINT, host=host), token))
    on_stop(uvicorn.stop)
    await uvicorn.serve(sock)
