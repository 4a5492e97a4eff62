"""A sub-agent's run, for the ``task`` tool (tools/task.py): a nested turn in a fresh context.

The nested turn is an ordinary ``Turn`` (made by ``start``) of the project as ``Agent.nested`` gives it: its own store
in a temporary folder (its thread: the messages start empty, so the model sees only the task),
the agent's tools (never ``task``), the project's rules with the agent's own after them, its step
limit, its prompt in place of ``base.txt`` (environment, AGENTS.md and skills as for any turn), and
its model, or the conversation's when that is not available (the thread and a notice say so). It
runs under its conversation's session id and turn id, so what it changes is snapshotted with the
conversation's turn and one undo takes both back. Its events reach the user's front end marked
with ``parentCallId`` and ``agent`` (its own ``turnStart``/``turnEnd`` are not sent: the ``task``
call's ``toolStart``/``toolEnd`` bound it), and its questions carry the agent's name.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from collections.abc import Callable
from typing import Any, Protocol

from totem_engine.api import events as ev
from totem_engine import scratch
from totem_engine.agents import AgentDefinition
from totem_engine.config import Config
from totem_engine.api.frontend import FrontEnd, PermissionReply, PermissionRequest, QuestionRequest
from totem_engine.store import Store
from totem_engine.tools.base import Tool
from totem_engine.tools.task import Delegated, agent_tools


class _Project(Protocol):
    root: Path
    tools: dict[str, Tool]
    rules: list[ev.RuleRef]
    config: Config

    def nested(self, *, store: Store, tools: dict[str, Tool], rules: list[ev.RuleRef], subagent: bool) -> Any: ...


class Parent(Protocol):
    """What a sub-agent's run needs of its conversation's turn (``loop.Turn``)."""

    agent: _Project
    frontend: FrontEnd
    options: Any  # terms.TurnOptions: copied with the agent's own limit and prompt
    session_id: str
    turn_id: str
    model: str
    children: list[Any]


class SubAgents:
    """Runs agents for one turn (``tools.task.Delegate``); ``start`` makes a turn of a project
    (``loop.Turn``: called as ``start(project, prompt, frontend, ...)``)."""

    def __init__(self, parent: Parent, *, start: Callable[..., Any]):
        self.parent = parent
        self.start = start

    def model_for(self, definition: AgentDefinition) -> tuple[str, list[str]]:
        """The model the agent runs on, and the note saying why it is not its own."""
        parent = self.parent
        if definition.model is None or definition.model == parent.model:
            return parent.model, []
        provider = definition.model.split("/", 1)[0]
        if provider in parent.agent.config.providers:
            return definition.model, []
        return parent.model, [
            f"The model {definition.model} is not available (no provider {provider!r} is configured), "
            f"so the agent {definition.name} ran on the conversation's model, {parent.model}."
        ]

    async def run(self, definition: AgentDefinition, prompt: str, *, call_id: str) -> Delegated:
        parent = self.parent
        project = parent.agent
        model, notes = self.model_for(definition)
        tools = agent_tools(project.tools, definition)
        frontend = NestedFrontEnd(parent.frontend, call_id=call_id, agent=definition.name)
        options = replace(
            parent.options,
            max_steps=definition.max_steps if definition.max_steps is not None else parent.options.max_steps,
            persona=definition.prompt,
        )
        async with scratch.folder("agent") as folder:
            store = Store(folder / "thread.sqlite")
            try:
                session = await store.create_session(
                    cwd=str(project.root), model=model, mode=options.mode, title=definition.name, session_id=parent.session_id
                )
                nested = project.nested(
                    store=store, tools=tools, rules=[*project.rules, *definition.rules()], subagent=True,
                )
                nested.notices.extend(notes)
                turn = self.start(
                    nested, prompt, frontend, session_id=session.id, model=model, options=options, session=session, turn_id=parent.turn_id
                )
                parent.children.append(turn)
                try:
                    result = await turn.run()
                finally:
                    parent.children.remove(turn)
                messages = [m.to_dict() for m in await store.messages(session.id)]
            finally:
                await store.close()
        thread = {
            "agent": definition.name, "model": model, "notes": notes, "stopReason": result.stop_reason, "messages": messages,
        }
        return Delegated(text=result.text, stop_reason=result.stop_reason, reason=result.reason, model=model, thread=thread)


class NestedFrontEnd:
    """The user's front end as a sub-agent reaches it: its events marked, its asks titled."""

    def __init__(self, outer: FrontEnd, *, call_id: str, agent: str):
        self.outer = outer
        self.call_id = call_id
        self.agent = agent

    async def emit(self, event: ev.Event) -> None:
        if isinstance(event, (ev.TurnStart, ev.TurnEnd)):
            return  # the task call's toolStart and toolEnd are the agent's start and end
        await self.outer.emit(event.model_copy(update={"parent_call_id": self.call_id, "agent": self.agent}))

    async def permission(self, request: PermissionRequest) -> PermissionReply:
        return await self.outer.permission(replace(request, title=f"[{self.agent}] {request.title}"))

    async def question(self, request: QuestionRequest) -> str | None:
        return await self.outer.question(replace(request, question=f"[{self.agent}] {request.question}"))
