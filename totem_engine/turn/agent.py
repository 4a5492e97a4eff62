"""The project a turn works in: ``Agent``, one store, tool set, provider factory and config, and
what its turns share (jobs, terminals, MCP servers, the lease holder). A turn is made from it
(``loop.Turn(agent, ...)``); a sub-agent's project is ``Agent.nested``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from totem_engine.agents import Agents, discover_agents
from totem_engine.api import events as ev
from totem_engine.checks.base import Checker
from totem_engine.checks.registry import checkers_from_config
from totem_engine.command_changes import CommandChanges
from totem_engine.config import Config
from totem_engine.hooks import Hooks
from totem_engine.jobs import Jobs
from totem_engine.mcp.servers import McpServers
from totem_engine.providers.base import Provider
from totem_engine.providers.capabilities import CapabilityRecord
from totem_engine.snapshots import Snapshots
from totem_engine.store import Store
from totem_engine.terminals import Terminals
from totem_engine.tools.base import Tool
from totem_engine.tools.command_runner import CommandRunner
from totem_engine.workspace.files import Workspace


class CapabilitySource(Protocol):
    async def record(self, provider_name: str, model_id: str) -> CapabilityRecord: ...

    async def remember(self, provider_name: str, model_id: str, record: CapabilityRecord) -> None: ...


class Agent:
    """Runs turns in one project, with one store, tool set and provider factory."""

    def __init__(
        self,
        *,
        root: Path,
        store: Store,
        provider_for: Callable[[str], Provider],
        tools: dict[str, Tool],
        workspace: Workspace,
        snapshots: Snapshots,
        capabilities: "CapabilitySource",
        config: Config,
        rules: list[ev.RuleRef] | None = None,
        trusted: bool = False,
        delegates: bool = True,
        jobs: Jobs | None = None,
        terminals: Terminals | None = None,
        commands: CommandChanges | None = None,
        mcp: McpServers | None = None,
        lease_holder: str | None = None,
        hooks: Hooks | None = None,
        subagent: bool = False,
    ):
        self.root = root.resolve()
        self.store = store
        self.provider_for = provider_for
        self.tools = tools
        self.workspace = workspace
        self.snapshots = snapshots
        self.capabilities = capabilities
        self.config = config
        self.rules = rules or []
        self.trusted = trusted  # the project's agent files may widen (agents.restrict)
        self.delegates = delegates  # its turns get the task tool (a sub-agent's never do)
        self.jobs = jobs  # the runtime's background jobs: an aborted turn kills its session's
        self.terminals = terminals  # and its terminals
        self.command_changes = commands  # where commands run and what they changed (None: nothing kept)
        # Where bash runs its commands when a front end offers a place (an ACP client's
        # terminal, tools/command_runner.py); None: in Totem. Set by the front end.
        self.command_runner: CommandRunner | None = None
        # The session's roots beyond ``root`` (an ACP client's additionalDirectories): file tools
        # and the sandbox reach them too (workspace/paths.py). Set by the runtime.
        self.extra_roots: tuple[Path, ...] = ()
        self.mcp = mcp  # the runtime's MCP servers, whose tools its turns offer (a sub-agent's: None, seed 000)
        # The front end its turns take their session's lease as ("totem run" ..., leases.py);
        # None: no lease (a sub-agent's thread lives in a store of its own).
        self.lease_holder = lease_holder
        self.hooks = hooks if hooks is not None else Hooks([], root=self.root)  # the user's (hooks/)
        self.subagent = subagent  # a task call's agent: its turn runs the tool hooks and SubagentStop only
        self.notices: list[str] = []  # for the user, said at the start of the next turn
        self._said: set[str] = set()  # the agent files' notices already said

    def agents(self) -> Agents:
        """The project's agents as their files say now (agents.discover_agents); what an untrusted
        project's files lost goes into ``notices``, once."""
        found = discover_agents(self.root, trusted=self.trusted, max_steps=self.config.max_steps)
        for notice in found.notices:
            if notice not in self._said:
                self._said.add(notice)
                self.notices.append(notice)
        return found

    def nested(
        self, *, store: Store, tools: dict[str, Tool], rules: list[ev.RuleRef], mcp: McpServers | None = None,
        lease_holder: str | None = None, subagent: bool = False,
    ) -> "Agent":
        """The project as a sub-agent works in it: its own ``store`` (its thread), ``tools`` and
        ``rules``; the same files, snapshots, providers and config; no task tool, and no MCP
        server's tools unless ``mcp`` is given (a sub-agent gets none, seed 000), no lease
        unless ``lease_holder`` is given (a turn run as an agent takes its session's). The same
        hooks; ``subagent``: it answers a task call."""
        nested = Agent(
            root=self.root, store=store, provider_for=self.provider_for, tools=tools, workspace=self.workspace,
            snapshots=self.snapshots, capabilities=self.capabilities, config=self.config, rules=rules,
            trusted=self.trusted, delegates=False, jobs=self.jobs, terminals=self.terminals, commands=self.command_changes, mcp=mcp,
            lease_holder=lease_holder, hooks=self.hooks, subagent=subagent,
        )
        nested.command_runner = self.command_runner  # a sub-agent's commands show where the session's do
        nested.extra_roots = self.extra_roots
        return nested

    def checkers(self, *, totaljs: bool) -> list[Checker]:
        """The project's checks, the one place they are built: the Total.js rules when ``totaljs``
        (and ``conventions``), then the project's own commands. A new list each time."""
        return checkers_from_config(self.config, totaljs=totaljs)
