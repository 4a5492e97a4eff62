"""The agent loop: one step is one model call; its tool calls run as a round (calls.py); repeat
until done.

``Agent.turn(...)`` returns a ``Turn``; ``await turn.run()`` streams the answer to the front end as
events (stream.py), asks permission through it, runs the tools and stores every part as it
arrives; it ends with a ``TurnResult`` whose ``stop_reason`` says why (finished, aborted,
step_limit, guard, error). ``turn.abort()`` may be called at any time from the same event loop:
the stream is cancelled, running children are killed (the tools own their process groups), the
partial answer is stored and unfinished calls are marked interrupted. What differs by the kind
of model is the turn's ``policy`` (policy.py, small.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import anyio

from totem_engine.api import events as ev
from totem_engine.agents import Agents, discover_agents
from totem_engine.images import CAPTIONED, FRESH, IMAGE_PART, part_data
from totem_engine.attachments import Attachment
from totem_engine.checks.base import Checker
from totem_engine.checks.registry import checkers_from_config
from totem_engine.checks.totaljs import is_totaljs_project
from totem_engine.config import MIN_MAX_STEPS, Config
from totem_engine.api.frontend import FrontEnd
from totem_engine.command_changes import CommandChanges
from totem_engine.jobs import Jobs
from totem_engine.leases import holding
from totem_engine.mcp.deferred import fit_schemas
from totem_engine.mcp.servers import McpServers
from totem_engine.terminals import Terminals
from totem_engine.prompt import system_prompt
from totem_engine.prompt_files import prompt
from totem_engine.providers.base import Provider
from totem_engine.vocab.chat import ChatRequest, finish_kind
from totem_engine.vocab.messages import Image
from totem_engine.vocab.tools import ToolCall, ToolSpec, arguments_object
from totem_engine.providers.capabilities import CapabilityRecord, after_step, detect_prose_edit
from totem_engine.providers.errors import ContextOverflowError, ProviderError
from totem_engine.providers.hints import hint_for
from totem_engine.textcalls import TextCallStats
from totem_engine.retry import MAX_TURN_RETRIES, retry_delay, should_retry, turn_retry_delay
from totem_engine.session_state import SessionState
from totem_engine.skills import Skill, discover
from totem_engine.snapshots import Snapshots
from totem_engine.store import Session, Store, WriteFailed, new_id
from totem_engine.tools.base import Tool
from totem_engine.tools.command_runner import CommandRunner
from totem_engine.tools.freshness import mark_seen_in
from totem_engine.tools.registry import is_small, surface, tool_specs
from totem_engine.tools.skill import SkillTool
from totem_engine.tools.freshness import mark_seen_in
from totem_engine.tools.task import TaskTool
from totem_engine.workspace.files import Workspace
from totem_engine.turn.calls import ToolCalls
from totem_engine.turn.fitting import Fitter
from totem_engine.turn.guards import ReasoningRetry, RoundLimit, least_reasoning
from totem_engine.turn.caught import CatchingPolicy
from totem_engine.turn.policy import TurnPolicy
from totem_engine.turn.scripts import SCRIPT_TOOLS, ScriptPolicy, wants_scripts
from totem_engine.turn.small import SmallModelPolicy
from totem_engine.turn.stream import StepStream, StreamedPart, flush_while_streaming
from totem_engine.turn.subagent import SubAgents

log = logging.getLogger(__name__)

COMMIT_EVERY = 0.25  # seconds between commits of a running turn's queued writes (store.DeferredWrites)


def effective_max_steps(value: int) -> int:
    """0 means no cap; a cap below 10 would cut almost every real task short, so it is raised."""
    return 0 if value <= 0 else max(value, MIN_MAX_STEPS)


@dataclass
class TurnResult:
    session_id: str
    turn_id: str
    stop_reason: ev.StopReason
    text: str
    model: str
    reason: str | None = None  # the visible reason for any end but "finished"


@dataclass
class TurnOptions:
    mode: str = "build"
    max_steps: int = 50
    retry_max_wait: float = 60.0
    reasoning: str | None = None
    persona: str | None = None  # a sub-agent's prompt, in place of base.txt (prompt.system_prompt)


@dataclass(frozen=True)
class Again:
    """A turn that answers a stored request again rather than a new one: ``request`` is its
    message id (the conversation already follows it, runtime.py); ``retry``: which retry of a
    failed turn this is (0: a regenerated answer), stored with the turn's error so the next
    retry knows, and waited for as retry.py says."""

    request: str
    retry: int = 0


@dataclass(frozen=True)
class _StepOutcome:
    calls: list[ToolCall]
    message_id: str
    usage: ev.Usage
    text: str = ""
    malformed: bool = False  # a call written as text could not be read
    guard: str | None = None  # a guard on the reply itself ended the run (repetition, all reasoning)


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
        self.mcp = mcp  # the runtime's MCP servers, whose tools its turns offer (a sub-agent's: None, seed 000)
        # The front end its turns take their session's lease as ("totem run" ..., leases.py);
        # None: no lease (a sub-agent's thread lives in a store of its own).
        self.lease_holder = lease_holder
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
        lease_holder: str | None = None,
    ) -> "Agent":
        """The project as a sub-agent works in it: its own ``store`` (its thread), ``tools`` and
        ``rules``; the same files, snapshots, providers and config; no task tool, and no MCP
        server's tools unless ``mcp`` is given (a sub-agent gets none, seed 000), no lease
        unless ``lease_holder`` is given (a turn run as an agent takes its session's)."""
        nested = Agent(
            root=self.root, store=store, provider_for=self.provider_for, tools=tools, workspace=self.workspace,
            snapshots=self.snapshots, capabilities=self.capabilities, config=self.config, rules=rules,
            trusted=self.trusted, delegates=False, jobs=self.jobs, terminals=self.terminals, commands=self.command_changes, mcp=mcp,
            lease_holder=lease_holder,
        )
        nested.command_runner = self.command_runner  # a sub-agent's commands show where the session's do
        return nested

    def checkers(self, *, totaljs: bool) -> list[Checker]:
        """The project's checks, the one place they are built: the Total.js rules when ``totaljs``
        (and ``conventions``), then the project's own commands. A new list each time."""
        return checkers_from_config(self.config, totaljs=totaljs)

    def turn(
        self, text: str, frontend: FrontEnd, *, session_id: str, model: str, options: TurnOptions, session: Session | None = None,
        turn_id: str | None = None, typed: str | None = None, again: Again | None = None,
        attached: list[Attachment] | None = None, images: tuple[Image, ...] = (),
    ) -> "Turn":
        """``session``: the session as the front end just read it, so the turn does not read it again;
        ``turn_id``: a sub-agent's is its conversation's turn, so its changes are undone with it;
        ``typed``: what the user typed when ``text`` is its expansion (a slash command);
        ``again``: the turn answers a stored request again (``text`` is its text) instead of storing one;
        ``attached``: the context blocks ``text`` begins with (attachments.py), stored with the request;
        ``images``: images the user attached to ``text`` (images.py), stored with it too."""
        return Turn(
            self, text, frontend, session_id=session_id, model=model, options=options, session=session, turn_id=turn_id, typed=typed,
            again=again, attached=attached, images=images,
        )


class Turn:
    """One request and everything done to answer it. Every attribute is set here; ``run`` fills
    what the session says (``state``, ``checkers``, ``skills``, ``tools``, ``user_message``) and
    what the model's record says (``record``, ``specs``, ``temperature``, ``policy``)."""

    def __init__(
        self, agent: Agent, text: str, frontend: FrontEnd, *, session_id: str, model: str, options: TurnOptions,
        session: Session | None = None, turn_id: str | None = None, typed: str | None = None, again: Again | None = None,
        attached: list[Attachment] | None = None, images: tuple[Image, ...] = (),
    ):
        self.agent = agent
        self.again = again
        self.attached = attached or []
        self.text = text
        self.typed = typed  # a slash command as typed; ``text`` is what the model receives
        self.images = images  # stored with the request as image parts
        self.frontend = frontend
        self.session_id = session_id
        self._session = session
        # The steps' own writes, queued without waiting for the disk: committed by the next
        # step's read of the history (``writes.messages``, before its request) or the turn's end.
        self.writes = agent.store.deferred(session_id)
        self.model = model  # "provider/model id"
        self.options = options
        self.turn_id = turn_id or new_id("trn")
        self.children: list[Turn] = []  # its sub-agents' turns running now (tools/task.py)
        self.answered_by = model
        self.state = SessionState()  # the session's, loaded by run
        self.checkers: list[Checker] = []
        self.skills: list[Skill] = []
        self.tools: dict[str, Tool] = dict(agent.tools)
        self._own_tools: dict[str, Tool] = {}  # the turn's tools before the surface and the servers' (_offer_tools)
        self._mcp_prepared = False  # the runtime's MCP servers were started for this turn (released at its end)
        self.record = CapabilityRecord()  # the model's, known at the first step and learned from each
        self.specs: tuple[ToolSpec, ...] = ()
        self._offered: tuple[object, ...] = ()  # what self.specs were made of: brief, then the tools
        self.temperature: float | None = None
        self.seed: int | None = None  # a fresh attempt's (start_afresh)
        self.user_message = ""  # the stored request's message id
        self.policy: TurnPolicy = CatchingPolicy(self)  # what differs by the kind of model (policy.py)
        self._scope = anyio.CancelScope()
        self._aborted = False
        self._writers: list[StreamedPart] = []  # the parts of the step streaming now
        self._answers: list[StreamedPart] = []  # the text parts of finished steps
        self._used_call_ids: set[str] = set()
        self._step_count = 0  # steps so far, over every attempt
        self.calls = ToolCalls(self, session_rules=[])  # the attempt's rounds; run gives it the session's rules

    @property
    def answering_again(self) -> bool:
        return self.again is not None

    def abort(self) -> None:
        self._aborted = True
        self._scope.cancel()
        for child in list(self.children):
            child.abort()

    async def emit(self, event: ev.Event) -> None:
        await self.frontend.emit(event)

    async def run(self) -> TurnResult:
        """The turn, run to its end. With the agent's ``lease_holder``, the session's lease is
        taken first and kept while it runs (an abort asked through the store aborts it):
        ``SessionInUse``, before anything is stored, when another process runs the session."""
        holder = self.agent.lease_holder
        if holder is None:
            return await self._run()
        async with holding(self.agent.store, self.session_id, holder=holder) as lease:
            return await lease.run(self._run, self.abort)

    async def _run(self) -> TurnResult:
        store = self.agent.store
        session = self._session or await store.get_session(self.session_id)
        self.state = SessionState.from_meta(session.meta)
        await self._setup()
        self.calls = ToolCalls(self, session_rules=self.state.rules)
        if self.again is not None:
            self.user_message = self.again.request
            if not self.again.retry:
                await self._images_again()
        else:
            self.user_message = await store.add_message(self.session_id, "user", turn_id=self.turn_id)
            shown = {"typed": self.typed} if self.typed is not None and self.typed != self.text else {}
            if self.attached:
                shown["attachments"] = [a.wire() for a in self.attached]
            await store.add_part(self.user_message, "text", {"text": self.text, **shown})
            for image in self.images:
                await store.add_part(self.user_message, IMAGE_PART, part_data(image), status=FRESH)
            for attachment in self.attached:  # a whole file shown with the request counts as read
                if attachment.seen is not None:
                    mark_seen_in(self.state.reads, attachment.path, attachment.seen)
        await self._say_restored()
        await self.emit(ev.TurnStart(session_id=self.session_id, turn_id=self.turn_id, model=self.model))
        while self.agent.notices:
            await self.notice(self.agent.notices.pop(0))

        stop: ev.StopReason = "finished"
        reason: str | None = None
        failure: ev.Error | None = None
        # The committer stores the steps' queued writes while a step waits (a tool, a stalled
        # stream); every exception is caught inside it, so none comes out as an ExceptionGroup.
        with self._scope:
            async with anyio.create_task_group() as committer:
                committer.start_soon(self.writes.commit_every, COMMIT_EVERY)
                try:
                    if self.again is not None and self.again.retry > 1:
                        wait = turn_retry_delay(self.again.retry, self.options.retry_max_wait)
                        await self.notice(f"Retrying the turn (retry {self.again.retry} of {MAX_TURN_RETRIES}) in {wait:.1f} s.")
                        await anyio.sleep(wait)
                    stop, reason = await self._steps()
                except ProviderError as exc:
                    stop, reason = "error", exc.message
                    provider_name = self.model.split("/", 1)[0]
                    hint = hint_for(exc, provider_name, self.agent.config.providers.get(provider_name))
                    failure = ev.Error(session_id=self.session_id, error_class=type(exc).__name__, message=exc.message, hint=hint)
                    await self.emit(failure)
                except Exception as exc:  # a bug must end the turn visibly, not take the front end down
                    log.exception("turn failed")
                    stop, reason = "error", f"{type(exc).__name__}: {exc}"
                    failure = ev.Error(session_id=self.session_id, error_class="InternalError", message=reason)
                    await self.emit(failure)
                finally:
                    committer.cancel_scope.cancel()
        if self._aborted:
            stop, reason = "aborted", "Stopped by the user."
        with anyio.CancelScope(shield=True):
            return await self._finish(stop, reason, failure if stop == "error" else None)

    async def _images_again(self) -> None:
        """A regenerated answer looks at the request's own images again: they are fresh for its
        first step, as they were for the answer it replaces (images.py)."""
        for message in await self.agent.store.messages(self.session_id):
            if message.id == self.user_message:
                for part in message.parts:
                    if part.type == IMAGE_PART and part.status == CAPTIONED:
                        await self.agent.store.update_part(part.id, status=FRESH)

    async def _say_restored(self) -> None:
        """The files Totem's undo or redo changed since the last turn, told to the model beside
        the request (a ``context`` part: the model reads it, the chat does not show it), so it
        reads them again rather than trust what it saw before."""
        if not self.state.restored:
            return
        files = ", ".join(path if action == "restored" else f"{path} ({action})" for path, action in sorted(self.state.restored.items()))
        await self.agent.store.add_part(
            self.user_message, "context", {"text": prompt("restored_files.txt").format(files=files), "restored": sorted(self.state.restored)}
        )
        self.state.restored = {}

    async def _setup(self) -> None:
        """What this session works with: Total.js or not (decided when the session starts and kept,
        so the agent's first file does not switch it), its checks, skills and tools."""
        config, root = self.agent.config, self.agent.root
        if self.state.totaljs is None:
            self.state.totaljs = await anyio.to_thread.run_sync(is_totaljs_project, root, config.totaljs)
        self.checkers = self.agent.checkers(totaljs=self.state.totaljs)
        self.skills = await anyio.to_thread.run_sync(
            lambda: discover(root, totaljs=bool(self.state.totaljs) and config.conventions)
        )
        self.tools = dict(self.agent.tools)
        if "skill" in self.tools:
            self.tools["skill"] = SkillTool(self.skills)
        if self.agent.delegates:
            agents = await anyio.to_thread.run_sync(self.agent.agents)
            self.tools["task"] = TaskTool(SubAgents(self), agents, limit=self.agent.config.max_agents)

    async def _finish(self, stop: ev.StopReason, reason: str | None, failure: ev.Error | None = None) -> TurnResult:
        """``failure``: the turn's ``error`` event, stored with its class and hint so a reopened
        session shows what the live one did."""
        store = self.agent.store
        for writer in self._writers:
            await writer.flush()
        self._answers.extend(w for w in self._writers if w.kind == "text")
        await self.calls.close_open()
        try:
            await self.writes.flush()
        except WriteFailed as exc:  # the steps' history is not all stored: the turn ends in an error
            log.error("%s", exc, exc_info=exc)
            stop, reason = "error", str(exc)
            failure = ev.Error(session_id=self.session_id, error_class="InternalError", message=reason)
            await self.emit(failure)
        if self._mcp_prepared and self.agent.mcp is not None:
            self.agent.mcp.release()
        if stop == "aborted" and not self.agent.config.jobs_survive_abort:
            for processes in (self.agent.jobs, self.agent.terminals):
                if processes is not None:
                    await processes.kill_session(self.session_id)
        self.state.rules = self.calls.policy.session
        await store.update_session(self.session_id, meta=self.state.to_meta())
        if stop != "finished" and reason:
            message = await store.add_message(self.session_id, "assistant", turn_id=self.turn_id)
            said = {"errorClass": failure.error_class, "hint": failure.hint} if failure is not None else {}
            if stop == "error" and self.again is not None and self.again.retry:
                said["retry"] = self.again.retry
            await store.add_part(message, "error" if stop == "error" else "notice", {"stopReason": stop, "text": reason, **said})
            if stop != "error":
                await self.emit(ev.Notice(session_id=self.session_id, level="warning", message=reason))
        text = "\n\n".join(part.text for part in self._answers if part.text)
        await self.emit(
            ev.TurnEnd(session_id=self.session_id, turn_id=self.turn_id, stop_reason=stop, text=text, model=self.answered_by)
        )
        return TurnResult(self.session_id, self.turn_id, stop, text, self.answered_by, reason)

    async def _steps(self) -> tuple[ev.StopReason, str | None]:
        provider_name, model_id = self.model.split("/", 1)
        provider = self.agent.provider_for(provider_name)
        settings = self.agent.config.providers.get(provider_name)
        self.temperature = settings.temperature if settings is not None else None
        self.record = await self.agent.capabilities.record(provider_name, model_id)
        self._own_tools = self.tools
        small = is_small(self.record.context_window, self.record.tier)
        if self.agent.mcp is not None:
            self._mcp_prepared = True
            await self.agent.mcp.prepare(
                self, self.calls.policy, self.server_notice, totaljs=bool(self.state.totaljs)
            )
            await self._search_forge()
        if wants_scripts(self.agent.config.code_mode, self.record, small=small):
            self.use_scripts()
        else:
            self._offer_tools()
        if small and not self.policy.scripts:
            self.policy = SmallModelPolicy(self)
        skills = self.skills if "skill" in self.tools else ()
        base_prompt = system_prompt(
            self.agent.root, self.options.mode, totaljs=bool(self.state.totaljs), skills=skills, small=self.policy.short_prompt,
            persona=self.options.persona,
        )
        self.state.reads.shown.clear()  # shown with an earlier request: further back, perhaps compacted
        await self.policy.prepare()
        fitter = Fitter(
            provider=provider,
            model_id=model_id,
            build=lambda history: self._request(model_id, base_prompt, history),
            window=self.record.context_window,
            max_output_tokens=self.record.max_output_tokens,
            tools={**self.agent.tools, **self.tools},  # a result of a tool the surface left out keeps its account
            config=self.agent.config,
            provider_for=self.agent.provider_for,
            store=self.agent.store,
            session_id=self.session_id,
            turn_id=self.turn_id,
            emit=self.emit,
            vision=self.record.vision,
        )
        rounds = RoundLimit(effective_max_steps(self.options.max_steps))
        while True:
            stop, reason, changed = await self._attempt(provider, fitter, rounds)
            if not await self.policy.afresh(stop, changed=changed):
                return stop, reason

    async def _search_forge(self) -> None:
        """Forge's pages for the request, beside it (forge/prefetch.py); not for a request
        answered again, which keeps the pages it got the first time."""
        if self.again is not None or self.agent.mcp is None:
            return
        from totem_engine.forge.prefetch import put_forge_pages

        await put_forge_pages(
            self.agent.mcp.connections, self.agent.config, typed=self.typed if self.typed is not None else self.text,
            store=self.agent.store, message_id=self.user_message, session_id=self.session_id, emit=self.emit,
        )

    def _offer_tools(self) -> None:
        """The step's tools and their specs: the turn's own and what the MCP servers offer now (a
        server that died or was switched off offers nothing; by name and one line when their
        schemas would cost too much of the window, mcp/deferred.py), kept to the model's surface."""
        served = self.agent.mcp.tools(set(self._own_tools)) if self._mcp_prepared and self.agent.mcp is not None else {}
        window, tier = self.record.context_window, self.record.tier
        served = fit_schemas(served, window=window, share=self.agent.config.mcp_schema_share, small=is_small(window, tier))
        self.tools, brief = surface({**self._own_tools, **served}, self.record.context_window, self.record.tier)
        if self.policy.scripts:  # what script and file blocks are read as, whatever the surface
            self.tools.update({name: tool for name, tool in self._own_tools.items() if name in SCRIPT_TOOLS})
        # The same tools give the same specs: a tuple kept from step to step lets the fitter's
        # count of their schemas (DerivedHistory.fixed, by identity) stand.
        offered = (brief, *self.tools.values())
        if len(offered) != len(self._offered) or any(a is not b for a, b in zip(offered, self._offered)):
            self.specs, self._offered = tool_specs(self.tools, brief=brief), offered

    def start_afresh(self, *, temperature: float, seed: int) -> None:
        """The turn's state back to its start for another attempt at the request (the policy's
        ``afresh``, which has put the files back and discarded the attempt), sampled this time:
        the same request at the same temperature gets the same answer. The permissions the user
        granted stay."""
        self.state.rules = self.calls.policy.session
        self.calls = ToolCalls(self, session_rules=self.state.rules)
        self._answers = []
        self.temperature, self.seed = temperature, seed

    async def _attempt(self, provider: Provider, fitter: Fitter, rounds: RoundLimit) -> tuple[ev.StopReason, str | None, bool]:
        """Steps until the model is done or stopped: the stop reason, its reason, and whether a
        file was changed."""
        changed = False
        while True:
            if rounds.reached(self._step_count):
                decision = rounds.allow(self._step_count)
                if decision.stop:
                    return "step_limit", decision.notice, changed
                await self.notice(decision.notice)
            self._step_count += 1
            step = self._step_count
            if step > 1 and self._mcp_prepared and self.agent.mcp is not None:
                await self.agent.mcp.step()
                self._offer_tools()
            fitter.tools = {**self.agent.tools, **self.tools}  # this step's MCP tools account for their results too
            # The step's read of the history is also the last step's flush (raising a failed write).
            fitted = await fitter.fit(await self.writes.messages(), self.state)
            self._used_call_ids |= fitter.history.call_ids
            message_id = await self.writes.add_message("assistant", turn_id=self.turn_id, step=step, model=self.model)
            try:
                outcome = await self._step(provider, fitted.request, step, message_id)
            except ContextOverflowError:
                # The provider counts differently: compact harder and retry the step once, never more.
                fitter.overflowed_at(fitted.estimate)
                fitted = await fitter.fit(await self.agent.store.messages(self.session_id), self.state, force=True)
                outcome = await self._step(provider, fitted.request, step, message_id)
            await fitter.images_sent()  # the next request is no longer their first
            self.state.calibration.update(fitted.raw_input, outcome.usage.input_tokens)
            if outcome.guard:
                return "guard", outcome.guard, changed
            if not outcome.calls:
                if await self.policy.asks_again(outcome.text, outcome.message_id, changed=changed, malformed=outcome.malformed):
                    continue
                return "finished", None, changed
            round_ = await self.calls.run(outcome.calls, outcome.message_id)
            changed = changed or bool(round_.changed)
            if await self.policy.done_after(outcome.calls, round_, changed=changed):
                return "finished", None, changed
            # The model's round, whatever rounds the policy ran since (Totem's own test run).
            rounds.record_step(changed=bool(round_.changed), new_information=round_.new_information)
            if round_.stop:
                return "guard", round_.stop, changed
            if not round_.new_information:
                await self.policy.after_stall(outcome.message_id, changed=changed)

    async def _step(self, provider: Provider, request: ChatRequest, step: int, message_id: str) -> _StepOutcome:
        """One step into its assistant message (kept across retries; a retried try's parts are
        marked discarded)."""
        all_reasoning = ReasoningRetry(least=least_reasoning(provider))
        attempt = 0
        while True:
            attempt += 1
            stream = StepStream(self.writes, message_id, session_id=self.session_id, emit=self.emit, unique_call=self.unique_call)
            self._writers = stream.parts
            failure: ProviderError | None = None
            async with anyio.create_task_group() as group:
                group.start_soon(flush_while_streaming, self._writers, self.writes)
                try:
                    await stream.read(
                        provider, request, specs=self.specs, think_tags=self.record.think_tags, blocks=self.policy.file_blocks()
                    )
                except ProviderError as exc:
                    failure = exc  # handled outside the group, which would wrap it in an ExceptionGroup
                finally:
                    group.cancel_scope.cancel()
            if stream.model:
                self.answered_by = f"{self.model.split('/', 1)[0]}/{stream.model}"
            await stream.flush()
            if failure is not None:
                if isinstance(failure, ContextOverflowError):
                    await self.agent.store.discard_message_parts(message_id)
                    await self.emit(ev.StepDiscarded(session_id=self.session_id, step=step, reason=failure.message))
                    self._writers = []
                if not should_retry(failure, attempt, tool_call_seen=bool(stream.calls)):
                    raise failure
                await self._discard(message_id, step, failure, attempt)
                continue
            text, calls = stream.text, stream.calls
            guard = await stream.cut_repetition()
            retry = None if guard else all_reasoning.after_reply(text.text, stream.reasoning.text, calls)
            if retry is not None and retry.retry:
                await self._retry_with_less_reasoning(message_id, step, retry.notice)
                request = replace(request, reasoning=retry.level)
                attempt -= 1  # not a failure: the provider-error retries keep their budget
                continue
            if retry is not None:
                guard = retry.notice
            if guard:
                calls = []
            self._answers.append(text)
            self._writers = []
            await self._learn(calls, text.text, stream.text_calls)
            await self.writes.add_part(
                message_id, "step", {"step": step, "model": self.answered_by, "usage": stream.usage.model_dump(by_alias=True)}
            )
            await self.emit(ev.StepEnd(
                session_id=self.session_id, step=step, model=self.answered_by, usage=stream.usage,
                finish=finish_kind(stream.finish),
            ))
            return _StepOutcome(
                calls=calls, message_id=message_id, usage=stream.usage, guard=guard, text=text.text,
                malformed=stream.text_calls.malformed > 0,
            )

    async def notice(
        self, message: str, *, level: ev.NoticeLevel = "info", call_id: str | None = None
    ) -> None:
        """A notice the chat shows and the session keeps (a notice part of its own message, with
        its ``level`` unless info); ``call_id`` as in ``ev.Notice``."""
        notice_message = await self.agent.store.add_message(self.session_id, "assistant", turn_id=self.turn_id)
        await self.agent.store.add_part(notice_message, "notice", {"text": message, **({} if level == "info" else {"level": level})})
        await self.emit(ev.Notice(session_id=self.session_id, level=level, message=message, call_id=call_id))

    async def server_notice(
        self, level: ev.NoticeLevel, message: str, *, call_id: str | None = None
    ) -> None:
        """What the MCP servers say (started, failed, exited, stopped: mcp/servers.py), also after
        this turn ended (a stop at the run's end, an idle stop, an exit between turns): kept as
        this turn's notice while the session's conversation still ends in this turn, so a reopened
        session shows it; once a newer turn of the session began, or a rewind moved it, only sent
        (a turn's messages stay together)."""
        messages, head = await self.agent.store.tree(self.session_id)
        if any(m.id == head and m.turn_id == self.turn_id for m in messages):
            await self.notice(message, level=level, call_id=call_id)
        else:
            await self.emit(ev.Notice(session_id=self.session_id, level=level, message=message, call_id=call_id))

    async def _retry_with_less_reasoning(self, message_id: str, step: int, notice: str) -> None:
        """Drop a reply that was all reasoning (kept in the store, marked discarded) and say so."""
        self._writers = []
        await self.agent.store.discard_message_parts(message_id)
        await self.emit(ev.StepDiscarded(session_id=self.session_id, step=step, reason=notice))
        await self.emit(ev.Notice(session_id=self.session_id, level="info", message=notice))

    def text_calls_wanted(self) -> bool:
        """Calls are taught and read as text: the model writes scripts (code mode), or has no
        reliable native calls (by its record, or as learned during this turn)."""
        if self.policy.scripts:
            return True
        return bool(self.specs) and not (self.record.native_tools and self.record.tool_call_format == "native")

    def use_scripts(self, *, learn: bool = False) -> None:
        """The rest of the request in code mode (turn/scripts.py), ``run_script`` and ``write``
        among the tools even where the model's surface leaves them out. ``learn``: a script that
        changes files shows code mode works for this model (the record keeps it)."""
        self.policy = ScriptPolicy(self, small=is_small(self.record.context_window, self.record.tier), learn=learn)
        self._offer_tools()

    async def caught_in_prose(self, message_id: str, files: list[ToolCall]) -> None:
        """The model described the change in its answer instead of making it (seed 003, caught in
        the act): code mode for the rest of the request. The whole files its answer held
        (``files``) are applied as its calls, asked, snapshotted and checked like any write; a
        file it never read counts as read, since the answer gives all of it (one it read before
        a change since stays stale, so the change is not lost). With none applied, it is asked
        for a script."""
        self.use_scripts(learn=True)
        if files:
            for call in files:
                rel = json.loads(call.arguments)["path"]
                path = self.agent.root / rel
                if rel not in self.state.reads.seen and await anyio.Path(path).is_file():
                    mark_seen_in(self.state.reads, rel, await self.agent.workspace.read_bytes(path))
            round_ = await self.calls.run([self.unique_call(call) for call in files], message_id)
            if round_.changed:
                await self.notice(f"The model wrote the whole file in its answer; Totem applied {', '.join(round_.changed)}.")
                return
        store = self.agent.store
        message = await store.add_message(self.session_id, "user", turn_id=self.turn_id)
        text = prompt("code_mode_switch.txt").replace("{request}", self.text)
        await store.add_part(message, "context", {"text": text, "nudge": True})
        await self.notice("The model described the change instead of making it; Totem asks it for a script.")

    async def remember(self, record: CapabilityRecord) -> None:
        self.record = record
        provider_name, model_id = self.model.split("/", 1)
        await self.agent.capabilities.remember(provider_name, model_id, record)

    def _request(self, model_id: str, base_prompt: str, history: list) -> ChatRequest:
        """The step's request, as the policy shapes it (its output cap, its history). A model that
        does not call tools natively is taught the text form instead, which the stream reads back."""
        common = dict(
            model=model_id,
            messages=tuple(self.policy.history(history)),
            reasoning=self.options.reasoning,
            temperature=self.temperature,
            seed=self.seed,
            max_tokens=self.policy.max_tokens(self.record),
        )
        if not self.text_calls_wanted():
            return ChatRequest(system=base_prompt, tools=self.specs, **common)
        teach = self.policy.tool_prompt(self.specs)
        return ChatRequest(system=f"{base_prompt}\n\n{teach}" if self.specs else base_prompt, **common)

    async def _learn(self, calls: list[ToolCall], text: str, stats: TextCallStats) -> None:
        """Update what the model is known to do from what it just did (seed 003 evidence)."""
        malformed = stats.malformed + sum(1 for call in calls if arguments_object(call.arguments) is None)
        learned = after_step(
            self.record,
            tools_offered=bool(self.specs),
            native_calls=stats.native,
            text_calls=stats.parsed,
            malformed_calls=malformed,
            prose_edit=not calls and detect_prose_edit(text),
            good_rounds=self.calls.good_rounds,
        )
        if learned is not self.record:
            await self.remember(learned)

    async def _discard(self, message_id: str, step: int, failure: ProviderError, attempt: int) -> None:
        """Drop a failed try's parts (marked, kept in the store), tell the front end, wait."""
        self._writers = []
        await self.agent.store.discard_message_parts(message_id)
        await self.emit(ev.StepDiscarded(session_id=self.session_id, step=step, reason=failure.message))
        wait = retry_delay(failure, attempt, self.options.retry_max_wait)
        await self.emit(
            ev.Notice(
                session_id=self.session_id,
                level="warning",
                message=f"{type(failure).__name__}: {failure.message}. Retrying in {wait:.1f} s (try {attempt + 1}).",
            )
        )
        await anyio.sleep(wait)

    def unique_call(self, call: ToolCall) -> ToolCall:
        """The call with an id no other call of the session has. Providers' own ids are kept when
        they are unique (some vendors insist on their format); a missing or repeated one is replaced,
        so front ends can key a call by its id."""
        if not call.id or call.id in self._used_call_ids:
            call = replace(call, id=new_id("call"))
        self._used_call_ids.add(call.id)
        return call


