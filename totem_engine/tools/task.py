"""task: an agent (agents.py) does one task in a fresh context; only its final answer comes back.

The nested run is the turn's (``turn/subagent.py``, through the ``Delegate`` protocol); this tool
is what the model sees: the agents it can name (in its description), the call's permission
(``task``, allowed by default: the agent's own calls ask like any other), a free slot among
``max_agents`` (the others wait), and the answer as the result. What the agent did, its thread,
is kept in the call's stored part, never sent back. A failure of the agent (step limit, guard,
provider error) is its result, marked as an error, not the conversation's end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from pydantic import Field

from totem_engine.agents import AgentDefinition, Agents
from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.vocab.accounts import short
from totem_engine.vocab.tools import ToolError


@dataclass(frozen=True)
class Delegated:
    """What an agent's run came to: its final ``text``, why it stopped (an ``events.StopReason``)
    and the visible ``reason`` of any end but "finished", the model it ran on, and its ``thread``
    (the stored form: agent, model, notes, stopReason, messages)."""

    text: str
    stop_reason: str
    reason: str | None
    model: str
    thread: dict[str, Any] = field(default_factory=dict)


class Delegate(Protocol):
    async def run(self, definition: AgentDefinition, prompt: str, *, call_id: str) -> Delegated: ...


class TaskInput(ToolInput):
    agent: str = Field(description="The agent's name, one of those listed in this tool's description.")
    prompt: str = Field(description="The whole task for the agent: it sees nothing of this conversation.")
    description: str = Field(description="A few words saying what the task is, shown to the user.")


@dataclass
class TaskAction(Action):
    tool: TaskTool | None = None
    definition: AgentDefinition | None = None
    prompt: str = ""

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.tool is not None and self.definition is not None
        name = self.definition.name
        async with self.tool.slots:
            done = await self.tool.delegate.run(self.definition, self.prompt, call_id=ctx.call_id)
        part = {"thread": done.thread}
        if done.stop_reason == "finished":
            return ToolResult(
                output=done.text or f"(The agent {name} gave no answer.)", summary=f"{name} answered ({done.model})", part=part
            )
        said = f" What it said:\n{done.text}" if done.text else ""
        return ToolResult(
            output=f"The agent {name} did not finish ({done.stop_reason}: {done.reason or 'no reason given'}).{said}",
            summary=f"{name} stopped: {done.stop_reason}",
            is_error=True,
            part=part,
        )


class TaskTool(Tool):
    """Built for one turn: ``delegate`` runs an agent, ``agents`` are the project's now, and
    ``limit`` (config ``max_agents``) is how many run at once. ``tools``: the turn's, of which an
    agent gets those its definition names (all but ``task`` when it names none)."""

    name = "task"
    hook_name = "Task"
    concurrent = True
    Input = TaskInput

    def __init__(self, delegate: Delegate, agents: Agents, *, limit: int, tools: Mapping[str, Tool]):
        self.delegate = delegate
        self.agents = agents
        self.slots = anyio.CapacityLimiter(limit)
        self.tools = tools

    def may_change(self, action: Action) -> bool:
        """A task changes the project when one of its agent's tools can."""
        if not isinstance(action, TaskAction) or action.definition is None:
            return True
        return any(tool.can_change for tool in agent_tools(self.tools, action.definition).values())

    @property
    def description(self) -> str:
        listed = "\n".join(f"- {d.name}: {d.description}" for _, d in sorted(self.agents.definitions.items()))
        return f"{super().description}\n\nAgents:\n{listed}"

    async def prepare(self, args: TaskInput, ctx: ToolContext) -> Action:
        definition = self.agents.get(args.agent.strip())
        if definition is None:
            raise ToolError(f"There is no agent named {args.agent!r}. Agents: {', '.join(sorted(self.agents.definitions))}.")
        if not args.prompt.strip():
            raise ToolError("The prompt is empty: say what the agent should do.")
        return TaskAction(
            title=f"{definition.name}: {short(args.description, 60)}",
            permission="task",
            patterns=[definition.name],
            always_pattern=definition.name,
            notes=list(args.notes),
            tool=self,
            definition=definition,
            prompt=args.prompt,
        )


def agent_tools(tools: Mapping[str, Tool], definition: AgentDefinition) -> dict[str, Tool]:
    """The tools an agent runs with: those of ``tools`` its definition names (every one when it
    names none), never ``task``."""
    return {
        name: tool for name, tool in tools.items()
        if name != "task" and (definition.tools is None or name in definition.tools)
    }
