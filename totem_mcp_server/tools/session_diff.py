"""``session_diff``: what a session changed in its project, as unified diffs, from its snapshots."""

from typing import Annotated, Literal

from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from totem_mcp_server.service import Service

NAME = "session_diff"
ANNOTATIONS = ToolAnnotations(title="Diff of a session", read_only_hint=True, open_world_hint=False)


class ChangedFile(BaseModel):
    path: str  # project-relative, "/"
    change: Literal["added", "modified", "deleted"]
    binary: bool  # no text diff
    changed_since: bool  # the file no longer holds what the session left there
    missing: bool  # its stored state was pruned: no diff


class Diff(BaseModel):
    session_id: str
    project: str
    files: list[ChangedFile]
    diff: str  # every file's unified diff, in git's form


def tool(service: Service):
    async def session_diff(
        session_id: Annotated[str, Field(description="The session's id.")],
        turn_id: Annotated[
            str | None, Field(description="Only this turn's changes (trn_..., from send_prompt); default: the whole session's.")
        ] = None,
    ) -> Diff:
        engine, session = await service.session(session_id)
        diffs = await engine.diff(session.id, turn_id=turn_id)
        return Diff(
            session_id=session.id, project=str(engine.root),
            files=[
                ChangedFile(path=d.path, change=d.change, binary=d.binary, changed_since=d.changed_since, missing=d.missing)
                for d in diffs
            ],
            diff="".join(d.diff for d in diffs),
        )

    return session_diff
