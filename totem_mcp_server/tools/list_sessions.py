"""``list_sessions``: a project's sessions, newest first, each saying whether a turn runs in it."""

from typing import Annotated

from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from totem_mcp_server.service import Service

NAME = "list_sessions"
ANNOTATIONS = ToolAnnotations(title="List sessions", read_only_hint=True, open_world_hint=False)


class Running(BaseModel):
    holder: str  # the front end running the turn: "totem run", "totem lsp", "totem mcp serve"
    pid: int


class SessionEntry(BaseModel):
    session_id: str
    title: str
    model: str
    mode: str
    created_at: float  # seconds since the epoch
    updated_at: float
    running: Running | None  # None: no turn runs in it now


class Sessions(BaseModel):
    project: str
    sessions: list[SessionEntry]


def tool(service: Service):
    async def list_sessions(
        project: Annotated[
            str | None, Field(description="The project's root folder (default: the folder totem mcp serve runs in).")
        ] = None,
        limit: Annotated[int, Field(description="At most this many sessions, the newest.", ge=1, le=1000)] = 50,
    ) -> Sessions:
        root = service.project(project)
        leases = await service.engines.history.leases()
        listed = (await service.engines.history.sessions(root))[:limit]
        return Sessions(
            project=str(root),
            sessions=[
                SessionEntry(
                    session_id=s.id, title=s.title or "", model=s.model, mode=s.mode, created_at=s.created_at,
                    updated_at=s.updated_at,
                    running=Running(holder=leases[s.id].holder, pid=leases[s.id].pid) if s.id in leases else None,
                )
                for s in listed
            ],
        )

    return list_sessions
