"""Logging in to a remote MCP server from a door (``totem mcp login|logout``): the engine's own
functions and types (mcp/login.py), named here."""

from totem_engine.mcp.login import LoggedIn, LoginFailed, log_in, log_out, url_servers

__all__ = ["LoggedIn", "LoginFailed", "log_in", "log_out", "url_servers"]
