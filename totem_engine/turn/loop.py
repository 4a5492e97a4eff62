"""The agent loop: one step is one model call; its tool calls run as a round (calls.py); repeat
until done.

``Turn(agent, ...)`` is one request in a project (agent.py); ``await turn.run()`` streams the
answer to the front end as events (stream.py), asks permission through it, runs the tools and
stores every part as it arrives; it ends with a ``TurnResult`` (terms.py) whose ``stop_reason``
says why (finished, aborted, step_limit, guard, error). ``turn.abort()`` may be called at any time
from the same event loop: the stream is cancelled, running children are killed (the tools own their
process groups), the partial answer is stored and unfinished calls are marked interrupted. What
differs by the kind of model is the turn's ``policy`` (policy.py, small.py); one step and its
retries are step.py's, the request's storing request.py's.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import anyio

from totem_engine.api import events as ev
from totem_engine.attachments import Attachment
from totem_engine.checks.base import Checker
from totem_engine.checks.totaljs import is_totaljs_project
from totem_engine.api.frontend import FrontEnd
from totem_engine.leases import holding
from totem_engine.mcp.deferred import fit_schemas
from totem_engine.mentions import unasked_reads
from totem_engine.prompt import system_prompt
from totem_engine.redaction import RedactingFrontEnd
from totem_engine.prompt_files import prompt
from totem_engine.providers.base import Provider
from totem_engine.vocab.chat import ChatRequest
from totem_engine.vocab.messages import Image
from totem_engine.vocab.tools import ToolCall, ToolSpec, arguments_object
from totem_engine.providers.capabilities import CapabilityRecord, after_step, detect_prose_edit
from totem_engine.providers.errors import ContextOverflowError, ProviderError
from totem_engine.providers.hints import hint_for
from totem_engine.textcalls import TextCallStats
from totem_engine.retry import MAX_TURN_RETRIES, turn_retry_delay
from totem_engine.session_state import SessionState
from totem_engine.skills import Skill, discover
from totem_engine.store import Session, WriteFailed, new_id
from totem_engine.tools.base import Tool
from totem_engine.tools.freshness import mark_seen_in
from totem_engine.tools.registry import is_small, surface, tool_specs
from totem_engine.tools.skill import SkillTool
from totem_engine.tools.task import TaskTool
from totem_engine.turn.agent import Agent
from totem_engine.turn.calls import ToolCalls
from totem_engine.turn.fitting import Fitter, step_request
from totem_engine.turn.guards import RoundLimit
from totem_engine.turn.hook_points import HookPoints, Opening
from totem_engine.turn.caught import CatchingPolicy
from totem_engine.turn.policy import Finish, SwitchToScripts, TurnPolicy
from totem_engine.turn.request import images_again, say_restored, store_request
from totem_engine.turn.scripts import SCRIPT_TOOLS, ScriptPolicy, wants_scripts
from totem_engine.turn.small import SmallModelPolicy
from totem_engine.turn.step import StepOutcome, Steps
from totem_engine.turn.subagent import SubAgents
from totem_engine.turn.terms import Again, TurnOptions, TurnResult, round_budget

log = logging.getLogger(__name__)

COMMIT_EVERY = 0.25  # seconds between commits of a running turn's queued writes (store.DeferredWrites)


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
        # Every event leaves scrubbed of the known secrets (redaction.py), whoever emits it.
        self.frontend: FrontEnd = RedactingFrontEnd(frontend)
        self.session_id = session_id
        self._session = session
        # The steps' own writes, queued without waiting for the disk: committed by the next
        # step's read of the history (``writes.messages``, before its request) or the turn's end.
        self.writes = agent.store.deferred(session_id)
        self.model = model  # "provider/model id"
        self.options = options
        self.turn_id = turn_id or new_id("trn")
        self.children: list[Turn] = []  # its sub-agents' turns running now (tools/task.py)
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
        self.seed: int | None = None  # a fresh attempt's (_start_afresh)
        self.user_message = ""  # the stored request's message id
        self.policy: TurnPolicy = CatchingPolicy(self)  # what differs by the kind of model (policy.py)
        self._scope = anyio.CancelScope()
        self._aborted = False
        self.steps = Steps(
            store=agent.store, writes=self.writes, session_id=session_id, model=model,
            retry_max_wait=options.retry_max_wait, emit=self.emit, unique_call=self.unique_call,
        )
        self._used_call_ids: set[str] = set()
        self._step_count = 0  # steps so far, over every attempt
        self.calls = ToolCalls(self, session_rules=[])  # the attempt's rounds; run gives it the session's rules
        self.hooks = HookPoints(self)  # the user's hooks at this turn's points (hook_points.py)

    @property
    def answered_by(self) -> str:
        """The model that answered the last step, as the provider named it ("provider/model id")."""
        return self.steps.answered_by

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
                await images_again(store, self.session_id, self.user_message)
        else:
            opened = await self._open_request(session)
            if opened.blocked is not None:
                await self.emit(ev.TurnStart(session_id=self.session_id, turn_id=self.turn_id, model=self.model))
                return await self._finish("guard", opened.blocked)
            self.user_message = await store_request(
                store, self.state, session_id=self.session_id, turn_id=self.turn_id, text=self.text, typed=self.typed,
                attached=self.attached, images=self.images,
            )
            if opened.context:
                await store.add_part(self.user_message, "context", {"text": opened.context, "hooks": True})
        await say_restored(store, self.state, self.user_message)
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

    async def _open_request(self, session: Session) -> Opening:
        """The hooks of a new request (SessionStart, UserPromptSubmit); a sub-agent's has none."""
        if self.agent.subagent:
            return Opening()
        resumed = self.session_id not in self.agent.hooks.started and bool(await self.agent.store.messages(session.id))
        return await self.hooks.opening(resumed=resumed)

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
            self.tools["task"] = TaskTool(
                SubAgents(self, start=Turn), agents, limit=self.agent.config.max_agents, tools=self.agent.tools,
            )

    async def _finish(self, stop: ev.StopReason, reason: str | None, failure: ev.Error | None = None) -> TurnResult:
        """``failure``: the turn's ``error`` event, stored with its class and hint so a reopened
        session shows what the live one did."""
        store = self.agent.store
        for writer in self.steps.streaming:
            await writer.flush()
        self.steps.answers.extend(w for w in self.steps.streaming if w.kind == "text")
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
        text = "\n\n".join(part.text for part in self.steps.answers if part.text)
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
            persona=self.options.persona, readable=unasked_reads(self.calls.policy, self.agent.root, self.agent.extra_roots),
        )
        reminder = prompt("totaljs_reminder.txt") if self.state.totaljs else None  # on each request (seed 001)
        self.state.reads.shown.clear()  # shown with an earlier request: further back, perhaps compacted
        await self.policy.prepare()
        fitter = Fitter(
            provider=provider,
            model_id=model_id,
            build=lambda history: step_request(
                self.policy, model_id=model_id, system=base_prompt, history=history, specs=self.specs, record=self.record,
                text_calls=self.text_calls_wanted, reasoning=self.options.reasoning, temperature=self.temperature, seed=self.seed,
                reminder=reminder,
            ),
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
            before_summary=lambda: self.hooks.pre_compact("auto"),
        )
        rounds = RoundLimit(*round_budget(self.options.max_steps, self.record))
        while True:
            stop, reason, changed = await self._attempt(provider, fitter, rounds)
            fresh = await self.policy.afresh(stop, changed=changed)
            if fresh is None:
                return stop, reason
            self._start_afresh(temperature=max(self.temperature or 0.0, fresh.temperature), seed=fresh.seed)
            await self.notice(fresh.notice)

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

    def _start_afresh(self, *, temperature: float, seed: int) -> None:
        """The turn's state back to its start for another attempt at the request (the policy's
        ``Afresh``: it has put the files back and discarded the attempt), sampled this time:
        the same request at the same temperature gets the same answer. The permissions the user
        granted stay."""
        self.state.rules = self.calls.policy.session
        self.calls = ToolCalls(self, session_rules=self.state.rules)
        self.steps.answers = []
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
                answer = await self.policy.after_answer(
                    outcome.text, outcome.message_id, changed=changed, malformed=outcome.malformed
                )
                if isinstance(answer, Finish):
                    go_on = await self.hooks.stop()
                    if go_on is None:
                        return "finished", None, changed
                    await self._nudge(prompt("hook_stop.txt").format(reason=go_on))
                    continue
                if isinstance(answer, SwitchToScripts):
                    await self._caught_in_prose(answer.message_id, list(answer.files))
                continue
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

    async def _step(self, provider: Provider, request: ChatRequest, step: int, message_id: str) -> StepOutcome:
        return await self.steps.run(
            provider, request, step, message_id, specs=self.specs, think_tags=self.record.think_tags,
            blocks=lambda: self.policy.file_blocks(), learn=self._learn,
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

    async def _caught_in_prose(self, message_id: str, files: list[ToolCall]) -> None:
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
        await self._nudge(prompt("code_mode_switch.txt").replace("{request}", self.text))
        await self.notice("The model described the change instead of making it; Totem asks it for a script.")

    async def _nudge(self, text: str) -> None:
        """``text`` to the model as Totem's word within the turn (a user message the chat does not show)."""
        message = await self.agent.store.add_message(self.session_id, "user", turn_id=self.turn_id)
        await self.agent.store.add_part(message, "context", {"text": text, "nudge": True})

    async def remember(self, record: CapabilityRecord) -> None:
        self.record = record
        provider_name, model_id = self.model.split("/", 1)
        await self.agent.capabilities.remember(provider_name, model_id, record)

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

    def unique_call(self, call: ToolCall) -> ToolCall:
        """The call with an id no other call of the session has. Providers' own ids are kept when
        they are unique (some vendors insist on their format); a missing or repeated one is replaced,
        so front ends can key a call by its id."""
        if not call.id or call.id in self._used_call_ids:
            call = replace(call, id=new_id("call"))
        self._used_call_ids.add(call.id)
        return call


