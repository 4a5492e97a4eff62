"""Everything behind the ``totem/*`` handlers, built on first need so ``initialize`` stays fast.

server.py registers thin handlers that validate their params here (messages.py) and delegate:
chat to chat.py, sessions and models to the engine's store and providers, undo and redo to
the engine's snapshots.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from totem_engine.agents import AgentDefinition, remove_agent, save_agent
from totem_engine.branches import FilesNotAtTurnStart, NothingToRetry, NotInConversation
from totem_engine.commands import ACTIONS
from totem_engine.config import ConfigError
from totem_engine.jobs import JobNotFound
from totem_engine.providers.errors import ProviderError
from totem_engine.runtime import Runtime
from totem_engine.store import MessageNotFound, SessionElsewhere, SessionInUse, SessionNotFound
from totem_lsp import conversation, protocol
from totem_lsp.chat import Chats, SessionBusy
from totem_lsp.complete import complete, open_documents
from totem_lsp.diagnostics import Diagnostics
from totem_lsp.messages import (
    AgentDeleteParams,
    AgentSaveParams,
    AskParams,
    ChatParams,
    CompleteParams,
    FileOutcome,
    ForkParams,
    JobStopParams,
    ProjectRef,
    RegenerateParams,
    RetryParams,
    RewindParams,
    SessionParams,
    SessionRef,
    SetModelParams,
    SetModeParams,
    VariantParams,
    plain,
)
from totem_lsp.project import Projects

P = TypeVar("P", bound=BaseModel)


class ConfigProblem(JsonRpcException):
    CODE = protocol.CONFIG_ERROR


def parse(model: type[P], params: Any) -> P:
    """Validated params, or a JSON-RPC invalid-params error saying what is wrong."""
    try:
        return model.model_validate(plain(params) or {})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in exc.errors())
        raise JsonRpcInvalidParams(f"Invalid params: {problems}") from None


class Service:
    def __init__(self, server: LanguageServer, *, settings: dict[str, Any] | None, model: str | None):
        self.server = server
        self.projects = Projects(server, settings=settings, model=model)
        self.diagnostics = Diagnostics(server, self.projects)
        self.chats = Chats(server, self.projects, self.diagnostics)

    async def chat(self, params: Any) -> dict[str, Any]:
        request = parse(ChatParams, params)
        with _engine_errors():
            return (await self.chats.chat(request)).wire()

    async def ask(self, params: Any) -> dict[str, Any]:
        with _engine_errors():
            return await self.chats.ask(parse(AskParams, params))

    def abort(self, params: Any) -> dict[str, bool]:
        return {"aborted": self.chats.abort(parse(SessionRef, params).session_id)}

    async def sessions(self) -> list[dict[str, Any]]:
        roots = {str(root) for root in self.projects.roots()}
        listed = await self.projects.store.list_sessions()
        return [
            {
                "sessionId": s.id,
                "title": s.title or "",
                "model": s.model,
                "mode": s.mode,
                "createdAt": s.created_at,
                "updatedAt": s.updated_at,
            }
            for s in listed
            if s.cwd in roots
        ]

    async def session(self, params: Any) -> dict[str, Any]:
        with _engine_errors():
            return await conversation.session_payload(self.projects.store, parse(SessionParams, params))

    async def rewind(self, params: Any) -> dict[str, Any]:
        request = parse(RewindParams, params)
        self._not_busy(request.session_id, "rewind")
        with _engine_errors():
            return await conversation.rewind(self.projects, request)

    async def retry(self, params: Any) -> dict[str, Any]:
        request = parse(RetryParams, params)
        with _engine_errors():
            return (await self.chats.retry(request)).wire()

    async def regenerate(self, params: Any) -> dict[str, Any]:
        request = parse(RegenerateParams, params)
        with _engine_errors():
            return (await self.chats.regenerate(request)).wire()

    async def variant(self, params: Any) -> dict[str, Any]:
        request = parse(VariantParams, params)
        self._not_busy(request.session_id, "switching variants")
        with _engine_errors():
            return await conversation.variant(self.projects, request)

    async def fork(self, params: Any) -> dict[str, Any]:
        request = parse(ForkParams, params)
        with _engine_errors():
            return await conversation.fork(self.projects, request)

    def _not_busy(self, session_id: str, what: str) -> None:
        if self.chats.busy(session_id):
            raise SessionBusy(f"Session {session_id} is busy: {what} waits until its turn ends.")

    async def models(self) -> list[dict[str, Any]]:
        with _engine_errors():
            runtime = await self.projects.runtime(self.projects.roots()[0])
        try:
            default = self.projects.default_model(runtime)
        except ConfigError:
            default = None
        found = []
        for name in runtime.config.providers:
            try:
                listed = await runtime.provider(name).models()
            except (ProviderError, ConfigError):
                continue
            found += [
                {
                    "id": f"{name}/{m.id}",
                    "provider": name,
                    "contextWindow": m.context_window,
                    "tools": m.tools,
                    "reasoning": m.reasoning,
                    "vision": m.vision,
                    "default": f"{name}/{m.id}" == default,
                }
                for m in listed
            ]
        return found

    async def set_model(self, params: Any) -> dict[str, str]:
        request = parse(SetModelParams, params)
        with _engine_errors():
            runtime = await self.projects.runtime(self.projects.roots()[0])
            model = runtime.resolve_model(request.model)
            if request.session_id:
                await self.projects.store.update_session(request.session_id, model=model)
            else:
                self.projects.model = model
        return {"model": model}

    async def set_mode(self, params: Any) -> dict[str, str]:
        """``totem/setMode``: the session's mode from its next turn on (or new sessions')."""
        request = parse(SetModeParams, params)
        with _engine_errors():
            if request.session_id:
                await self.projects.store.update_session(request.session_id, mode=request.mode)
            else:
                self.projects.mode = request.mode
        return {"mode": request.mode}

    async def undo(self, params: Any, *, redo: bool = False) -> dict[str, Any]:
        ref = parse(SessionRef, params)
        if self.chats.busy(ref.session_id):
            raise SessionBusy(f"Session {ref.session_id} is busy: undo waits until its turn ends.")
        with _engine_errors():
            session = await self.projects.store.get_session(ref.session_id)
            runtime = await self.projects.runtime(Path(session.cwd))
            outcomes = await (runtime.redo if redo else runtime.undo)(ref.session_id)
        return {"files": [FileOutcome(path=o.path, action=o.action, reason=o.reason).wire() for o in outcomes]}

    async def compact(self, params: Any) -> dict[str, Any]:
        """``totem/compact``: the session summarised into a checkpoint now (``/compact``)."""
        ref = parse(SessionRef, params)
        if self.chats.busy(ref.session_id):
            raise SessionBusy(f"Session {ref.session_id} is busy: compaction waits until its turn ends.")
        with _engine_errors():
            session = await self.projects.store.get_session(ref.session_id)
            runtime = await self.projects.runtime(Path(session.cwd))
            checkpoint = await runtime.compact(ref.session_id)
        return {"compacted": checkpoint is not None, "messages": checkpoint.messages if checkpoint else 0}

    async def job_stop(self, params: Any) -> dict[str, Any]:
        """``totem/jobStop``: a background job's process group killed; the job as it ended. Every
        runtime the server opened is asked: one rebuilt by new settings keeps its jobs."""
        request = parse(JobStopParams, params)
        for runtime in self.projects.opened:
            try:
                job = await runtime.jobs.stop(request.session_id, request.job_id)
            except JobNotFound:
                continue
            return {"jobId": job.id, "state": job.state, "exitCode": job.exit_code}
        raise JsonRpcInvalidParams(f"There is no job {request.job_id!r} in session {request.session_id}.")

    async def agents(self, params: Any) -> list[dict[str, Any]]:
        """``totem/agents``: the project's agents as ``task`` sees them, with source and file."""
        with _engine_errors():
            runtime = await self._runtime(parse(ProjectRef, params).uri)
            return [d.to_wire() for _, d in sorted(runtime.agents().definitions.items())]

    async def agent_save(self, params: Any) -> dict[str, str]:
        request = parse(AgentSaveParams, params)
        with _engine_errors():
            runtime = await self._runtime(request.uri)
            definition = AgentDefinition(
                name=request.name, description=" ".join(request.description.split()), prompt=request.prompt,
                source=request.scope, path="", tools=tuple(request.tools) if request.tools is not None else None,
                max_steps=request.max_steps, model=request.model, allow=tuple(request.allow), deny=tuple(request.deny),
            )
            try:
                path = save_agent(runtime.root, definition)
            except ValueError as exc:
                raise JsonRpcInvalidParams(str(exc)) from None
        return {"file": str(path)}

    async def agent_delete(self, params: Any) -> dict[str, str]:
        request = parse(AgentDeleteParams, params)
        with _engine_errors():
            runtime = await self._runtime(request.uri)
            try:
                path = remove_agent(runtime.root, request.name, runtime.agents())
            except (LookupError, ValueError) as exc:
                raise JsonRpcInvalidParams(str(exc)) from None
        return {"file": str(path)}

    async def commands(self, params: Any) -> list[dict[str, Any]]:
        """``totem/commands``: the slash commands (name, description, source, file), and the
        built-in actions (source ``built-in``, no file)."""
        with _engine_errors():
            runtime = await self._runtime(parse(ProjectRef, params).uri)
            found = runtime.commands()
        listed = [c.to_wire() for _, c in sorted(found.items())]
        listed += [
            {"name": name, "description": what, "source": "built-in", "file": None, "agent": None, "model": None}
            for name, what in sorted(ACTIONS.items()) if name not in found
        ]
        return listed

    async def complete(self, params: Any) -> dict[str, Any]:
        """``totem/complete``: mentions and slash commands for the word before the cursor."""
        request = parse(CompleteParams, params)
        with _engine_errors():
            if request.session_id:
                runtime = await self.projects.runtime(Path((await self.projects.store.get_session(request.session_id)).cwd))
            else:
                runtime = await self._runtime(request.uri)
            documents = open_documents(list(self.server.workspace.text_documents))
            return await complete(request.text, request.position, runtime, documents)

    async def _runtime(self, uri: str | None) -> Runtime:
        return await self.projects.runtime(self.projects.root_for(uri))

    async def reconfigure(self, settings: Any) -> None:
        settings = plain(settings)
        if isinstance(settings, dict) and isinstance(settings.get("totem"), dict):
            settings = settings["totem"]
        if isinstance(settings, dict):
            config = settings.get("config", settings)
            await self.projects.reconfigure(config if isinstance(config, dict) else {}, settings.get("model"))

    async def aclose(self) -> None:
        """Abort every running turn, wait for them to end, then close the engine."""
        await self.chats.abort_all()
        await self.projects.aclose()


@contextlib.contextmanager
def _engine_errors() -> Iterator[None]:
    """Engine errors as JSON-RPC errors with their own message (never a crash, never a stack trace)."""
    try:
        yield
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None
    except SessionInUse as exc:  # another process (totem run, totem mcp serve ...) runs the session
        raise SessionBusy(str(exc)) from None
    except (
        SessionNotFound, SessionElsewhere, MessageNotFound, NotInConversation, FilesNotAtTurnStart, NothingToRetry, IndexError,
    ) as exc:
        raise JsonRpcInvalidParams(str(exc)) from None
