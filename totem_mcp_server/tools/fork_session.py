"""``fork_session``: a new session of the same project holding a session's conversation as it
stands, or up to one of its messages (``Engine.fork``); the session forked is left as it is."""

from typing import Annotated

from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from totem_mcp_server.service import Service

NAME = "fork_session"
ANNOTATIONS = ToolAnnotations(title="Fork a session", read_only_hint=False, destructive_hint=False, open_world_hint=False)


class Forked(BaseModel):
    session_id: str  # the new session's id, for send_prompt
    forked_from: str
    text: str  # what was done, in words


def tool(service: Service):
    async def fork_session(
        session_id: Annotated[str, Field(description="The session to fork.")],
        message_id: Annotated[
            str | None,
            Field(description="Fork up to and including this message (msg_..., from read_session); default: all of it."),
        ] = None,
    ) -> Forked:
        engine, session = await service.session(session_id)
        reply = await engine.fork(session.id, message_id)
        assert reply.forked is not None  # a fork's reply names the new session
        return Forked(session_id=reply.forked, forked_from=session.id, text=reply.text)

    return fork_session
