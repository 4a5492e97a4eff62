"""The MCP servers a door's client brings (an ACP session's ``mcpServers``), as the engine's
server specs (``open_project``'s ``mcp_servers``): the engine's own type, named for the doors."""

from totem_engine.mcp.specs import ServerSpec

__all__ = ["ServerSpec"]
