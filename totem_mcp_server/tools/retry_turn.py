"""``retry_turn``: a session's last turn, which failed, taken up again from its last completed
step (``Engine.retry``) and run to its end, as ``send_prompt`` runs one."""

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import Field

from totem_mcp_server.answer import Answer, answer
from totem_mcp_server.service import Service

NAME = "retry_turn"
ANNOTATIONS = ToolAnnotations(title="Retry a failed turn", read_only_hint=False, destructive_hint=True, open_world_hint=True)


def tool(service: Service):
    async def retry_turn(
        session_id: Annotated[str, Field(description="The session whose last turn failed (stop_reason error).")],
        ctx: Context,
        model: Annotated[
            str | None, Field(description='"provider/model id" for the retry (default: the session\'s model).')
        ] = None,
        mode: Annotated[
            Literal["build", "plan"] | None, Field(description="build or plan for the retry (default: the session's).")
        ] = None,
    ) -> Answer:
        engine, session = await service.session(session_id)
        return await answer(
            service, ctx, lambda frontend: engine.retry(session.id, frontend, model=model, mode=mode), session.model
        )

    return retry_turn
