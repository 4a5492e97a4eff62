"""Chat turns over LSP: ``totem/chat``, ``totem/abort``, ``totem.server.ask``.

A turn runs on the server's event loop; its events go out as ``totem/event`` notifications
(stream.py), its questions as requests to the editor (permission.py). One turn per session at a
time. ``$/cancelRequest`` on the chat request, ``totem/abort`` and ``totem.server.abort`` all
abort the turn, and the chat request still answers, with stopReason ``aborted``.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from totem_engine import events as ev
from totem_engine.frontend import PermissionReply, PermissionRequest, QuestionRequest
from totem_engine.turn.loop import Turn, TurnResult
from totem_engine.runtime import Runtime
from totem_engine.store import Session
from totem_engine.tools.paths import relative
from totem_lsp import protocol
from totem_lsp.attachments import images_of
from totem_lsp.diagnostics import Diagnostics
from totem_lsp.messages import AskParams, ChatContext, ChatParams, ChatResult
from totem_lsp.permission import declared
from totem_lsp.project import Projects
from totem_lsp.stream import EventStream
from totem_lsp.uris import path_of


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
            self.chats.stream.publish(event.to_wire())
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
        return session_id in self.turns

    async def _start(self, params: ChatParams) -> _Started | ChatResult:
        if params.session_id in self.turns:
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
        mode = params.mode or runtime.config.mode
        prepared = runtime.prepare(params.text)  # a slash command expanded (commands.py)
        if prepared.action is not None:
            return await _act(prepared.action, session, runtime)
        model = runtime.resolve_model(params.model or prepared.model or (session.model if session else self.projects.model))
        if session is None:
            # Titled by what the user typed, not by the context block sent with it.
            session = await runtime.new_session(model=model, mode=mode, text=params.text)
        text = await with_context(params.model_copy(update={"text": prepared.text}), root, self.projects)
        # No await between this check and the registration below: two chats cannot both pass it.
        if session.id in self.turns:
            raise SessionBusy(f"Session {session.id} is busy: a turn is still running. Abort it or wait for it to end.")
        turn = runtime.turn(
            text, LspFrontEnd(self, runtime, params.work_done_token), session=session, model=model, mode=mode,
            typed=params.text if prepared.command else None, as_agent=prepared.agent, attachments=images,
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


async def with_context(params: ChatParams, root: Path, projects: Projects) -> str:
    """The user's text, preceded by the place in the editor it is about."""
    if params.context is None:
        return params.text
    path = path_of(params.context.uri)
    try:
        rel = relative(root, path) if path else None
    except ValueError:
        rel = None
    if rel is None:
        return params.text
    selection = params.context.range
    if selection is None:
        return f'<context file="{rel}"/>\n\n{params.text}'
    try:
        lines = (await projects.workspace.read_bytes(path)).decode("utf-8", errors="replace").split("\n")
    except OSError:
        return f'<context file="{rel}"/>\n\n{params.text}'
    first, last = selection.start.line, selection.end.line
    if selection.end.character == 0 and last > first:
        last -= 1
    excerpt = "\n".join(lines[first : last + 1])
    return f'<context file="{rel}" lines="{first + 1}-{last + 1}">\n{excerpt}\n</context>\n\n{params.text}'


def ask_prompt(params: AskParams) -> str:
    if params.text:
        return params.text
    diagnostic = params.diagnostic
    if diagnostic is not None and diagnostic.message:
        line = (diagnostic.range.start.line if diagnostic.range else 0) + 1
        code = f" ({diagnostic.code})" if diagnostic.code else ""
        return f"Fix this problem reported at line {line}: {diagnostic.message}{code}"
    return "Explain this code, and point out anything that looks wrong."
