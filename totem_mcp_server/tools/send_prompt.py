"""``send_prompt``: a turn of a session, run to its end; its answer, its calls and its changes.

Permission asks are answered by the rules in force alone (frontend.py), never by the caller.
A slash command is expanded as ``totem run`` expands it (``/undo`` and ``/compact`` act on the
session). Each tool call's start is reported as the request's progress.
"""

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from totem_engine.config import ConfigError
from totem_engine.runtime import session_title
from totem_mcp_server.frontend import ServeFrontEnd
from totem_mcp_server.service import Service

NAME = "send_prompt"
ANNOTATIONS = ToolAnnotations(title="Send a prompt", read_only_hint=False, destructive_hint=True, open_world_hint=True)


class Call(BaseModel):
    tool: str
    title: str
    status: str | None  # ok, error, denied, interrupted; None: it never ended
    summary: str
    changed: list[str]  # project-relative paths the call changed


class Answer(BaseModel):
    session_id: str
    turn_id: str | None  # None: a built-in action (/undo, /compact), no turn
    stop_reason: str  # finished, step_limit, guard, aborted, error
    reason: str | None  # why, when it did not finish
    text: str  # the answer
    model: str
    calls: list[Call]
    changed: list[str]  # every path the turn changed, sorted
    refused: list[str]  # what needed a person's answer and was rejected


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
            int | None, Field(description="The turn's step limit (0: none; default: the config's).", ge=0)
        ] = None,
    ) -> Answer:
        session, runtime = await service.session(session_id)
        text = prompt.strip()
        if not text:
            raise ConfigError("the prompt is empty: say what to do")
        prepared = runtime.prepare(text)
        if prepared.action is not None:
            return Answer(
                session_id=session.id, turn_id=None, stop_reason="finished", reason=None,
                text=await _act(runtime, prepared.action, session.id), model=session.model, calls=[], changed=[], refused=[],
            )
        chosen = runtime.resolve_model(model or prepared.model or session.model)
        steps = 0

        async def progress(message: str) -> None:
            nonlocal steps
            steps += 1
            await ctx.report_progress(steps, None, message)

        frontend = ServeFrontEnd(progress)
        turn = runtime.turn(
            prepared.text, frontend, session=session, model=chosen, mode=mode or session.mode, max_steps=max_steps,
            typed=text if prepared.command else None, as_agent=prepared.agent,
        )
        result = await service.run(turn)
        if not session.title:
            await service.store.update_session(session.id, title=session_title(text))
        calls = [Call(tool=c.tool, title=c.title, status=c.status, summary=c.summary, changed=c.changed) for c in frontend.calls.values()]
        return Answer(
            session_id=result.session_id, turn_id=result.turn_id, stop_reason=result.stop_reason, reason=result.reason,
            text=result.text, model=result.model, calls=calls, changed=sorted({p for c in calls for p in c.changed}),
            refused=frontend.refused,
        )

    return send_prompt


async def _act(runtime, action: str, session_id: str) -> str:
    """A built-in action typed as the prompt, on the session; what it did, as text."""
    if action == "undo":
        outcomes = await runtime.undo(session_id)
        lines = [f"{o.action} {o.path}" + (f" ({o.reason})" if o.reason else "") for o in outcomes]
        return "\n".join(lines) if lines else "Nothing to undo."
    checkpoint = await runtime.compact(session_id)
    return f"Compacted {checkpoint.messages} message(s) into a checkpoint." if checkpoint is not None else "Nothing new to compact."
