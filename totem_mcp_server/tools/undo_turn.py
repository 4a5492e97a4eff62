"""``undo_turn``: the files of a session's last changing turn put back (``Engine.undo``)."""

from typing import Annotated

from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from totem_mcp_server.file_outcomes import FileOutcome, file_outcomes
from totem_mcp_server.service import Service

NAME = "undo_turn"
ANNOTATIONS = ToolAnnotations(title="Undo a turn", read_only_hint=False, destructive_hint=True, open_world_hint=False)


class Undone(BaseModel):
    session_id: str
    files: list[FileOutcome]  # empty: nothing to undo


def tool(service: Service):
    async def undo_turn(
        session_id: Annotated[str, Field(description="The session whose last changing turn to undo.")],
    ) -> Undone:
        engine, session = await service.session(session_id)
        reply = await engine.undo(session.id)
        return Undone(session_id=session.id, files=file_outcomes(reply.files))

    return undo_turn
