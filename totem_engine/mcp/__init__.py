"""MCP servers: outside tools for the agent (docs/config.md "MCP servers").

specs.py (the ``mcp.json`` files), naming.py (``NAME__tool``), start.py and answers.py (permission
``mcp-start``), stdio.py (a stdio server's process), connection.py (one running server),
elicitation.py (what a server asks the user during a call), results.py (a tool result as text),
tools.py (its tools as the agent's), deferred.py (schemas offered by name when they would cost
too much of the window), servers.py (the runtime's servers: start, stop, what they offer now). Nothing here imports the ``mcp`` package at
import time: it is imported when a server is allowed to start.
"""
