"""What ``totem mcp list`` shows: each MCP server the project declares, started as a turn starts
it (asked first through the door's front end), whether it started, and its tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from totem_engine.checks.totaljs import is_totaljs_project
from totem_engine.permissions import Policy

if TYPE_CHECKING:
    from totem_engine.api.frontend import FrontEnd
    from totem_engine.mcp.servers import Say
    from totem_engine.runtime import Runtime


@dataclass(frozen=True)
class ServerListing:
    """One declared server: ``status`` (what became of it), ``target`` (its command line or
    URL), ``path`` (the file that declares it), ``tools`` ((name, description), by name)."""

    name: str
    status: str
    target: str
    path: str
    tools: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class McpListing:
    """The servers, and the servers whose prompts the ``mcp_prompts`` tool offers."""

    servers: list[ServerListing]
    prompts_of: list[str]


class _ListHost:
    """Where the starts are asked: the door's front end; their pseudo calls are not shown."""

    session_id = "mcp-list"

    def __init__(self, frontend: FrontEnd):
        self.frontend = frontend

    async def emit(self, event: object) -> None:
        return None


async def list_servers(runtime: Runtime, frontend: FrontEnd, say: Say) -> McpListing:
    """Start the project's servers as a turn would (the built-in Forge in a Total.js project)."""
    servers = runtime.mcp
    totaljs = is_totaljs_project(runtime.root, runtime.config.totaljs)  # which declares the built-in Forge
    await servers.prepare(_ListHost(frontend), Policy(rules=list(runtime.agent.rules)), say, totaljs=totaljs)
    tools = servers.tools(set(runtime.agent.tools))
    listed = []
    for name, spec in servers.specs.items():
        own = [
            (tool_name, tool.description) for tool_name, tool in sorted(tools.items())
            if getattr(tool, "connection", None) is not None and tool.connection.spec.name == name
        ]
        listed.append(ServerListing(name, servers.status.get(name, "not started"), spec.target, str(spec.path), own))
    prompts = tools.get("mcp_prompts")
    return McpListing(listed, sorted(prompts.connections) if prompts is not None else [])
