"""``start_session``: a new, empty session of a project, for ``send_prompt``."""

from typing import Annotated, Literal

from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from totem_mcp_server.service import Service

NAME = "start_session"
ANNOTATIONS = ToolAnnotations(title="Start a session", read_only_hint=False, destructive_hint=False, open_world_hint=False)


class Started(BaseModel):
    session_id: str
    project: str
    model: str  # "provider/model id" its turns use unless send_prompt names another
    mode: str
    title: str


def tool(service: Service):
    async def start_session(
        project: Annotated[
            str | None, Field(description="The project's root folder (default: the folder totem mcp serve runs in).")
        ] = None,
        title: Annotated[str | None, Field(description="A title (default: the first prompt's first line).")] = None,
        model: Annotated[
            str | None, Field(description='"provider/model id" for its turns (default: the config\'s model).')
        ] = None,
        mode: Annotated[
            Literal["build", "plan"] | None,
            Field(description="build (changes allowed by the rules) or plan (nothing changed); default: the config's."),
        ] = None,
    ) -> Started:
        engine = await service.engine(project)
        session = await engine.new_session(model=model, mode=mode, title=title or "")
        return Started(
            session_id=session.id, project=str(engine.root), model=session.model, mode=session.mode, title=session.title or ""
        )

    return start_session
