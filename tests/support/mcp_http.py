"""A streamable HTTP MCP server on loopback, made with the ``mcp`` package, for tests.

    python -m tests.support.mcp_http TOKEN [--handshake-only]

Serves https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http
at ``http://127.0.0.1:PORT/mcp`` (a free port, printed as ``PORT`` on the first stdout line) and
answers only requests carrying the header ``X-Token: TOKEN``; any other gets 401. Its tools:
``lookup(word)`` (the word's entry of a small dictionary, as text and structured content) and
``fail()`` (an error result, ``isError``); one prompt, ``review(path)``. ``--handshake-only``:
it answers ``server/discover`` (the 2026-07-28 probe) as a server of 2025 does, with HTTP 400
(no session), and so speaks only the ``initialize`` handshake.
"""

from __future__ import annotations

import json
import socket
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

WORDS = {"totem": "A carved pole that tells a story.", "forge": "A workshop where metal is shaped."}


def app(token: str, handshake_only: bool = False):
    server = MCPServer("dictionary", instructions="Look words up.")

    @server.tool(description="The dictionary entry of a word.")
    def lookup(word: str) -> dict:
        return {"word": word, "entry": WORDS.get(word.lower(), "not in the dictionary")}

    @server.tool(description="Always fails.")
    def fail() -> str:
        raise ValueError("the dictionary is closed today")

    @server.prompt(description="Ask for a review of one file.")
    def review(path: str) -> str:
        return f"Review {path} for mistakes and say what you would change."

    inner = server.streamable_http_app()

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"x-token", b"").decode() != token:
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"wrong or missing X-Token"})
                return
            if handshake_only and scope["method"] == "POST":
                receive = await _refuse_discover(receive, send)
                if receive is None:
                    return
        await inner(scope, receive, send)

    return guarded


async def _refuse_discover(receive, send):
    """A 400 for ``server/discover`` (None); else a ``receive`` that replays the body read."""
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    try:
        method = json.loads(body).get("method")
    except (ValueError, AttributeError):
        method = None
    if method == "server/discover":
        await send({"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"Bad Request: No valid session ID provided"})
        return None
    replayed = False

    async def replay():
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def main() -> None:
    token = sys.argv[1]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app(token, "--handshake-only" in sys.argv), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
