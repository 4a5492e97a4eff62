"""``totem/mcpLogin``: logging in to a remote MCP server that wants an OAuth login, from the editor.

The login is the engine's (``totem_engine.api.mcp_login.log_in``, as ``totem mcp login`` runs
it): discovery, registration, the authorization code caught on a loopback listener, the tokens
kept. What is the editor's: the authorization URL is shown to the user with
``window/showDocument`` (``external: true``: the editor opens it in the browser), after
https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#window_showDocument;
a client that does not declare ``window.showDocument.support``, or answers ``success: false``,
gets the URL in a ``window/showMessage`` to open by hand. The request answers when the login
completes, or with the engine's error when it fails or times out (errors.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from totem_engine.api.mcp_login import log_in

LOGIN_TIMEOUT = 300.0  # seconds for the user to log in in the browser (the CLI's too)


async def mcp_login(server: LanguageServer, root: Path, name: str) -> dict[str, Any]:
    """Log in to the declared URL server ``name`` of the project at ``root``; the server, its
    URL and the tools it lists once logged in."""

    async def show_url(url: str) -> None:
        if await _shown(server, url):
            return
        server.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Info, message=f"Log in to the MCP server {name}: open {url}",
        ))

    done = await log_in(root, name, show_url, timeout=LOGIN_TIMEOUT)
    return {"server": done.server, "url": done.url, "tools": done.tools}


async def _shown(server: LanguageServer, url: str) -> bool:
    """Whether the editor opened ``url`` in the browser (``window/showDocument``)."""
    window = server.client_capabilities.window
    if window is None or window.show_document is None or not window.show_document.support:
        return False
    try:
        result = await server.window_show_document_async(types.ShowDocumentParams(uri=url, external=True))
    except JsonRpcException:  # the editor answered with an error: the URL is shown as a message instead
        return False
    return bool(result and result.success)
