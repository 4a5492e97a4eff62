"""A tool's failure as the MCP tool error its caller reads: one mapping from the engine's
``EngineError.kind`` to the result's text, for every tool.

A tool error is a ``CallToolResult`` with ``isError`` and one text block
(https://modelcontextprotocol.io/specification/2025-11-25/server/tools#error-handling): the
calling agent reads it, so it opens with the kind (what sort of refusal, to act on) and ends
with what the agent can do about it. Anything else a tool raises is a failure of this server,
said as such.
"""

from __future__ import annotations

from totem_engine.api.errors import EngineError, Kind

# What the calling agent can do next, by kind: the refusal's own message says what went wrong.
NEXT: dict[Kind, str] = {
    "config": "Totem's configuration must change (the user's config or the project's .totem/config.toml); no tool here changes it",
    "not_found": "list_sessions gives a project's sessions, read_session their messages",
    "invalid": "read_session shows the session as it stands",
    "busy": "abort_turn stops the running turn; or wait for it to end and call again",
    "unavailable": "it may work when called again later",
}


def error_text(exc: Exception) -> str:
    """The text of the tool error ``exc`` becomes (app.py clears it of keys)."""
    if isinstance(exc, EngineError):
        return f"{exc.kind}: {exc} ({NEXT[exc.kind]})"
    return f"internal error: {str(exc) or type(exc).__name__}"
