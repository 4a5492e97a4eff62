"""Whether a declared server may start: permission ``mcp-start``, asked as a pseudo call.

A project file can start a program, so a start asks first, and says what will run (the command
line) or where requests will go (the URL). What decides, in order: a configured ``deny`` rule
for ``mcp-start`` (pattern: the server's name); the user's stored "always" answer for this
project, bound to the exact command line or URL (answers.py); a configured ``allow`` rule;
``mcp_allow`` (the command line or URL itself); else the user is asked. ``--yes`` answers the
question, except for a server whose URL leaves this machine (``PermissionRequest.needs_person``):
a scripted run never sends anything to a third party.

Each start is one pseudo call the front ends already know how to show (docs/events.md
"MCP servers"): ``toolStart`` (tool ``mcp-start``, a call id of its own), ``permission``, and
``toolEnd`` once the server started or failed. It is not stored as a call of the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anyio

from totem_engine.api import events as ev
from totem_engine.config import Config
from totem_engine.api.frontend import MCP_START, FrontEnd, PermissionRequest
from totem_engine.mcp.answers import store_answer, stored_answer
from totem_engine.mcp.specs import ServerSpec
from totem_engine.permissions import Policy
from totem_engine.store import new_id


class StartHost(Protocol):
    """What a start is asked through: the turn (loop.py ``Turn``)."""

    session_id: str
    frontend: FrontEnd

    async def emit(self, event: ev.Event) -> None: ...


@dataclass
class StartCall:
    """One start's pseudo call, open until ``end``."""

    host: StartHost
    call_id: str
    spec: ServerSpec
    allowed: bool = False
    refusal: str = ""  # why it was not allowed, for the user

    async def end(self, status: ev.ToolStatus, summary: str, output: str) -> None:
        await self.host.emit(ev.ToolEnd(
            session_id=self.host.session_id, call_id=self.call_id, tool=MCP_START, status=status, summary=summary, output=output,
        ))


def start_title(spec: ServerSpec) -> str:
    """What the question says: the command line, or the URL and that requests go there (a
    built-in server's own wording, when it has one)."""
    if spec.question:
        return spec.question
    if spec.transport == "stdio":
        return f"Start MCP server {spec.name}: {spec.target}"
    where = "outside this machine" if spec.remote else "on this machine"
    return f"Connect to MCP server {spec.name} at {spec.target} (its requests go there, {where})"


async def ask_start(spec: ServerSpec, host: StartHost, *, policy: Policy, config: Config, root: Path) -> StartCall:
    """The pseudo call opened and decided (``StartCall.allowed``); a denied one is already ended."""
    call = StartCall(host=host, call_id=new_id("call"), spec=spec)
    payload = {"server": spec.name, ("command" if spec.transport == "stdio" else "url"): spec.target}
    title = start_title(spec)
    await host.emit(ev.ToolStart(session_id=host.session_id, call_id=call.call_id, tool=MCP_START, input=payload, title=title))
    call.allowed, rule, reason = await _decide(spec, host, call.call_id, title, payload, policy=policy, config=config, root=root)
    decision = "allow" if call.allowed else ("deny" if rule.action == "deny" and rule.source != "answer" else "reject")
    await host.emit(ev.Permission(session_id=host.session_id, call_id=call.call_id, decision=decision, rule=rule))
    if not call.allowed:
        call.refusal = reason or _why(rule)
        await call.end("denied", "not started", f"MCP server {spec.name} was not started: {call.refusal}.")
    return call


async def _decide(
    spec: ServerSpec, host: StartHost, call_id: str, title: str, payload: dict, *, policy: Policy, config: Config, root: Path
) -> tuple[bool, ev.RuleRef, str | None]:
    """Allowed or not, the rule that decided, and why nobody answered (None: somebody did)."""

    def rule(source: str, action: str, pattern: str = spec.name) -> ev.RuleRef:
        return ev.RuleRef(source=source, permission=MCP_START, pattern=pattern, action=action)  # type: ignore[arg-type]

    configured = policy.decide(MCP_START, [spec.name], changes=False)
    if configured.action == "deny":
        return False, configured.rule, None
    where = None if spec.source == "builtin" else root  # a built-in server's "always": every project (answers.py)
    stored = await anyio.to_thread.run_sync(stored_answer, where, spec.name, spec.target)
    if stored is not None:
        return stored == "allow", rule("stored", stored, spec.target), None
    if configured.action == "allow" and configured.rule.source != "default":
        return True, configured.rule, None
    if spec.target in config.mcp_allow:
        return True, rule("user", "allow", spec.target), None
    request = PermissionRequest(
        session_id=host.session_id, call_id=call_id, tool=MCP_START, title=title, input=payload, rule=None,
        permission=MCP_START, always_pattern=spec.name, paths=[], needs_person=spec.remote,
    )
    reply = await host.frontend.permission(request)
    if reply.outcome in ("allow_always", "reject_always"):
        action = "allow" if reply.outcome == "allow_always" else "deny"
        await anyio.to_thread.run_sync(store_answer, where, spec.name, spec.target, action)
        return action == "allow", rule("stored", action, spec.target), None
    return reply.outcome == "allow_once", rule("answer", "allow" if reply.outcome == "allow_once" else "deny"), reply.reason


def _why(rule: ev.RuleRef) -> str:
    if rule.source == "answer":
        return "the user said no"
    if rule.source == "stored":
        return "the user said never for this command line or URL"
    return f"rule {rule.permission} {rule.pattern!r} -> deny ({rule.source})"
