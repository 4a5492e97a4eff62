"""The resources the server offers: each session's transcript and diff, read by URI, so another
agent can attach them as context without a tool call.

``totem://session/{session_id}/transcript`` is ``read_session``'s whole export as JSON;
``totem://session/{session_id}/diff`` is ``session_diff``'s unified diff (git's form). Both are
templates: sessions come and go, so none is listed on its own. Each is cleared of keys like a
tool's result; a session that does not exist is the protocol's "resource not found".
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from totem_engine.api.errors import EngineError
from totem_engine.api.secrets import redacted
from totem_mcp_server.errors import error_text
from totem_mcp_server.service import Service

TRANSCRIPT = "totem://session/{session_id}/transcript"
DIFF = "totem://session/{session_id}/diff"


def register(server: MCPServer, service: Service) -> None:
    async def transcript(session_id: str) -> str:
        return json.dumps(await service.engines.history.export(session_id), ensure_ascii=False)

    async def diff(session_id: str) -> str:
        engine, session = await service.session(session_id)
        return "".join(d.diff for d in await engine.diff(session.id))

    server.resource(
        TRANSCRIPT, name="transcript", title="Session transcript", mime_type="application/json",
        description="Every message of a Totem session with its parts, as read_session returns them.",
    )(_cleared(transcript))
    server.resource(
        DIFF, name="diff", title="Session diff", mime_type="text/x-diff",
        description="What a Totem session changed in its project, as one unified diff.",
    )(_cleared(diff))


def _cleared(read: Callable[[str], Awaitable[str]]) -> Callable[[str], Awaitable[str]]:
    """``read`` with its text redacted, an unknown session as "not found" and any other failure
    worded as a tool's (errors.py)."""

    async def cleared(session_id: str) -> str:
        try:
            return redacted(await read(session_id))
        except EngineError as exc:
            if exc.kind == "not_found":
                raise ResourceNotFoundError(redacted(str(exc))) from None
            raise ResourceError(redacted(error_text(exc))) from None

    cleared.__name__ = read.__name__
    return cleared
