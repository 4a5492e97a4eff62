"""A small stdio MCP server made with the ``mcp`` package, for the ACP client's ``mcpServers``.

    python -m tests.acp.mcp_stdio

One tool, ``shout(text)``: the text in capitals, so a test can tell its result from an echo.
Transport: https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer


def main() -> None:
    server = MCPServer("shouter", instructions="Shouts text back.")

    @server.tool(description="The text in capital letters.")
    def shout(text: str) -> str:
        return text.upper()

    server.run("stdio")


if __name__ == "__main__":
    main()
