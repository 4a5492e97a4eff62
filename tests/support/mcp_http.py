"""A streamable HTTP MCP server on loopback, made with the ``mcp`` package, for tests.

    python -m tests.support.mcp_http TOKEN

Serves https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http
at ``http://127.0.0.1:PORT/mcp`` (a free port, printed as ``PORT`` on the first stdout line) and
answers only requests carrying the header ``X-Token: TOKEN``; any other gets 401. Its tools:
``lookup(word)`` (the word's entry of a small dictionary, as text and structured content) and
``fail()`` (an error result, ``isError``); one prompt, ``review(path)``.
"""

from __future__ import annotations

import socket
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

WORDS = {"totem": "A carved pole that tells a story.", "forge": "A workshop where metal is shaped."}


def app(token: str):
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
        await inner(scope, receive, send)

    return guarded


def main() -> None:
    token = sys.argv[1]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app(token), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
