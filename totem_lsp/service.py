"""Everything behind the ``totem/*`` handlers, built on first need so ``initialize`` stays fast.

server.py registers thin handlers that validate their params here (messages.py) and delegate:
turns to chat.py, every session action to an ``Engine`` method (totem_engine/api/engine.py), the
conversation's payloads to conversation.py. Each engine refusal becomes its JSON-RPC error in
one place (errors.py).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from totem_engine.api.agents import AgentDefinition
from totem_engine.api.mcp_login import url_servers
from totem_engine.config_error import ConfigError
from totem_lsp import conversation
from totem_lsp.chat import Chats
from totem_lsp.complete import complete, open_documents
from totem_lsp.diagnostics import Diagnostics
from totem_lsp.errors import engine_errors
from totem_lsp.mcp_login import mcp_login
from totem_lsp.messages import (
    AgentDeleteParams,
    AgentSaveParams,
    AskParams,
    ChatParams,
    CompleteParams,
    FileOutcome,
    ForkParams,
    JobStopParams,
    McpLoginParams,
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
from totem_lsp.session_tools import tools_payload

P = TypeVar("P", bound=BaseModel)


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
        with engine_errors():
            return (await self.chats.chat(request)).wire()

    async def ask(self, params: Any) -> dict[str, Any]:
        request = parse(AskParams, params)
        with engine_errors():
            return await self.chats.ask(request)

    def abort(self, params: Any) -> dict[str, bool]:
        return {"aborted": self.chats.abort(parse(SessionRef, params).session_id)}

    async def retry(self, params: Any) -> dict[str, Any]:
        request = parse(RetryParams, params)
        with engine_errors():
            return (await self.chats.retry(request)).wire()

    async def regenerate(self, params: Any) -> dict[str, Any]:
        request = parse(RegenerateParams, params)
        with engine_errors():
            return (await self.chats.regenerate(request)).wire()

    async def sessions(self) -> list[dict[str, Any]]:
        roots = {str(root) for root in self.projects.roots()}
        listed = await self.projects.engines.history.sessions()
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
        request = parse(SessionParams, params)
        with engine_errors():
            return await conversation.session_payload(self.projects.engines.history, request)

    async def rewind(self, params: Any) -> dict[str, Any]:
        request = parse(RewindParams, params)
        with engine_errors():
            engine, _ = await self.projects.of_session(request.session_id)
            return await conversation.rewind(engine, request)

    async def variant(self, params: Any) -> dict[str, Any]:
        request = parse(VariantParams, params)
        with engine_errors():
            engine, _ = await self.projects.of_session(request.session_id)
            return await conversation.variant(engine, request)

    async def fork(self, params: Any) -> dict[str, Any]:
        request = parse(ForkParams, params)
        with engine_errors():
            engine, _ = await self.projects.of_session(request.session_id)
            return await conversation.fork(engine, request)

    async def session_tools(self, params: Any) -> dict[str, Any]:
        """``totem/tools``: the tools the session's next turn offers its model (session_tools.py)."""
        ref = parse(SessionRef, params)
        with engine_errors():
            engine, _ = await self.projects.of_session(ref.session_id)
            return await tools_payload(engine, ref.session_id)

    async def undo(self, params: Any, *, redo: bool = False) -> dict[str, Any]:
        ref = parse(SessionRef, params)
        with engine_errors():
            engine, _ = await self.projects.of_session(ref.session_id)
            reply = await (engine.redo if redo else engine.undo)(ref.session_id)
        return {"files": [FileOutcome(path=o.path, action=o.action, reason=o.reason).wire() for o in reply.files]}

    async def compact(self, params: Any) -> dict[str, Any]:
        """``totem/compact``: the session summarised into a checkpoint now (``/compact``)."""
        ref = parse(SessionRef, params)
        with engine_errors():
            engine, _ = await self.projects.of_session(ref.session_id)
            reply = await engine.compact(ref.session_id)
        return {"compacted": bool(reply.compacted), "messages": reply.compacted or 0}

    async def models(self) -> list[dict[str, Any]]:
        with engine_errors():
            engine = await self.projects.engine()
        try:
            default = engine.default_model()
        except ConfigError:
            default = None
        found = []
        for name, listed in (await engine.models()).items():
            if not isinstance(listed, list):
                continue  # a provider that cannot say what it serves lists nothing
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
        """``totem/setModel``: the session's model from its next turn on (or new sessions')."""
        request = parse(SetModelParams, params)
        with engine_errors():
            if request.session_id:
                engine, _ = await self.projects.of_session(request.session_id)
                model = (await engine.set_model(request.session_id, request.model)).model
            else:
                model = (await self.projects.engine()).set_default_model(request.model)
                self.projects.engines.set_defaults(model=model)
        return {"model": model}

    async def set_mode(self, params: Any) -> dict[str, str]:
        """``totem/setMode``: the session's mode from its next turn on (or new sessions')."""
        request = parse(SetModeParams, params)
        with engine_errors():
            if request.session_id:
                engine, _ = await self.projects.of_session(request.session_id)
                await engine.set_mode(request.session_id, request.mode)
            else:
                self.projects.engines.set_defaults(mode=request.mode)
        return {"mode": request.mode}

    async def job_stop(self, params: Any) -> dict[str, Any]:
        """``totem/jobStop``: a background job's process group killed; the job as it ended,
        whichever engine started it (one replaced by new settings keeps its jobs)."""
        request = parse(JobStopParams, params)
        with engine_errors():
            job = await self.projects.engines.stop_job(request.session_id, request.job_id)
        return {"jobId": job.id, "state": job.state, "exitCode": job.exit_code}

    async def mcp_login(self, params: Any) -> dict[str, Any]:
        """``totem/mcpLogin``: the engine's login to a remote MCP server, its URL shown by the editor."""
        request = parse(McpLoginParams, params)
        with engine_errors():
            return await mcp_login(self.server, self.projects.root_for(request.uri), request.name)

    async def mcp_servers(self, params: Any) -> list[dict[str, str]]:
        """``totem/mcpServers``: the project's declared URL servers, those ``totem/mcpLogin`` logs in to."""
        with engine_errors():
            root = self.projects.root_for(parse(ProjectRef, params).uri)
            return [{"name": name, "url": url} for name, url in url_servers(root).items()]

    async def agents(self, params: Any) -> list[dict[str, Any]]:
        """``totem/agents``: the project's agents as ``task`` sees them, with source and file."""
        with engine_errors():
            engine = await self.projects.engine(parse(ProjectRef, params).uri)
            return [d.to_wire() for d in engine.agents()]

    async def hooks(self, params: Any) -> list[dict[str, Any]]:
        """``totem/hooks``: the hooks the config files declare, in the order they run, each with
        its source and whether it runs."""
        with engine_errors():
            engine = await self.projects.engine(parse(ProjectRef, params).uri)
            return [listed.to_wire() for listed in engine.hooks()]

    async def agent_save(self, params: Any) -> dict[str, str]:
        request = parse(AgentSaveParams, params)
        definition = AgentDefinition(
            name=request.name, description=" ".join(request.description.split()), prompt=request.prompt,
            source=request.scope, path="", tools=tuple(request.tools) if request.tools is not None else None,
            max_steps=request.max_steps, model=request.model, allow=tuple(request.allow), deny=tuple(request.deny),
        )
        with engine_errors():
            engine = await self.projects.engine(request.uri)
        try:
            path = engine.save_agent(definition)
        except ValueError as exc:  # a name or scope the engine will not write
            raise JsonRpcInvalidParams(str(exc)) from None
        return {"file": str(path)}

    async def agent_delete(self, params: Any) -> dict[str, str]:
        request = parse(AgentDeleteParams, params)
        with engine_errors():
            engine = await self.projects.engine(request.uri)
        try:
            path = engine.remove_agent(request.name)
        except (LookupError, ValueError) as exc:  # no such agent, or a built-in one
            raise JsonRpcInvalidParams(str(exc)) from None
        return {"file": str(path)}

    async def commands(self, params: Any) -> list[dict[str, Any]]:
        """``totem/commands``: the slash commands (name, description, source, file), then the
        built-in actions (source ``built-in``, no file)."""
        with engine_errors():
            engine = await self.projects.engine(parse(ProjectRef, params).uri)
            found = engine.commands()
        return [{**c.to_wire(), "file": c.path or None} for c in sorted(found, key=lambda c: (not c.path, c.name))]

    async def complete(self, params: Any) -> dict[str, Any]:
        """``totem/complete``: mentions and slash commands for the word before the cursor."""
        request = parse(CompleteParams, params)
        with engine_errors():
            if request.session_id:
                engine, _ = await self.projects.of_session(request.session_id)
            else:
                engine = await self.projects.engine(request.uri)
            documents = open_documents(list(self.server.workspace.text_documents))
            return await complete(request.text, request.position, engine, documents)

    def message_limit(self) -> int | None:
        return self.projects.message_limit()

    def reconfigure(self, settings: Any) -> None:
        settings = plain(settings)
        if isinstance(settings, dict) and isinstance(settings.get("totem"), dict):
            settings = settings["totem"]
        if isinstance(settings, dict):
            config = settings.get("config", settings)
            self.projects.reconfigure(config if isinstance(config, dict) else {}, settings.get("model"))

    async def aclose(self) -> None:
        """Abort every running turn, wait for them to end, then close the engine."""
        await self.projects.aclose()
