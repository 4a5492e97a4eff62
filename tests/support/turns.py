"""In-process turns: a scripted provider, a recording front end and a real project around
``turn.agent.Agent`` (a Store in ``tmp_path``, the built-in tools, snapshots on disk). No
subprocess, no HTTP.

``ScriptedProvider`` implements ``providers.base.Provider``: each request it gets is recorded
(``requests``) and answered with the next scripted reply, a list of stream chunks in which a
``ProviderError`` is raised where it stands.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from totem_engine.api import events as ev
from totem_engine.command_changes import CommandChanges, SandboxSettings
from totem_engine.config import Config
from totem_engine.api.frontend import PermissionReply, PermissionRequest, QuestionRequest
from totem_engine.jobs import Jobs
from totem_engine.mcp.servers import McpServers
from totem_engine.providers.base import ModelInfo
from totem_engine.vocab.chat import ChatRequest, FinishChunk, StreamChunk, TextChunk, ToolCallChunk, UsageChunk
from totem_engine.vocab.tools import ToolCall
from totem_engine.providers.capabilities import CapabilityRecord
from totem_engine.snapshots import Snapshots
from totem_engine.store import Store
from totem_engine.terminals import Terminals
from totem_engine.tools.registry import builtin_tools
from totem_engine.workspace.files import DiskWorkspace
from totem_engine.turn.agent import Agent
from totem_engine.turn.loop import Turn
from totem_engine.turn.terms import TurnOptions, TurnResult

Reply = list  # of StreamChunk, or a ProviderError raised at its place


def answer(text: str, *, pieces: int = 1) -> Reply:
    """A reply of ``text`` in ``pieces`` deltas, its usage and its end."""
    size = max(1, -(-len(text) // pieces))
    deltas: list = [TextChunk(text[i : i + size]) for i in range(0, len(text), size)]
    return [*deltas, UsageChunk(input_tokens=100, output_tokens=10), FinishChunk("stop")]


def calls(*wanted: tuple[str, dict], text: str = "") -> Reply:
    """A reply of native tool calls, each ``(tool, arguments)``, after ``text``."""
    chunks: list = [TextChunk(text)] if text else []
    for n, (tool, arguments) in enumerate(wanted, 1):
        chunks.append(ToolCallChunk(ToolCall(id=f"call_{n}", name=tool, arguments=json.dumps(arguments))))
    return [*chunks, UsageChunk(input_tokens=100, output_tokens=10), FinishChunk("tool_calls")]


class ScriptedProvider:
    kind = "openai"

    def __init__(self, replies: Iterable[Reply] = (), *, name: str = "scripted"):
        self.name = name
        self.replies: deque[Reply] = deque(replies)
        self.requests: list[ChatRequest] = []

    def enqueue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"request {len(self.requests)} has no scripted reply")
        for item in self.replies.popleft():
            if isinstance(item, BaseException):
                raise item
            yield item

    async def models(self) -> list[ModelInfo]:
        return []

    async def aclose(self) -> None:
        return None


class RecordingFrontEnd:
    """Keeps every event and permission request; answers each ask with ``outcome``."""

    def __init__(self, outcome: str = "allow_once"):
        self.outcome = outcome
        self.events: list[ev.Event] = []
        self.asked: list[PermissionRequest] = []

    async def emit(self, event: ev.Event) -> None:
        self.events.append(event)

    async def permission(self, request: PermissionRequest) -> PermissionReply:
        self.asked.append(request)
        return PermissionReply(outcome=self.outcome)  # type: ignore[arg-type]

    async def question(self, request: QuestionRequest) -> str | None:
        return None

    def of(self, kind: type) -> list:
        return [event for event in self.events if isinstance(event, kind)]


@dataclass
class FixedCapabilities:
    """The capability record every model has here; what the turn learned is kept in ``learned``."""

    fixed: CapabilityRecord
    learned: list[CapabilityRecord] = field(default_factory=list)

    async def record(self, provider_name: str, model_id: str) -> CapabilityRecord:
        return self.fixed

    async def remember(self, provider_name: str, model_id: str, record: CapabilityRecord) -> None:
        self.learned.append(record)


SMALL = CapabilityRecord(native_tools=False, tool_call_format="text", context_window=8192, tier="small")


class Scene:
    """A project folder (``root``) with a session, an agent on it and the scripted provider."""

    def __init__(
        self, tmp_path: Path, *, record: CapabilityRecord | None = None, config: Config | None = None, jobs: bool = False,
        mcp: bool = False, sandbox: bool = False,
    ):
        self.root = tmp_path / "project"
        self.root.mkdir()
        # sandbox: the session's commands in bubblewrap (``always``), as a runtime on Linux runs them.
        self.commands = (
            CommandChanges(self.root, max_file_bytes=10_000_000, sandbox=SandboxSettings(mode="always")) if sandbox else None
        )
        self.jobs = Jobs(self.root) if jobs else None  # the job tool and its registry, as a runtime has them
        self.terminals = Terminals(self.root) if jobs else None  # and the terminal tool's
        self.store = Store(tmp_path / "data" / "totem.db")
        self.snapshots = Snapshots(tmp_path / "data", max_bytes=10_000_000, max_age_days=7)
        self.provider = ScriptedProvider()
        self.capabilities = FixedCapabilities(record or CapabilityRecord(context_window=128_000))
        # The runtime's MCP servers, as mcp.json declares them (a trusted project's too).
        # forge=False unless the test's config says otherwise: the empty project is a Total.js one.
        self.mcp = McpServers(self.root, config or Config(forge=False), trusted=True) if mcp else None
        self.agent = Agent(
            root=self.root,
            store=self.store,
            provider_for=lambda name: self.provider,
            tools=builtin_tools(jobs=self.jobs, terminals=self.terminals),
            jobs=self.jobs,
            terminals=self.terminals,
            mcp=self.mcp,
            commands=self.commands,
            workspace=DiskWorkspace(),
            snapshots=self.snapshots,
            capabilities=self.capabilities,
            config=config or Config(),
        )
        self.session_id = ""

    async def turn(self, text: str, frontend: RecordingFrontEnd | None = None, *, images: tuple = (), **options) -> Turn:
        """``images``: images the user attached (``totem_engine.images``)."""
        if not self.session_id:
            self.session_id = (await self.store.create_session(cwd=str(self.root), model="scripted/m")).id
        options.setdefault("retry_max_wait", 0.0)
        return Turn(
            self.agent, text, frontend or RecordingFrontEnd(), session_id=self.session_id, model="scripted/m", options=TurnOptions(**options),
            images=images,
        )

    async def run(self, text: str, frontend: RecordingFrontEnd | None = None, **options) -> TurnResult:
        return await (await self.turn(text, frontend, **options)).run()

    async def close(self) -> None:
        if self.mcp is not None:
            await self.mcp.aclose()
        if self.jobs is not None:
            await self.jobs.aclose()
        if self.terminals is not None:
            await self.terminals.aclose()
        if self.commands is not None:
            await self.commands.aclose()
        await self.snapshots.close()
        await self.store.close()
