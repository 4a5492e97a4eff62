"""The server's tools, one module each: ``NAME``, its ``ANNOTATIONS``, its result models and
``tool(service)``, the function the SDK registers (its annotated parameters are the input
schema; its description is ``prompts/mcp_server/NAME.txt``)."""

from totem_mcp_server.tools import (
    abort_turn,
    fork_session,
    list_projects,
    list_sessions,
    read_session,
    redo_turn,
    retry_turn,
    rewind,
    send_prompt,
    session_diff,
    start_session,
    undo_turn,
)

TOOLS = (
    list_projects, list_sessions, read_session, start_session, send_prompt, retry_turn, abort_turn, session_diff,
    undo_turn, redo_turn, rewind, fork_session,
)
