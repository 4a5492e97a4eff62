"""``redo_turn``: the change ``undo_turn`` last took back in a session put back again (``Engine.redo``)."""

from typing import Annotated

from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from totem_mcp_server.file_outcomes import FileOutcome, file_outcomes
from totem_mcp_server.service import Service

NAME = "redo_turn"
ANNOTATIONS = ToolAnnotations(title="Redo an undone turn", read_only_hint=False, destructive_hint=True, open_world_hint=False)


class Redone(BaseModel):
    session_id: str
    files: list[FileOutcome]  # empty: nothing to redo


def tool(service: Service):
    async def redo_turn(
        session_id: Annotated[str, Field(description="The session whose last undone turn to put back.")],
    ) -> Redone:
        engine, session = await service.session(session_id)
        reply = await engine.redo(session.id)
        return Redone(session_id=session.id, files=file_outcomes(reply.files))

    return redo_turn
