"""What the tool round (calls.py) and the policies (policy.py, small.py) need from their turn, as
protocols: they type against these, never against ``loop.Turn``, so the package has no import
cycle, ``TYPE_CHECKING`` imports included. ``loop.Turn`` and ``agent.Agent`` satisfy them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from totem_engine.api import events as ev
from totem_engine.checks.base import Checker
from totem_engine.config import Config
from totem_engine.api.frontend import FrontEnd
from totem_engine.vocab.tools import ToolCall, ToolSpec
from totem_engine.providers.capabilities import CapabilityRecord
from totem_engine.session_state import SessionState
from totem_engine.snapshots import Snapshots
from totem_engine.store import Store
from totem_engine.tools.base import Tool
from totem_engine.workspace.files import Workspace
from totem_engine.turn.guards import Guards
from totem_engine.turn.policy import TurnPolicy
from totem_engine.turn.round import Round
from totem_engine.turn.hook_points import HookPoints


class Project(Protocol):
    """The project a turn works in (``agent.Agent``)."""

    root: Path
    store: Store
    workspace: Workspace
    snapshots: Snapshots
    config: Config
    rules: list[ev.RuleRef]
    tools: dict[str, Tool]  # every built-in tool, before the model's surface leaves some out


class Mode(Protocol):
    mode: str  # "build" or "plan"


class RoundHost(Protocol):
    """What a tool round reads and calls on its turn."""

    agent: Project
    frontend: FrontEnd
    options: Mode
    session_id: str
    turn_id: str
    state: SessionState
    tools: dict[str, Tool]
    checkers: list[Checker]
    record: CapabilityRecord
    policy: TurnPolicy
    hooks: HookPoints  # the user's hooks: PreToolUse, PostToolUse, Notification

    async def emit(self, event: ev.Event) -> None: ...


class Rounds(Protocol):
    """The turn's tool rounds, as a policy uses them (calls.ToolCalls)."""

    guards: Guards

    async def run(self, calls: list[ToolCall], message_id: str) -> Round: ...

    async def findings(self, rel: str) -> tuple[list[str], list[str]]: ...


class PolicyHost(Protocol):
    """What a policy reads and calls on its turn."""

    agent: Project
    options: Mode
    text: str  # the user's request
    session_id: str
    turn_id: str
    model: str
    user_message: str  # the id of the request's stored message
    answering_again: bool  # the request was stored by an earlier turn (a regenerated answer, a retry)
    state: SessionState
    checkers: list[Checker]
    record: CapabilityRecord
    tools: dict[str, Tool]
    specs: tuple[ToolSpec, ...]
    calls: Rounds

    def text_calls_wanted(self) -> bool: ...

    async def remember(self, record: CapabilityRecord) -> None:
        """``record`` is the model's from now on, kept for its later sessions."""

    def unique_call(self, call: ToolCall) -> ToolCall: ...

    async def emit(self, event: ev.Event) -> None: ...
