"""The MCP server: the tools (tools/) registered on the SDK's ``MCPServer``, each with its
description from ``prompts/mcp_server/``, its failures worded by errors.py, and every result and
error cleared of keys (the engine's redaction, api/secrets.py); the sessions' transcripts and
diffs as resources (resources.py); the protocol errors as the spec words them
(protocol_errors.py). Nothing else is offered: no prompts (nor their capability), none of the
agent's own tools.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from totem_engine.api.prompts import prompt
from totem_engine.api.secrets import redacted, scrubbed
from totem_mcp_server import resources
from totem_mcp_server.errors import error_text
from totem_mcp_server.protocol_errors import ProtocolErrors
from totem_mcp_server.service import Service
from totem_mcp_server.tools import TOOLS

INSTRUCTIONS = "mcp_server/instructions.txt"


def build(service: Service) -> MCPServer:
    server: MCPServer = MCPServer(
        "totem", title="Totem", instructions=prompt(INSTRUCTIONS), version=_version(),
        middleware=[ProtocolErrors(module.NAME for module in TOOLS)],
    )
    for module in TOOLS:
        server.add_tool(
            _cleared(module.tool(service), service),
            name=module.NAME,
            description=prompt(f"mcp_server/{module.NAME}.txt"),
            annotations=module.ANNOTATIONS,
        )
    resources.register(server, service)
    _offer_no_prompts(server)
    return server


def _offer_no_prompts(server: MCPServer) -> None:
    """Without the prompt methods the SDK advertises no ``prompts`` capability (it derives each
    from the methods served) and answers them "method not found". The SDK's ``MCPServer`` always
    serves them and has no public way to stop: its low-level server's table is the one place."""
    handlers = server._lowlevel_server._request_handlers  # private: see the docstring
    for method in ("prompts/list", "prompts/get"):
        handlers.pop(method, None)


def _cleared(run: Callable[..., Awaitable[BaseModel]], service: Service) -> Callable[..., Awaitable[BaseModel]]:
    """``run`` with its result's strings redacted and its failures as tool errors (errors.py),
    redacted too. ``functools.wraps`` keeps its signature, which the SDK reads for the input schema."""

    @functools.wraps(run)
    async def cleared(*args: Any, **kwargs: Any) -> BaseModel:
        try:
            result = await run(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure becomes the tool's error, worded without keys
            raise ToolError(redacted(error_text(exc))) from None
        return type(result).model_validate(scrubbed(result.model_dump()))

    return cleared


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("totem-lsp")
    except PackageNotFoundError:
        return ""
