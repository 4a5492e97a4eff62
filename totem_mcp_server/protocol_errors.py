"""The protocol errors the SDK's server words otherwise, answered as each revision of the spec
says: one middleware on the ``MCPServer``.

- ``tools/call`` of a tool the server does not have: ``-32602`` (invalid params), the JSON-RPC
  error of https://modelcontextprotocol.io/specification/2025-11-25/server/tools#error-handling,
  not a tool result with ``isError`` (that is for a tool that ran and failed).
- ``resources/read`` of a URI no resource matches: ``-32002`` up to 2025-11-25
  (https://modelcontextprotocol.io/specification/2025-11-25/server/resources#error-handling);
  from 2026-07-28 (SEP-2164) ``-32602``, which is what the SDK answers.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

RESOURCE_NOT_FOUND = -32002  # 2025-11-25's code; retired by SEP-2164
SEP_2164 = "2026-07-28"  # the first revision that answers an unknown resource with -32602


class ProtocolErrors:
    """``tools``: the names of the tools the server offers."""

    def __init__(self, tools: Collection[str]):
        self.tools = frozenset(tools)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            if name not in self.tools:
                raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}", {"name": name})
        if ctx.method != "resources/read":
            return await call_next(ctx)
        try:
            return await call_next(ctx)
        except MCPError as exc:
            # Dated revisions compare in order as strings.
            not_found = exc.code == INVALID_PARAMS and isinstance(exc.data, dict) and "uri" in exc.data
            if not_found and ctx.protocol_version < SEP_2164:
                raise MCPError(RESOURCE_NOT_FOUND, exc.message, exc.data) from None
            raise
