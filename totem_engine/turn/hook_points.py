"""Where a turn runs the user's hooks (totem_engine/hooks/), what each is told, and what its
verdict does there.

- SessionStart (the first turn of a session in this runtime; ``source`` startup or resume) and
  UserPromptSubmit (a new request, not one answered again): their context goes beside the
  request, as the model reads Totem's own context; a block of the prompt ends the turn before
  the request is stored.
- PreToolUse (after the permission rules, before the user is asked) and PostToolUse (after a
  call that succeeded; its output joins the result the model reads): calls.py.
- Stop (SubagentStop in a sub-agent's turn): a block makes the turn go on with the reason,
  ``STOP_CONTINUES`` times a turn at most, so a hook that always blocks cannot loop for ever.
- PreCompact (before a summary is written), Notification (a question waits for the user).

A hook that fails, hangs or is killed never stops the turn: the user is told, and the turn goes
on as if it had not run. A sub-agent's turn runs the tool hooks and SubagentStop only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

import anyio

from totem_engine.api import events as ev
from totem_engine.hooks import Hooks, Verdict
from totem_engine.tools.base import Tool, ToolResult

STOP_CONTINUES = 1  # times a Stop hook may keep one turn going

T = TypeVar("T")


@dataclass(frozen=True)
class Opening:
    """What the hooks made of a new request: ``context`` for the model, or ``blocked``: why not."""

    context: str = ""
    blocked: str | None = None


class HookHost(Protocol):
    """What the hook points read of their turn (``loop.Turn``): ``agent.hooks``, ``agent.root``,
    ``agent.subagent``, ``options.mode``; ``emit`` and ``notice`` to tell the user."""

    agent: Any
    options: Any
    session_id: str
    text: str
    typed: str | None

    async def emit(self, event: ev.Event) -> None: ...

    async def notice(self, message: str, *, level: ev.NoticeLevel = "info") -> None: ...


class HookPoints:
    """The hooks of one turn (``turn.agent.hooks``)."""

    def __init__(self, turn: HookHost):
        self.turn = turn
        self.stop_continues = 0

    @property
    def _hooks(self) -> Hooks:
        return self.turn.agent.hooks

    def _common(self) -> dict[str, Any]:
        return {
            "session_id": self.turn.session_id,
            "permission_mode": "plan" if self.turn.options.mode == "plan" else "default",
        }

    async def _run(self, event: str, payload: dict, *, names: tuple[str, ...] = ()) -> Verdict:
        if not self._hooks.wanted(event, names):
            return Verdict()
        verdict = await self._hooks.run(event, {**self._common(), **payload}, names=names)
        await self._say(event, verdict)
        return verdict

    async def _say(self, event: str, verdict: Verdict) -> None:
        """A hook's own failure and its ``systemMessage``, for the user."""
        for outcome in verdict.outcomes:
            if outcome.error is not None:
                message = f"The {event} hook `{outcome.hook.command}` ({outcome.hook.source}) {outcome.error}; Totem went on."
                await self.turn.emit(ev.Notice(session_id=self.turn.session_id, level="warning", message=message))
            if outcome.message:
                await self.turn.emit(ev.Notice(session_id=self.turn.session_id, level="info", message=outcome.message))

    async def opening(self, *, resumed: bool) -> Opening:
        """SessionStart when the session has not started in this runtime (``resumed``: it has
        messages already), then UserPromptSubmit with the request."""
        contexts: list[str] = []
        started = self._hooks.started
        if self.turn.session_id not in started:
            started.add(self.turn.session_id)
            source = "resume" if resumed else "startup"
            contexts.append((await self._run("SessionStart", {"source": source}, names=(source,))).context)
        verdict = await self._run("UserPromptSubmit", {"prompt": self.turn.typed or self.turn.text})
        if verdict.blocked or verdict.stop:
            why = verdict.reason if verdict.blocked else verdict.stop
            return Opening(blocked=f"A UserPromptSubmit hook blocked the prompt: {why}")
        contexts.append(verdict.context)
        return Opening(context="\n\n".join(c for c in contexts if c))

    async def before_tool(self, tool: Tool, call_id: str, tool_input: dict) -> Verdict:
        return await self._run("PreToolUse", _tool_payload(self.turn, tool, call_id, tool_input), names=_names(tool))

    async def after_tool(self, tool: Tool, call_id: str, tool_input: dict, result: ToolResult) -> Verdict:
        payload = _tool_payload(self.turn, tool, call_id, tool_input)
        payload["tool_response"] = {"output": result.output, "success": not result.is_error, "changed": list(result.changed)}
        return await self._run("PostToolUse", payload, names=_names(tool))

    async def stop(self) -> str | None:
        """Stop (SubagentStop in a sub-agent) as the model finishes: the reason to go on, or None."""
        event = "SubagentStop" if self.turn.agent.subagent else "Stop"
        if not self._hooks.wanted(event):
            return None
        verdict = await self._run(event, {"stop_hook_active": self.stop_continues > 0})
        if not verdict.blocked or verdict.stop:
            return None
        if self.stop_continues >= STOP_CONTINUES:
            await self.turn.notice(
                f"A {event} hook blocked the end of the turn again; the turn ends (a hook may keep a turn going"
                f" {STOP_CONTINUES} time{'s' if STOP_CONTINUES != 1 else ''}): {verdict.reason}",
                level="warning",
            )
            return None
        self.stop_continues += 1
        return verdict.reason

    async def pre_compact(self, trigger: str) -> None:
        await self._run("PreCompact", {"trigger": trigger, "custom_instructions": ""}, names=(trigger,))

    async def while_asking(self, message: str, kind: str, ask: Callable[[], Awaitable[T]]) -> T:
        """``ask()``, the user's answer, while the Notification hooks run beside it: a hook that
        rings a bell must not hold the question back; one still running when the answer comes
        is stopped."""
        if not self._hooks.wanted("Notification", (kind,)):
            return await ask()
        async with anyio.create_task_group() as group:
            payload = {"message": message, "notification_type": kind}
            group.start_soon(partial(self._run, "Notification", payload, names=(kind,)))
            answer = await ask()
            group.cancel_scope.cancel()
        return answer


def _names(tool: Tool) -> tuple[str, ...]:
    """What a tool matcher is matched against: Totem's name and Claude Code's."""
    return (tool.name, tool.hook_name) if tool.hook_name else (tool.name,)


def _tool_payload(turn: HookHost, tool: Tool, call_id: str, tool_input: dict) -> dict[str, Any]:
    """A tool call as Claude Code's hooks see one: its name (Claude Code's where Totem's tool has
    a counterpart; ``totem_tool_name`` always Totem's), its input with ``file_path`` (absolute)
    beside Totem's project-relative ``path``, and its id."""
    shown = dict(tool_input)
    if isinstance(shown.get("path"), str):
        shown["file_path"] = str(turn.agent.root / shown["path"])
    return {
        "tool_name": tool.hook_name or tool.name, "totem_tool_name": tool.name, "tool_input": shown, "tool_use_id": call_id,
    }
