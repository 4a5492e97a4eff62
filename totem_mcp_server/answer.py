"""A turn run for a tool to its end (``send_prompt``, ``retry_turn``), and what the tool returns
of it: the answer, the calls, the changes and what was refused, in one result shape.

Each tool call's start is reported as the request's progress (when the request carries a
progress token); the turn runs in the service's task group (service.py).
"""

from collections.abc import Awaitable, Callable

from mcp.server.mcpserver import Context
from pydantic import BaseModel

from totem_engine.api.running import Running
from totem_mcp_server.frontend import ServeFrontEnd
from totem_mcp_server.service import Service


class Call(BaseModel):
    tool: str
    title: str
    status: str | None  # ok, error, denied, interrupted; None: it never ended
    summary: str
    changed: list[str]  # project-relative paths the call changed


class Answer(BaseModel):
    session_id: str
    turn_id: str | None  # None: a built-in action (/undo, /compact ...), no turn
    stop_reason: str  # finished, step_limit, guard, aborted, error
    reason: str | None  # why, when it did not finish
    text: str  # the answer (an action's: what it did)
    model: str
    calls: list[Call]
    changed: list[str]  # every path the turn changed, sorted
    refused: list[str]  # what needed a person's answer and was rejected


async def answer(service: Service, ctx: Context, start: Callable[[ServeFrontEnd], Awaitable[Running]], model: str) -> Answer:
    """The turn ``start(frontend)`` starts, run to its end; ``model``: what an action, which asks
    no model, reports."""
    steps = 0

    async def progress(message: str) -> None:
        nonlocal steps
        steps += 1
        await ctx.report_progress(steps, None, message)

    frontend = ServeFrontEnd(progress)
    result = await service.run(await start(frontend))
    calls = [Call(tool=c.tool, title=c.title, status=c.status, summary=c.summary, changed=c.changed) for c in frontend.calls.values()]
    return Answer(
        session_id=result.session_id, turn_id=result.turn_id or None, stop_reason=result.stop_reason, reason=result.reason,
        text=result.text, model=result.model or model, calls=calls, changed=sorted({p for c in calls for p in c.changed}),
        refused=frontend.refused,
    )
