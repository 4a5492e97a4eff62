"""Chat turns over LSP: ``totem/chat``, ``totem/abort``, ``totem.server.ask``, and the turns that
answer a stored request again, ``totem/retry`` and ``totem/regenerate``.

Every turn is the engine's: ``Engine.prompt`` (which also does a built-in action typed in the
chat, ``/undo`` ... ``/retry``), ``retry`` or ``regenerate`` hands back a ``Running``, and the
engine keeps one turn per session (a second one is ``SessionBusy``). What is left here is the
LSP's side: the turn's events go out as ``totem/event`` notifications (stream.py), a sub-agent's
only to a client that nests them; its questions go to the editor as requests (permission.py);
progress on the request's ``workDoneToken``; diagnostics for the files the agent changed.
``$/cancelRequest`` on the chat request, ``totem/abort`` and ``totem.server.abort`` all abort the
turn, and the chat request still answers, with stopReason ``aborted``.
"""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from totem_engine.api import events as ev
from totem_engine.api.engine import Engine
from totem_engine.api.frontend import (
    PermissionReply,
    PermissionRequest,
    QuestionRequest,
)
from totem_engine.api.running import Result, Running
from totem_lsp import protocol
from totem_lsp.attach import Attacher
from totem_lsp.diagnostics import Diagnostics
from totem_lsp.images import images_of
from totem_lsp.messages import (
    AskParams,
    ChatContext,
    ChatParams,
    ChatResult,
    RegenerateParams,
    RetryParams,
)
from totem_lsp.permission import declared
from totem_lsp.project import Projects
from totem_lsp.stream import EventStream


class LspFrontEnd:
    """One turn's front end: events to the stream, questions to the editor, progress if asked."""

    def __init__(self, chats: "Chats", engine: Engine, progress_token: str | int | None):
        self.chats = chats
        self.root = engine.root
        self.asker = chats.projects.asker_for(engine)
        self.progress_token = progress_token

    async def emit(self, event: ev.Event) -> None:
        # A sub-agent's events only to a client that declared it nests them: another would show
        # the agent's text as the answer's (docs/protocol.md "Client capabilities").
        if event.parent_call_id is None or declared(self.chats.server, "subAgents"):
            self.chats.stream.publish(event)
        if isinstance(event, ev.ToolEnd) and event.checks:
            self.chats.diagnostics.after_agent_edit(self.root, event.checks)
        if self.progress_token is None:
            return
        progress = self.chats.server.work_done_progress
        if isinstance(event, ev.TurnStart):
            progress.begin(self.progress_token, types.WorkDoneProgressBegin(title="Totem", message="Thinking", cancellable=True))
        elif isinstance(event, ev.ToolStart):
            progress.report(self.progress_token, types.WorkDoneProgressReport(message=event.title))
        elif isinstance(event, ev.TurnEnd):
            progress.end(self.progress_token, types.WorkDoneProgressEnd(message=event.stop_reason))

    async def permission(self, request: PermissionRequest) -> PermissionReply:
        return await self.asker.permission(request, self.root)

    async def question(self, request: QuestionRequest) -> str | None:
        return await self.asker.question(request)


class Chats:
    def __init__(self, server: LanguageServer, projects: Projects, diagnostics: Diagnostics):
        self.server = server
        self.projects = projects
        self.diagnostics = diagnostics
        self.stream = EventStream(lambda event: server.protocol.notify(protocol.EVENT, event))
        self.progress: dict[str | int, str] = {}  # workDoneToken -> session of the turn it reports

    def cancel_progress(self, token: str | int) -> None:
        """``window/workDoneProgress/cancel``: the user pressed cancel on the progress."""
        session_id = self.progress.get(token)
        if session_id is not None:
            self.abort(session_id)

    def abort(self, session_id: str) -> bool:
        return self.projects.engines.abort(session_id)

    async def chat(self, params: ChatParams) -> ChatResult:
        """``totem/chat``: a turn, answered when it ends; a built-in action, answered with its reply."""
        return _answer(await self._run(await self._prompt(params), params.work_done_token))

    async def ask(self, params: AskParams) -> dict[str, str]:
        """``totem.server.ask``: start a turn about a place in a document; answer with its session at once."""
        running = await self._prompt(ChatParams(text=ask_prompt(params), context=ChatContext(uri=params.uri, range=params.range)))
        task = asyncio.ensure_future(self._run(running, None))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # failures are already events
        return {"sessionId": running.session_id}

    async def retry(self, params: RetryParams) -> ChatResult:
        """``totem/retry``: the session's failed last turn taken up again; answers when it ends."""
        engine, _ = await self.projects.of_session(params.session_id)
        frontend = LspFrontEnd(self, engine, params.work_done_token)
        running = await engine.retry(params.session_id, frontend, model=params.model, mode=params.mode)
        return _answer(await self._run(running, params.work_done_token))

    async def regenerate(self, params: RegenerateParams) -> ChatResult:
        """``totem/regenerate``: a new variant of an answer, as a turn; answers when it ends."""
        engine, _ = await self.projects.of_session(params.session_id)
        frontend = LspFrontEnd(self, engine, params.work_done_token)
        running = await engine.regenerate(
            params.session_id, params.message_id, frontend, model=params.model, mode=params.mode
        )
        return _answer(await self._run(running, params.work_done_token))

    async def _prompt(self, params: ChatParams) -> Running:
        images = await images_of(params.attachments)  # a bad one refuses the request before a session is made
        if params.session_id is not None:
            # A session continues in its own project, whatever document the request came from.
            engine, _ = await self.projects.of_session(params.session_id)
        else:
            engine = await self.projects.engine(params.context.uri if params.context else None)
            action = engine.action_of(params.text)
            if action is not None:  # the chat has no session yet: never another one's
                raise JsonRpcInvalidParams(f"/{action} works on a session: send sessionId.")
        # The editor's context and the message's mentions, one block each before the text (attach.py).
        attached = await Attacher(engine.root, self.projects.workspace.read_bytes, self.diagnostics.findings).attachments(params)
        return await engine.prompt(
            params.text, LspFrontEnd(self, engine, params.work_done_token), session_id=params.session_id,
            model=params.model, mode=params.mode, attachments=attached, images=images,
        )

    async def _run(self, running: Running, token: str | int | None) -> Result:
        """The turn run to its end, its progress and stream closed; a cancelled request aborts it
        and still answers with it."""
        if running.is_action:
            return await running.result()
        if token is not None:
            self.progress[token] = running.session_id
        task = asyncio.ensure_future(running.result())
        try:
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                # $/cancelRequest cancelled the request: abort the turn, and still answer with it.
                running.abort()
                return await task
        finally:
            self.progress = {t: s for t, s in self.progress.items() if s != running.session_id}
            self.stream.end(running.session_id)


def _answer(result: Result) -> ChatResult:
    return ChatResult(session_id=result.session_id, stop_reason=result.stop_reason, text=result.text)


def ask_prompt(params: AskParams) -> str:
    if params.text:
        return params.text
    diagnostic = params.diagnostic
    if diagnostic is not None and diagnostic.message:
        line = (diagnostic.range.start.line if diagnostic.range else 0) + 1
        code = f" ({diagnostic.code})" if diagnostic.code else ""
        return f"Fix this problem reported at line {line}: {diagnostic.message}{code}"
    return "Explain this code, and point out anything that looks wrong."
