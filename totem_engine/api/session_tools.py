"""The tools a session's model is offered at its next turn, and why fewer than all: what a door
shows as the session's tools (the language server's ``totem/tools``).

The list is the turn's own choice (turn/loop.py ``_offer_tools``) made from the same facts: the
model's capability record (its window and tier pick the surface, tools/registry.py ``surface``),
code mode (turn/scripts.py ``wants_scripts``) and the session's mode (plan mode refuses calls
that may change the project). An MCP server's tools are not in it: a server starts with a turn
(``totem mcp list`` shows them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from totem_engine.prompt_files import tool_description
from totem_engine.tools.registry import is_small, narrowing, on_surface
from totem_engine.tools.task import TaskTool
from totem_engine.turn.scripts import SCRIPT_TOOLS, wants_scripts

if TYPE_CHECKING:
    from totem_engine.runtime import Runtime
    from totem_engine.store import Session

PLAN_REFUSES = "plan mode refuses its calls that change the project"


@dataclass(frozen=True)
class OfferedTool:
    """One tool the model gets: its ``name``, the first sentence of its ``description``, and
    ``refused``: why the session's mode refuses its calls that change something (None: it does not)."""

    name: str
    description: str
    refused: str | None = None


@dataclass(frozen=True)
class SessionTools:
    """``tools``: what the model is offered, by name; ``left_out``: the built-in tools it is not;
    ``narrowed``: why (None: nothing is left out); ``window``: the model's context window in
    tokens (None: unknown); ``scripts``: the model writes its calls as scripts (code mode)."""

    model: str
    mode: str
    window: int | None
    tools: list[OfferedTool]
    left_out: list[str]
    narrowed: str | None
    scripts: bool


@dataclass(frozen=True)
class _Fact:
    """What the list needs of one tool."""

    surface: str
    description: str
    can_change: bool


async def session_tools(runtime: Runtime, session: Session) -> SessionTools:
    """The tools the next turn of ``session`` offers its model (the session's model and mode)."""
    provider_name, model_id = session.model.split("/", 1)
    record = await runtime.capabilities.record(provider_name, model_id)
    facts = {name: _Fact(tool.surface, tool.description, tool.can_change) for name, tool in runtime.agent.tools.items()}
    if runtime.agent.delegates:  # the turn adds the task tool (turn/loop.py ``_setup``)
        facts["task"] = _Fact(TaskTool.surface, tool_description("task"), True)
    window, tier = record.context_window, record.tier
    chosen = {name for name, fact in facts.items() if on_surface(fact.surface, window, tier)}
    scripts = wants_scripts(runtime.config.code_mode, record, small=is_small(window, tier))
    if scripts:
        chosen |= SCRIPT_TOOLS & set(facts)
    plan = session.mode == "plan"
    offered = [
        OfferedTool(name, _first_sentence(facts[name].description), PLAN_REFUSES if plan and facts[name].can_change else None)
        for name in sorted(chosen)
    ]
    left_out = sorted(set(facts) - chosen)
    return SessionTools(
        model=session.model, mode=session.mode, window=window, tools=offered, left_out=left_out,
        narrowed=narrowing(window, tier) if left_out else None, scripts=scripts,
    )


def _first_sentence(text: str) -> str:
    first = text.split(". ", 1)[0].split("\n", 1)[0].rstrip(".")
    return first + "." if first else ""
