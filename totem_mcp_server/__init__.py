"""Totem as an MCP server (``totem mcp serve``): a front end that offers other agents the
actions on Totem's sessions, none of the agent's own file and shell tools (docs/mcp-server.md).

Built on the official ``mcp`` package's server side (``mcp.server.mcpserver.MCPServer``) and on
the engine's API alone (``totem_engine.api``): app.py (the server and its tools, every result
cleared of keys), errors.py (an engine refusal's kind as the tool error's text), tools/ (one module
per tool), service.py (``Engines``: one engine per project; the task group turns run in),
answer.py (a turn run to its end as a tool's result), file_outcomes.py, frontend.py (a turn's front
end: events gathered, asks answered by the rules alone), the engine's redaction keeping keys out of results,
auth.py and transports.py (stdio; streamable HTTP on loopback with a bearer token). The engine
never imports this package.
"""
