"""Totem as an MCP server (``totem mcp serve``): a front end that offers other agents the
actions on Totem's sessions, none of the agent's own file and shell tools (docs/mcp-server.md).

Built on the official ``mcp`` package's server side (``mcp.server.mcpserver.MCPServer``):
app.py (the server and its eight tools, every result cleared of keys), tools/ (one module per
tool), service.py (the store, one engine per project, the turns it runs), frontend.py (a turn's
front end: events gathered, asks answered by the rules alone), redaction.py (keys out of results),
auth.py and transports.py (stdio; streamable HTTP on loopback with a bearer token). The engine
never imports this package.
"""
