"""The MCP servers of one runtime: which start, when they stop, what tools they offer now.

``McpServers`` belongs to the runtime (runtime.py), so a server lives as long as what uses it:
one ``totem run``; in the language server the open project, stopped after ``mcp_idle_stop``
seconds without a turn and at shutdown. A turn calls ``prepare`` before its first step: the
specs are read again (specs.py; a server switched off or changed is stopped), an untrusted
project's own servers are left out (said once), each server not running asks to start
(start.py), and the allowed ones start together, each within ``mcp_start_timeout``. Every step
asks ``tools()`` for what the running servers offer now, so a server that died or was switched
off offers nothing at the next step (seed 004). Starting, failing, dying and stopping are
``notice`` events, said through the latest turn's ``say``, which keeps them in its session
(loop.py ``Turn.server_notice``). The ``mcp`` package is imported only when a server is allowed to start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio

from totem_engine.config import Config, ConfigError
from totem_engine.api.events import NoticeLevel
from totem_engine.mcp.forge import builtin_specs
from totem_engine.mcp.naming import join_tools
from totem_engine.mcp.specs import (
    ServerSpec,
    load_specs,
    project_mcp_path,
    user_mcp_path,
)

if TYPE_CHECKING:
    from totem_engine.mcp.connection import ServerConnection
    from totem_engine.mcp.start import StartCall, StartHost
    from totem_engine.permissions import Policy
    from totem_engine.tools.base import Tool

log = logging.getLogger(__name__)

class Say(Protocol):
    """How the servers tell the user: ``level`` info, warning or error; ``call_id`` the start's
    pseudo call whose end the message also tells."""

    async def __call__(self, level: NoticeLevel, message: str, *, call_id: str | None = None) -> None: ...


class McpServers:
    """``trusted``: the user trusts the project, so its ``.totem/mcp.json`` may start programs."""

    def __init__(self, root: Path, config: Config, *, trusted: bool):
        self.root = root
        self.config = config
        self.trusted = trusted
        self.specs: dict[str, ServerSpec] = {}
        self.connections: dict[str, ServerConnection] = {}
        # What became of each declared server at the latest prepare, for `totem mcp list`:
        # "started", "off", "not started: why", "did not start: why", "exited: why", "stopped: why".
        self.status: dict[str, str] = {}
        self._said: set[str] = set()  # notices said once per runtime (untrusted, clashes)
        self._say: Say | None = None  # the notices of the latest turn's front end
        self._in_use = 0  # turns running with these servers
        self._idle: asyncio.Task | None = None
        self._closed = False
        self._read_at: tuple = ()  # the files' stamps when the specs were read (_stamps)
        self._builtin: dict[str, ServerSpec] = {}  # Totem's own servers for the latest prepare (mcp/forge.py)
        self._starting = anyio.Lock()
        self._joined: dict[str, ServerSpec] = {}  # the client's servers (join), beside the files'

    def join(self, specs: list[ServerSpec]) -> None:
        """Servers a front end's client declared (``source`` "client": an ACP client's
        ``mcpServers``), served beside the files' from the next ``prepare`` on, each started after
        the same question; one of the same name replaces the file's entry."""
        self._joined = {spec.name: spec for spec in specs}

    async def prepare(self, host: StartHost, policy: Policy, say: Say, *, totaljs: bool = False) -> None:
        """Before a turn's first step: the specs read again, and each allowed server that is not
        running started (asking first). ``totaljs``: the session's project is a Total.js one, which
        declares the built-in Forge (mcp/forge.py). Never raises: what fails is a notice."""
        self._say = say
        self._in_use += 1
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        async with self._starting:  # two sessions' first turns must not start one server twice
            await self._prepare(host, policy, totaljs)

    async def _prepare(self, host: StartHost, policy: Policy, totaljs: bool) -> None:
        self._builtin = builtin_specs(self.config, totaljs=totaljs)
        if not await self._refresh():
            return
        wanted = [spec for spec in self.specs.values() if spec.enabled and spec.name not in self.connections]
        self.status = {name: "started" if name in self.connections else "off (enabled: false)" for name in self.specs}
        if not self.trusted:
            left = [spec.name for spec in wanted if spec.source == "project"]
            wanted = [spec for spec in wanted if spec.source != "project"]
            self.status.update((name, "not started: the project is not trusted") for name in left)
            if left:
                await self._once("warning", (
                    f"The MCP servers of {project_mcp_path(self.root)} ({', '.join(left)}) were not started: the project is"
                    f" not trusted. Run `totem trust {self.root}` to trust it."
                ))
        if not wanted:
            return
        from totem_engine.mcp.start import ask_start

        calls = [await ask_start(spec, host, policy=policy, config=self.config, root=self.root) for spec in wanted]
        self.status.update((call.spec.name, f"not started: {call.refusal}") for call in calls if not call.allowed)
        async with anyio.create_task_group() as group:
            for call in calls:
                if call.allowed:
                    group.start_soon(self._start, call)
        await self._say_clashes()

    def release(self) -> None:
        """A turn that ``prepare``d has ended: with no turn left, the servers stop after
        ``mcp_idle_stop`` seconds unless a turn comes first (0: they stay until ``aclose``)."""
        self._in_use = max(0, self._in_use - 1)
        if self._in_use == 0 and self.connections and self.config.mcp_idle_stop > 0 and not self._closed:
            self._idle = asyncio.ensure_future(self._stop_when_idle(self.config.mcp_idle_stop))

    def tools(self, taken: set[str]) -> dict[str, Tool]:
        """What the running servers offer now, by joined name; ``taken``: the built-in tools'
        names, which no server tool may take."""
        from totem_engine.mcp.tools import McpTool, PromptsTool

        running = {name: c for name, c in sorted(self.connections.items()) if c.alive}
        joined, _ = join_tools(((name, [t.name for t in c.tools]) for name, c in running.items()), taken)
        offered: dict[str, Tool] = {}
        for name, (server, tool) in joined.items():
            connection = running[server]
            listed = next(t for t in connection.tools if t.name == tool)
            offered[name] = McpTool(name, connection, listed, call_timeout=self.config.mcp_call_timeout)
        with_prompts = {name: c for name, c in running.items() if c.prompts}
        if with_prompts and "mcp_prompts" not in taken:
            offered["mcp_prompts"] = PromptsTool(with_prompts, call_timeout=self.config.mcp_call_timeout)
        return offered

    async def aclose(self) -> None:
        """Every server stopped (said); none starts after it."""
        self._closed = True
        if self._idle is not None:
            self._idle.cancel()
        with anyio.CancelScope(shield=True):
            await self._stop_all("the run ended")

    async def step(self) -> None:
        """Before a step after the first: a server whose entry was switched off, changed or
        removed since is stopped, so its tools are not offered (the files are read again only
        when one of them changed)."""
        if self.connections and self._stamps() != self._read_at:
            await self._refresh()

    def _stamps(self) -> tuple:
        """When each mcp.json was last changed (None: there is none)."""
        stamps = []
        for path in (user_mcp_path(), project_mcp_path(self.root)):
            try:
                info = path.stat()
                stamps.append((info.st_mtime_ns, info.st_size))
            except OSError:
                stamps.append(None)
        return tuple(stamps)

    async def _refresh(self) -> bool:
        """The specs as the files say now; a running server whose spec changed or went away is
        stopped. False when the files could not be read (said)."""
        try:
            self._read_at = self._stamps()
            # A file's server replaces a built-in one; a client's joins them.
            self.specs = {**self._builtin, **await anyio.to_thread.run_sync(load_specs, self.root), **self._joined}
        except ConfigError as exc:
            await self._tell("warning", f"No MCP server was started: {exc}")
            return False
        for name, connection in list(self.connections.items()):
            if self.specs.get(name) != connection.spec or not connection.spec.enabled:
                await self._stop(name, "its entry in mcp.json changed")
        return True

    async def _start(self, call: StartCall) -> None:
        from totem_engine.mcp.connection import ServerConnection, StartFailed

        spec = call.spec
        connection = ServerConnection(spec, self.root, on_exit=self._exited)
        try:
            await connection.start(self.config.mcp_start_timeout)
        except StartFailed as exc:
            self.status[spec.name] = f"did not start: {exc}"
            await call.end("error", f"did not start: {exc}", f"MCP server {spec.name} did not start: {exc}")
            await self._tell("warning", f"MCP server {spec.name} did not start: {exc}. Its tools are not offered.", call.call_id)
            return
        except BaseException:  # the turn aborted while it started: nothing may be left running
            with anyio.CancelScope(shield=True):
                await connection.stop()
                await call.end("interrupted", "interrupted", f"MCP server {spec.name}: the start was interrupted.")
            raise
        self.connections[spec.name] = connection
        self.status[spec.name] = "started"
        count = len(connection.tools)
        summary = f"started, {count} tool{'s' if count != 1 else ''}" + (f", {len(connection.prompts)} prompts" if connection.prompts else "")
        said = f"MCP server {spec.name} ({connection.server_name or spec.name}, protocol {connection.protocol_version}) {summary}."
        await call.end("ok", summary, said)
        await self._tell("info", f"MCP server {spec.name} {summary}.", call.call_id)

    async def _exited(self, connection: ServerConnection) -> None:
        if self.connections.get(connection.spec.name) is connection:
            del self.connections[connection.spec.name]
        why = connection.process.describe_exit() if connection.process is not None else "closed the connection"
        self.status[connection.spec.name] = f"exited: {why}"
        await self._tell("warning", f"MCP server {connection.spec.name} {why}. Its tools are gone.")

    async def _stop(self, name: str, why: str) -> None:
        connection = self.connections.pop(name, None)
        if connection is None:
            return
        await connection.stop()
        self.status[name] = f"stopped: {why}"
        await self._tell("info", f"MCP server {name} stopped: {why}.")

    async def _stop_all(self, why: str) -> None:
        async with anyio.create_task_group() as group:
            for name in list(self.connections):
                group.start_soon(self._stop, name, why)

    async def _stop_when_idle(self, seconds: float) -> None:
        await anyio.sleep(seconds)
        self._idle = None
        if self._in_use == 0:
            await self._stop_all(f"unused for {seconds:g} s")

    async def _say_clashes(self) -> None:
        """Two server tools that would get one name (a built-in tool's never can: every joined
        name holds ``__``, no built-in one does)."""
        running = sorted((name, [t.name for t in c.tools]) for name, c in self.connections.items() if c.alive)
        _, clashes = join_tools(running)
        for clash in clashes:
            await self._once("error", f"MCP tool names clash: {clash}.")

    async def _once(self, level: NoticeLevel, message: str) -> None:
        if message not in self._said:
            self._said.add(message)
            await self._tell(level, message)

    async def _tell(self, level: NoticeLevel, message: str, call_id: str | None = None) -> None:
        log.info("%s", message)
        if self._say is None:
            return
        with contextlib.suppress(Exception):  # a front end gone (the editor closed) must not stop a stop
            await self._say(level, message, call_id=call_id)

