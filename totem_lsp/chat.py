"""Chat turns over LSP: ``totem/chat``, ``totem/abort``, ``totem.server.ask``, and the turns that
answer a stored request again, ``totem/retry`` and ``totem/regenerate``.

A turn runs on the server's event loop; its events go out as ``totem/event`` notifications
(stream.py), its questions as requests to the editor (permission.py). One turn per session at a
time. ``$/cancelRequest`` on the chat request, ``totem/abort`` and ``totem.server.abort`` all
abort the turn, and the chat request still answers, with stopReason ``aborted``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from totem_engine.api import events as ev
from totem_engine.attachments import with_attachments
from totem_engine.api.frontend import PermissionReply, PermissionRequest, QuestionRequest
from totem_engine.runtime import Runtime
from totem_engine.store import Session
from totem_engine.turn.loop import Turn
from totem_engine.turn.terms import TurnResult
from totem_lsp import protocol
from totem_lsp.attach import Attacher
from totem_lsp.images import images_of
from totem_lsp.diagnostics import Diagnostics
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


class SessionBusy(JsonRpcException):
    CODE = protocol.SESSION_BUSY


class LspFrontEnd:
    """One turn's front end: events to the stream, questions to the editor, progress if asked."""

    def __init__(self, chats: "Chats", runtime: Runtime, progress_token: str | int | None):
        self.chats = chats
        self.root = runtime.root
        self.asker = chats.projects.asker_for(runtime)
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


@dataclass
class _Started:
    session_id: str
    turn: Turn


class Chats:
    def __init__(self, server: LanguageServer, projects: Projects, diagnostics: Diagnostics):
        self.server = server
        self.projects = projects
        self.diagnostics = diagnostics
        self.stream = EventStream(lambda event: server.protocol.notify(protocol.EVENT, event))
        self.turns: dict[str, Turn] = {}
        self.starting: set[str] = set()  # sessions whose turn is being built (retry, regenerate)
        self.progress: dict[str | int, str] = {}  # workDoneToken -> session of the turn it reports

    def cancel_progress(self, token: str | int) -> None:
        """``window/workDoneProgress/cancel``: the user pressed cancel on the progress."""
        session_id = self.progress.get(token)
        if session_id is not None:
            self.abort(session_id)

    async def chat(self, params: ChatParams) -> ChatResult:
        started = await self._start(params)
        if isinstance(started, ChatResult):
            return started  # a built-in action (/undo, /compact): done, no turn
        result = await self._run(started)
        return ChatResult(session_id=result.session_id, stop_reason=result.stop_reason, text=result.text)

    async def ask(self, params: AskParams) -> dict[str, str]:
        """``totem.server.ask``: start a turn about a place in a document; answer with its session at once."""
        chat = ChatParams(text=ask_prompt(params), context=ChatContext(uri=params.uri, range=params.range))
        started = await self._start(chat)
        assert isinstance(started, _Started)  # the ask prompt is never a slash command
        task = asyncio.ensure_future(self._run(started))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # failures are already events
        return {"sessionId": started.session_id}

    def abort(self, session_id: str) -> bool:
        turn = self.turns.get(session_id)
        if turn is None:
            return False
        turn.abort()
        return True

    async def abort_all(self, timeout: float = 10.0) -> None:
        for session_id in list(self.turns):
            self.abort(session_id)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self.turns:
                    await asyncio.sleep(0.01)

    def busy(self, session_id: str) -> bool:
        return session_id in self.turns or session_id in self.starting

    async def regenerate(self, params: RegenerateParams) -> ChatResult:
        """``totem/regenerate``: a new variant of an answer, as a turn; answers when it ends."""
        def build(runtime: Runtime, frontend: LspFrontEnd) -> Awaitable[Turn]:
            return runtime.regenerate(params.session_id, params.message_id, frontend, model=params.model, mode=params.mode)

        return await self._again(params.session_id, build, params.work_done_token)

    async def retry(self, params: RetryParams) -> ChatResult:
        """``totem/retry``: the session's failed last turn taken up again; answers when it ends."""
        def build(runtime: Runtime, frontend: LspFrontEnd) -> Awaitable[Turn]:
            return runtime.retry(params.session_id, frontend, model=params.model, mode=params.mode)

        return await self._again(params.session_id, build, params.work_done_token)

    async def _again(
        self, session_id: str, build: Callable[[Runtime, LspFrontEnd], Awaitable[Turn]], token: str | int | None
    ) -> ChatResult:
        if self.busy(session_id):
            raise SessionBusy(f"Session {session_id} is busy: a turn is still running. Abort it or wait for it to end.")
        self.starting.add(session_id)  # from here on another request for it is busy, across the awaits
        try:
            session = await self.projects.store.get_session(session_id)
            runtime = await self.projects.runtime(Path(session.cwd).resolve())
            turn = await build(runtime, LspFrontEnd(self, runtime, token))
            self.turns[session_id] = turn
        finally:
            self.starting.discard(session_id)
        if token is not None:
            self.progress[token] = session_id
        result = await self._run(_Started(session_id, turn))
        return ChatResult(session_id=result.session_id, stop_reason=result.stop_reason, text=result.text)

    async def _start(self, params: ChatParams) -> _Started | ChatResult:
        if params.session_id is not None and self.busy(params.session_id):
            # Before the session is read: a turn ending meanwhile would leave its state unread.
            raise SessionBusy(f"Session {params.session_id} is busy: a turn is still running. Abort it or wait for it to end.")
        session = await self.projects.store.get_session(params.session_id) if params.session_id else None
        images = await images_of(params.attachments)  # a bad one refuses the request before a session is made
        # A session continues in its own project, whatever document the request came from.
        root = Path(session.cwd).resolve() if session else self.projects.root_for(params.context.uri if params.context else None)
        runtime = await self.projects.runtime(root)
        for notice in self.projects.notices:
            self.server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=notice))
        self.projects.notices.clear()
        # The session's mode, stored with it (totem/setMode); the chat's own overrides this turn only.
        session_mode = session.mode if session else (self.projects.mode or runtime.config.mode)
        mode = params.mode or session_mode
        prepared = runtime.prepare(params.text)  # a slash command expanded (commands.py)
        if prepared.action is not None:
            return await _act(prepared.action, session, runtime)
        model = runtime.resolve_model(params.model or prepared.model or (session.model if session else self.projects.model))
        if session is None:
            # Titled by what the user typed, not by the context block sent with it.
            session = await runtime.new_session(model=model, mode=session_mode, text=params.text)
        # The editor's context and the message's mentions, one block each before the text (attach.py).
        attached = await Attacher(root, self.projects.workspace.read_bytes, self.diagnostics.findings).attachments(params)
        mentioned = any(a.mention for a in attached)
        # No await between this check and the registration below: two chats cannot both pass it.
        if self.busy(session.id):
            raise SessionBusy(f"Session {session.id} is busy: a turn is still running. Abort it or wait for it to end.")
        turn = runtime.turn(
            with_attachments(prepared.text, attached), LspFrontEnd(self, runtime, params.work_done_token),
            session=session, model=model, mode=mode, typed=params.text if prepared.command or mentioned else None,
            as_agent=prepared.agent, attached=attached, images=images,
        )
        self.turns[session.id] = turn
        if params.work_done_token is not None:
            self.progress[params.work_done_token] = session.id
        return _Started(session.id, turn)

    async def _run(self, started: _Started) -> TurnResult:
        task = asyncio.ensure_future(started.turn.run())
        try:
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                # $/cancelRequest cancelled the request: abort the turn, and still answer with it.
                started.turn.abort()
                return await task
        finally:
            self.turns.pop(started.session_id, None)
            self.progress = {t: s for t, s in self.progress.items() if s != started.session_id}
            self.stream.end(started.session_id)


async def _act(action: str, session: Session | None, runtime: Runtime) -> ChatResult:
    """A built-in action typed in the chat, on its session; the answer says what it did."""
    if session is None:
        raise JsonRpcInvalidParams(f"/{action} works on a session: send sessionId.")
    if action == "undo":
        outcomes = await runtime.undo(session.id)
        lines = [f"{o.action} {o.path}" + (f" ({o.reason})" if o.reason else "") for o in outcomes]
        text = "\n".join(lines) if lines else "Nothing to undo."
    else:
        checkpoint = await runtime.compact(session.id)
        text = (
            f"Compacted: {checkpoint.messages} message{'s are' if checkpoint.messages != 1 else ' is'} summarised;"
            " the next turn starts from the summary."
            if checkpoint is not None else "Nothing new to compact."
        )
    return ChatResult(session_id=session.id, stop_reason="finished", text=text)


def ask_prompt(params: AskParams) -> str:
    if params.text:
        return params.text
    diagnostic = params.diagnostic
    if diagnostic is not None and diagnostic.message:
        line = (diagnostic.range.start.line if diagnostic.range else 0) + 1
        code = f" ({diagnostic.code})" if diagnostic.code else ""
        return f"Fix this problem reported at line {line}: {diagnostic.message}{code}"
    return "Explain this code, and point out anything that looks wrong."
