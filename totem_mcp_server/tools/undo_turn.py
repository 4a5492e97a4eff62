"""``undo_turn``: the files of a session's last changing turn put back (``totem undo``)."""

from typing import Annotated, Literal

from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from totem_mcp_server.service import Service

NAME = "undo_turn"
ANNOTATIONS = ToolAnnotations(title="Undo a turn", read_only_hint=False, destructive_hint=True, open_world_hint=False)


class UndoneFile(BaseModel):
    path: str
    action: Literal["restored", "deleted", "conflict", "unrestorable"]
    reason: str | None  # why a conflict or an unrestorable change (a command's, not kept) was left alone


class Undone(BaseModel):
    session_id: str
    files: list[UndoneFile]  # empty: nothing to undo


def tool(service: Service):
    async def undo_turn(
        session_id: Annotated[str, Field(description="The session whose last changing turn to undo.")],
    ) -> Undone:
        session, runtime = await service.session(session_id)
        outcomes = await runtime.undo(session.id)
        return Undone(
            session_id=session.id, files=[UndoneFile(path=o.path, action=o.action, reason=o.reason) for o in outcomes]
        )

    return undo_turn
