"""One ACP session's front end: the engine's events as ``session/update`` notifications, its
permission questions as ``session/request_permission`` requests, the ``ask`` tool's questions
as question.py puts them (docs/acp.md "Updates").

- ``textDelta`` → ``agent_message_chunk``; ``reasoningDelta`` → ``agent_thought_chunk``.
- ``toolStart`` → ``tool_call`` (pending); an allowing ``permission`` → ``in_progress``;
  ``toolEnd`` → ``tool_call_update`` (completed or failed, its output, its diff when the
  permission request had one, the changed files as locations); a command run in the client's
  terminal keeps that terminal as its content instead of its output.
- ``todo`` → ``plan``; ``context`` → ``usage_update`` (when the window is known).
- ``notice``: a warning or error (a guard's reason, the abort) is an agent message of its own
  paragraph, an info notice (a server started) a thought.
- A sub-agent's calls are tool calls titled with its name; its text is not the answer.
- ``stepEnd``'s ``finish`` is kept: the last one decides ``max_tokens`` and ``refusal``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    FileEditToolCallContent,
    PlanEntry,
    TextContentBlock,
    UsageUpdate,
)

from totem_acp import permission, tool_calls
from totem_acp.question import by_form, by_permission
from totem_engine.api import events as ev
from totem_engine.api.frontend import PermissionReply, PermissionRequest, QuestionRequest

log = logging.getLogger(__name__)
# After a ``cancelled`` answer the turn's abort cancels the wait below; this bounds it should
# the abort not reach the asking call (it then ends as a reject).
ABORT_WAIT = 5.0


class AcpFrontEnd:
    """``client``: the SDK's connection to the client; ``abort``: aborts the session's running
    turn (a ``cancelled`` permission answer is part of that abort); ``timeout``: seconds a
    permission request or a question may stay unanswered (config ``permission_timeout``), then a
    reject (no answer). ``forms``: the client takes form elicitation (the ``ask`` tool's
    question goes there, question.py); ``terminals``: call id -> the client's terminal its
    command ran in (terminal.py's ``shown``)."""

    def __init__(
        self, client: Any, session_id: str, root: Path, *, abort: Callable[[], None], timeout: float,
        forms: bool = False, terminals: dict[str, str] | None = None,
    ):
        self.client = client
        self.session_id = session_id
        self.root = root
        self.abort = abort
        self.timeout = timeout
        self.forms = forms
        self.finish: str | None = None  # the last stepEnd's finish
        self.failure: ev.Error | None = None  # the turn's error event, for the prompt's error answer
        self._diffs: dict[str, list[FileEditToolCallContent]] = {}  # callId -> the diff it was asked with
        self.terminals = terminals if terminals is not None else {}

    async def send(self, update: Any) -> None:
        """One ``session/update``; a client gone (the pipe closed) must not end the turn."""
        try:
            await self.client.session_update(session_id=self.session_id, update=update)
        except (ConnectionError, RuntimeError) as exc:
            log.info("session/update not sent: %s", exc)

    async def say(self, text: str, *, thought: bool = False) -> None:
        chunk = AgentThoughtChunk if thought else AgentMessageChunk
        update = "agent_thought_chunk" if thought else "agent_message_chunk"
        await self.send(chunk(session_update=update, content=TextContentBlock(type="text", text=text)))

    async def emit(self, event: ev.Event) -> None:
        nested = event.parent_call_id is not None
        if isinstance(event, ev.TextDelta) and not nested:
            await self.say(event.text)
        elif isinstance(event, ev.ReasoningDelta) and not nested:
            await self.say(event.text, thought=True)
        elif isinstance(event, ev.ToolStart):
            title = f"[{event.agent}] {event.title}" if nested else event.title
            await self.send(tool_calls.opened(self.root, event.call_id, event.tool, title, event.input))
        elif isinstance(event, ev.Permission) and event.decision == "allow":
            await self.send(tool_calls.running(event.call_id))
        elif isinstance(event, ev.ToolEnd):
            await self.send(tool_calls.ended(
                self.root, event.call_id, event.status, event.output, summary=event.summary, changed=event.changed,
                diffs=self._diffs.pop(event.call_id, None), terminal=self.terminals.pop(event.call_id, None),
            ))
        elif isinstance(event, ev.Todo) and not nested:
            entries = [PlanEntry(content=t.content, priority="medium", status=t.status) for t in event.todos]
            await self.send(AgentPlanUpdate(session_update="plan", entries=entries))
        elif isinstance(event, ev.ContextEstimate) and not nested and event.window:
            await self.send(UsageUpdate(session_update="usage_update", used=event.estimate, size=event.window))
        elif isinstance(event, ev.Notice):
            who = f"[{event.agent}] " if nested else ""
            if event.level == "info":
                await self.say(f"{who}{event.message}\n", thought=True)
            else:
                await self.say(f"\n\n{who}{event.message}\n\n")
        elif isinstance(event, ev.StepEnd) and not nested:
            self.finish = event.finish
        elif isinstance(event, ev.Error) and not nested:
            self.failure = event

    async def permission(self, request: PermissionRequest) -> PermissionReply:
        call = permission.tool_call(request, self.root)
        diffs = [c for c in call.content or [] if isinstance(c, FileEditToolCallContent)]
        if diffs:
            self._diffs[request.call_id] = diffs
        try:
            with anyio.fail_after(self.timeout):
                response = await self.client.request_permission(
                    session_id=self.session_id, tool_call=call, options=permission.options(request)
                )
            return permission.reply(response, request)
        except permission.Cancelled:
            # Part of the prompt's cancellation (the client cancels what is open when it
            # cancels the turn), not a reject: the turn is aborted, which cancels this call.
            self.abort()
            with anyio.move_on_after(ABORT_WAIT):
                await anyio.sleep_forever()
            return PermissionReply("reject_once", reason="the turn was cancelled")
        except TimeoutError:
            return PermissionReply("reject_once", reason="no answer came in time")
        except (RequestError, ConnectionError) as exc:
            log.warning("session/request_permission failed: %s", exc)
            return PermissionReply("reject_once", reason="the client answered the permission request with an error")

    async def question(self, request: QuestionRequest) -> str | None:
        """The ``ask`` tool's question: a form where the client takes one, else a permission request."""
        if self.forms:
            return await by_form(self.client, request, self.timeout)
        return await by_permission(self.client, request, self.timeout)
