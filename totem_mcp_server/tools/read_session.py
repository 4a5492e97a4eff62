"""``read_session``: a session's messages and parts, as ``totem sessions export`` writes them."""

from typing import Annotated, Any

from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from totem_mcp_server.service import Service

NAME = "read_session"
ANNOTATIONS = ToolAnnotations(title="Read a session", read_only_hint=True, open_world_hint=False)


class Export(BaseModel):
    """``History.export``: the session's row and every message of every branch with its parts
    (camelCase keys; each message says whether it is on the conversation's path, ``active``)."""

    session: dict[str, Any]
    messages: list[dict[str, Any]]
    omitted: int = 0  # earlier messages left out by ``last``


def tool(service: Service):
    async def read_session(
        session_id: Annotated[str, Field(description="The session's id (ses_..., from list_sessions).")],
        last: Annotated[
            int, Field(description="Only the newest this many messages (0: all of them).", ge=0)
        ] = 0,
    ) -> Export:
        export = await service.engines.history.export(session_id)
        messages = export["messages"]
        kept = messages[-last:] if last else messages
        return Export(session=export["session"], messages=kept, omitted=len(messages) - len(kept))

    return read_session
