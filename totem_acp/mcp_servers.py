"""The client's ``mcpServers`` (``session/new``, ``session/load``) as the engine's server specs.

After https://agentclientprotocol.com/protocol/session-setup#mcp-servers: stdio servers
(``name``, ``command``, ``args``, ``env`` as ``[{name, value}]``) and, as the agent declares
``mcpCapabilities.http``, streamable HTTP ones (``type: "http"``, ``url``, ``headers``). They
join the session's servers (totem_engine/mcp/servers.py ``join``) with source ``client``: each
start asks first, as a server of the user's ``mcp.json`` does. SSE servers and ACP-transported
ones are not offered (``mcpCapabilities.sse``/``acp`` false); one sent anyway is left out, and
the session says so (a client may pass every server its user configured).
"""

from __future__ import annotations

from pathlib import Path

from acp.schema import AcpMcpServer, HttpMcpServer, McpServerStdio, SseMcpServer

from totem_engine.api.mcp_specs import ServerSpec

Declared = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio
DECLARED_BY = Path("session/new")  # ServerSpec.path: where a client's server was declared


def client_specs(servers: list[Declared] | None) -> tuple[list[ServerSpec], list[str]]:
    """The specs, and a notice for each server left out (a transport Totem does not speak)."""
    specs: list[ServerSpec] = []
    left: list[str] = []
    for server in servers or []:
        if isinstance(server, McpServerStdio):
            specs.append(ServerSpec(
                name=server.name, source="client", path=DECLARED_BY, command=server.command, args=tuple(server.args),
                env=tuple((v.name, v.value) for v in server.env),
            ))
        elif isinstance(server, HttpMcpServer):
            specs.append(ServerSpec(
                name=server.name, source="client", path=DECLARED_BY, url=server.url,
                headers=tuple((h.name, h.value) for h in server.headers),
            ))
        else:
            left.append(
                f"MCP server {server.name} was not started: Totem speaks stdio and streamable HTTP to MCP servers, not {server.type}."
            )
    return specs, left
