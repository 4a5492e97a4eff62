"""``list_projects``: the project roots Totem has sessions for, most recently used first."""

from pathlib import Path

from mcp_types import ToolAnnotations
from pydantic import BaseModel

from totem_mcp_server.service import Service

NAME = "list_projects"
ANNOTATIONS = ToolAnnotations(title="List projects", read_only_hint=True, open_world_hint=False)


class Project(BaseModel):
    root: str
    sessions: int
    running: int  # sessions with a turn running now (here or in another process)
    updated_at: float  # seconds since the epoch: when its newest session last changed
    exists: bool  # the folder is still there


class Projects(BaseModel):
    projects: list[Project]


def tool(service: Service):
    async def list_projects() -> Projects:
        history = service.engines.history
        running: dict[str, int] = {}
        for session_id in await history.leases():
            cwd = (await history.session(session_id)).cwd
            running[cwd] = running.get(cwd, 0) + 1
        return Projects(
            projects=[
                Project(root=cwd, sessions=count, running=running.get(cwd, 0), updated_at=updated, exists=Path(cwd).is_dir())
                for cwd, count, updated in await history.projects()
            ]
        )

    return list_projects
