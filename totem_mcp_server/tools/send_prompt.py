"""``send_prompt``: a turn of a session, run to its end; its answer, its calls and its changes.

Permission asks are answered by the rules in force alone (frontend.py), never by the caller.
What was typed goes to ``Engine.prompt`` as any door's prompt does: a slash command expanded, a
built-in action (``/undo``, ``/redo``, ``/compact``, ``/rewind``, ``/fork``, ``/retry``) done on
the session.
"""

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import Field

from totem_engine.api.errors import EngineError
from totem_mcp_server.answer import Answer, answer
from totem_mcp_server.service import Service

NAME = "send_prompt"
ANNOTATIONS = ToolAnnotations(title="Send a prompt", read_only_hint=False, destructive_hint=True, open_world_hint=True)


def tool(service: Service):
    async def send_prompt(
        session_id: Annotated[str, Field(description="The session's id (from start_session or list_sessions).")],
        prompt: Annotated[str, Field(description="What to ask or tell the agent, as a user would type it.", min_length=1)],
        ctx: Context,
        model: Annotated[
            str | None, Field(description='"provider/model id" for this turn (default: the session\'s model).')
        ] = None,
        mode: Annotated[
            Literal["build", "plan"] | None, Field(description="build or plan for this turn (default: the session's).")
        ] = None,
        max_steps: Annotated[
            int | None, Field(description="The turn's step limit (0: none; default: the config's, else the model's tier's budget).", ge=0)
        ] = None,
    ) -> Answer:
        engine, session = await service.session(session_id)
        text = prompt.strip()
        if not text:
            raise EngineError("the prompt is empty: say what to do")
        return await answer(
            service, ctx,
            lambda frontend: engine.prompt(text, frontend, session_id=session.id, model=model, mode=mode, max_steps=max_steps),
            session.model,
        )

    return send_prompt
