"""The front end of a turn that ``send_prompt`` runs: nobody to ask, the rules decide.

What the configured rules allow runs and what they deny is denied, in the engine
(permissions.py), before a question would reach a front end. A question that does reach this one
has nobody to answer it: the calling agent is not the user and never answers for them. So an
ask is a reject that ends the turn, with a message saying which rule would allow it, as
``totem run`` does without a terminal and without ``--yes``. Starting a project's MCP server is
rejected without ending the turn (the turn goes on without its tools), and the ``ask`` tool's
questions get no answer. The tool calls are gathered for the result, and each start is reported
as the request's progress.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from totem_engine.api import events as ev
from totem_engine.api.frontend import PermissionReply, PermissionRequest, QuestionRequest
from totem_engine.api.frontend import MCP_START

Progress = Callable[[str], Awaitable[None]]


@dataclass
class CallSeen:
    """One tool call of the turn, as it ended (``status`` None: it never ended)."""

    tool: str
    title: str
    status: str | None = None
    summary: str = ""
    changed: list[str] = field(default_factory=list)


class ServeFrontEnd:
    def __init__(self, progress: Progress | None = None):
        self.progress = progress
        self.calls: dict[str, CallSeen] = {}
        self.refused: list[str] = []  # what needed an answer nobody could give

    async def emit(self, event: ev.Event) -> None:
        if event.parent_call_id is not None:
            return  # a sub-agent's calls: its task call stands for them
        if isinstance(event, ev.ToolStart):
            self.calls[event.call_id] = CallSeen(event.tool, event.title)
            await self._report(event.title)
        elif isinstance(event, ev.ToolEnd):
            seen = self.calls.setdefault(event.call_id, CallSeen(event.tool, event.tool))
            seen.status, seen.summary, seen.changed = event.status, event.summary, list(event.changed)

    async def permission(self, request: PermissionRequest) -> PermissionReply:
        self.refused.append(request.title)
        if request.needs_person or request.tool == MCP_START:
            return PermissionReply(
                "reject_once", reason="totem mcp serve has nobody to ask; mcp_allow in the user config starts it without asking"
            )
        return PermissionReply(
            "reject_once",
            reason="totem mcp serve has nobody to ask: only the config's [permission] rules decide",
            end_turn=f"{request.title} needs permission, and totem mcp serve asks nobody: the turn stopped. "
            f'A [permission] rule allows it ({request.permission} = {{ "{request.always_pattern}" = "allow" }}, '
            "docs/config.md); or run the turn where someone can answer (totem run, the editor).",
        )

    async def question(self, request: QuestionRequest) -> str | None:
        self.refused.append(f"question: {request.question}")
        return None

    async def _report(self, message: str) -> None:
        if self.progress is not None:
            await self.progress(message)
