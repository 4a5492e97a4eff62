"""The agent loop: one step is one model call; its tool calls run (calls.py); repeat until done.

``Agent.turn(...)`` returns a ``Turn``; ``await turn.run()`` streams the answer to the front end as
events, asks permission through it, runs the tools and stores every part as it arrives; it ends
with a ``TurnResult`` whose ``stop_reason`` says why (finished, aborted, step_limit, guard,
error). ``turn.abort()`` may be called at any time from the same event loop: the stream is
cancelled, running children are killed (the tools own their process groups), the partial answer
is stored and unfinished calls are marked interrupted.
"""

from __future__ import annotations

import json
import logging
from contextlib import aclosing
from collections.abc import AsyncIterator, Callable
from typing import Protocol
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from totem_engine import events as ev
from totem_engine.calls import ToolCalls
from totem_engine.checks.base import Checker
from totem_engine.checks.registry import checkers_from_config
from totem_engine.checks.totaljs import is_totaljs_project
from totem_engine.config import MIN_MAX_STEPS, Config, ConfigError
from totem_engine.frontend import FrontEnd
from totem_engine.compaction import Complete, Fitted, build_ledger, completer, fit, ledger_present
from totem_engine.context import output_reserve
from totem_engine.progress import ReasoningRetry, RepetitionDetector, RoundLimit, least_reasoning
from totem_engine.prompt import system_prompt
from totem_engine.providers.base import (
    ChatRequest,
    FinishChunk,
    Provider,
    ReasoningChunk,
    StateChunk,
    StreamChunk,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)
from totem_engine.providers.capabilities import CapabilityRecord, after_step, detect_prose_edit
from totem_engine.providers.errors import ContextOverflowError, ProviderError
from totem_engine.providers.textcalls import (
    TextCallStats,
    small_tool_prompt,
    text_tool_calls,
    think_filter,
    tool_prompt,
)
from totem_engine.retry import retry_delay, should_retry
from totem_engine.session_state import SessionState
from totem_engine.skills import discover
from totem_engine.snapshots import Snapshots
from totem_engine.store import Session, Store, new_id
from totem_engine.tools.base import Tool
from totem_engine.tools.skill import SkillTool
from totem_engine.small_turn import SmallModelTurn
from totem_engine.tools.registry import is_small, surface, tool_specs
from totem_engine.tools.workspace import Workspace
from totem_engine.written_history import as_written

log = logging.getLogger(__name__)

STORE_EVERY = 0.25  # seconds between stored updates of a streaming part


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


class _StreamedPart:
    """One text or reasoning part of a step: created on its first delta and stored again every
    STORE_EVERY seconds while it grows (``flush_while_streaming``), so a killed process loses at
    most the last fraction of a second of it."""

    def __init__(self, store: Store, message_id: str, kind: str):
        self.store, self.message_id, self.kind = store, message_id, kind
        self.part_id: str | None = None
        self.chunks: list[str] = []
        self.dirty = False

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    async def add(self, text: str) -> str:
        self.chunks.append(text)
        if self.part_id is None:
            self.part_id = await self.store.add_part(self.message_id, self.kind, {"text": text})
        else:
            self.dirty = True
        return self.part_id

    async def flush(self) -> None:
        if self.part_id is not None and self.dirty:
            self.dirty = False
            await self.store.update_part(self.part_id, data={"text": self.text})


async def flush_while_streaming(parts: list[_StreamedPart]) -> None:
    while True:
        await anyio.sleep(STORE_EVERY)
        for part in parts:
            await part.flush()


@dataclass
class _StepOutcome:
    calls: list[ToolCall]
    message_id: str
    usage: ev.Usage
    text: str = ""
    guard: str | None = None  # a guard on the reply itself ended the run (repetition, all reasoning)


class _Fitter:
    """Each step's request, kept inside the model's window (compaction.py): estimated, compacted
    when over budget (tool results to one-line accounts, then a summary checkpoint written by the
    session's model or ``small_model``), with the pinned ledger checked and the estimate reported."""

    def __init__(self, turn: "Turn", provider: Provider, model_id: str, base_prompt: str):
        self.turn = turn
        self.provider = provider
        self.model_id = model_id
        self.base_prompt = base_prompt
        self.window = turn.record.context_window
        self.reserve = output_reserve(turn.record.max_output_tokens, self.window)
        self.complete = self._summariser()

    def overflowed_at(self, estimate: int) -> None:
        """The provider refused a request of about ``estimate`` tokens: with no window known, that
        size is the window from now on (it is at least too much)."""
        if self.window is None:
            self.window = estimate
            self.reserve = output_reserve(self.turn.record.max_output_tokens, self.window)

    def _summariser(self) -> Complete:
        small = self.turn.agent.config.small_model
        if small:
            name, model_id = small.split("/", 1)
            try:
                return completer(self.turn.agent.provider_for(name), model_id)
            except ConfigError:
                pass  # a small model that cannot be built leaves the session's own
        return completer(self.provider, self.model_id)

    async def fit(self, stored, *, force: bool = False) -> Fitted:
        turn = self.turn
        ledger = build_ledger(stored, turn.state.todos)
        fitted = await fit(
            stored,
            build=lambda history: turn._request(self.model_id, self.base_prompt, history),
            window=self.window,
            output_reserve=self.reserve,
            ledger=ledger,
            complete=self.complete,
            store=turn.agent.store,
            session_id=turn.session_id,
            turn_id=turn.turn_id,
            provider=self.provider.name,
            calibration=turn.state.calibration.factor,
            compact_at=turn.agent.config.compact_at,
            force=force,
        )
        if fitted.compacted and not ledger_present(fitted.messages, ledger):
            await turn.emit(ev.Notice(session_id=turn.session_id, level="warning", message="Compaction lost part of the pinned ledger."))
        await turn.emit(ev.ContextEstimate(session_id=turn.session_id, estimate=fitted.estimate, window=self.window))
        return fitted


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

    def checkers(self, *, totaljs: bool) -> list[Checker]:
        """The project's checks, the one place they are built: the Total.js rules when ``totaljs``
        (and ``conventions``), then the project's own commands. A new list each time."""
        return checkers_from_config(self.config, totaljs=totaljs)

    def turn(
        self, text: str, frontend: FrontEnd, *, session_id: str, model: str, options: TurnOptions, session: Session | None = None
    ) -> "Turn":
        """``session``: the session as the front end just read it, so the turn does not read it again."""
        return Turn(self, text, frontend, session_id=session_id, model=model, options=options, session=session)


class Turn:
    def __init__(
        self, agent: Agent, text: str, frontend: FrontEnd, *, session_id: str, model: str, options: TurnOptions,
        session: Session | None = None,
    ):
        self.agent = agent
        self.text = text
        self.frontend = frontend
        self.session_id = session_id
        self._session = session
        self.model = model  # "provider/model id"
        self.options = options
        self.turn_id = new_id("trn")
        self.answered_by = model
        self._scope = anyio.CancelScope()
        self._aborted = False
        self._writers: list[_StreamedPart] = []  # the parts of the step streaming now
        self._answers: list[_StreamedPart] = []  # the text parts of finished steps
        self._used_call_ids: set[str] = set()
        self.small: SmallModelTurn | None = None  # set for a small model (small_turn.py)
        self.seed: int | None = None  # a fresh attempt's (start_afresh)
        self._step_count = 0  # steps so far, over every attempt

    def abort(self) -> None:
        self._aborted = True
        self._scope.cancel()

    async def emit(self, event: ev.Event) -> None:
        await self.frontend.emit(event)

    async def run(self) -> TurnResult:
        store = self.agent.store
        session = self._session or await store.get_session(self.session_id)
        self.state = SessionState.from_meta(session.meta)
        await self._setup()
        self.calls = ToolCalls(self)
        user_message = await store.add_message(self.session_id, "user", turn_id=self.turn_id)
        await store.add_part(user_message, "text", {"text": self.text})
        self.user_message = user_message
        await self.emit(ev.TurnStart(session_id=self.session_id, turn_id=self.turn_id, model=self.model))

        stop: ev.StopReason = "finished"
        reason: str | None = None
        with self._scope:
            try:
                stop, reason = await self._steps()
            except ProviderError as exc:
                stop, reason = "error", exc.message
                await self.emit(ev.Error(session_id=self.session_id, error_class=type(exc).__name__, message=exc.message))
            except Exception as exc:  # a bug must end the turn visibly, not take the front end down
                log.exception("turn failed")
                stop, reason = "error", f"{type(exc).__name__}: {exc}"
                await self.emit(ev.Error(session_id=self.session_id, error_class="InternalError", message=reason))
        if self._aborted:
            stop, reason = "aborted", "Stopped by the user."
        with anyio.CancelScope(shield=True):
            return await self._finish(stop, reason)

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
        self.tools = {**self.agent.tools, "skill": SkillTool(self.skills)}

    async def _finish(self, stop: ev.StopReason, reason: str | None) -> TurnResult:
        store = self.agent.store
        for writer in self._writers:
            await writer.flush()
        self._answers.extend(w for w in self._writers if w.kind == "text")
        await self.calls.close_open()
        self.state.rules = self.calls.policy.session
        await store.update_session(self.session_id, meta=self.state.to_meta())
        if stop != "finished" and reason:
            message = await store.add_message(self.session_id, "assistant", turn_id=self.turn_id)
            await store.add_part(message, "error" if stop == "error" else "notice", {"stopReason": stop, "text": reason})
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
        self.tools, brief = surface(self.tools, self.record.context_window, self.record.tier)
        self.specs = tool_specs(self.tools, brief=brief)
        if is_small(self.record.context_window, self.record.tier):
            self.small = SmallModelTurn(self)
        skills = self.skills if "skill" in self.tools else ()
        base_prompt = system_prompt(
            self.agent.root, self.options.mode, totaljs=bool(self.state.totaljs), skills=skills, small=self.small is not None
        )
        self.state.reads.shown.clear()  # shown with an earlier request: further back, perhaps compacted
        if self.small:
            await self.small.prepare()
        fitter = _Fitter(self, provider, model_id, base_prompt)
        rounds = RoundLimit(effective_max_steps(self.options.max_steps))
        while True:
            stop, reason, changed = await self._attempt(provider, fitter, rounds)
            if not (self.small and await self.small.afresh(stop, changed=changed)):
                return stop, reason

    def start_afresh(self, *, temperature: float, seed: int) -> None:
        """The turn's state back to its start for another attempt at the request (small_turn.py
        ``afresh``, which has put the files back and discarded the attempt), sampled this time:
        the same request at the same temperature gets the same answer. The permissions the user
        granted stay."""
        self.state.rules = self.calls.policy.session
        self.calls = ToolCalls(self)
        self._answers = []
        self.temperature, self.seed = temperature, seed

    async def _attempt(self, provider: Provider, fitter: "_Fitter", rounds: RoundLimit) -> tuple[ev.StopReason, str | None, bool]:
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
            stored = await self.agent.store.messages(self.session_id)
            self._used_call_ids.update(p.data.get("callId") for m in stored for p in m.parts if p.type == "tool")
            fitted = await fitter.fit(stored)
            message_id = await self.agent.store.add_message(
                self.session_id, "assistant", turn_id=self.turn_id, step=step, model=self.model
            )
            try:
                outcome = await self._step(provider, fitted.request, step, message_id)
            except ContextOverflowError:
                # The provider counts differently: compact harder and retry the step once, never more.
                fitter.overflowed_at(fitted.estimate)
                fitted = await fitter.fit(await self.agent.store.messages(self.session_id), force=True)
                outcome = await self._step(provider, fitted.request, step, message_id)
            self.state.calibration.update(fitted.raw_input, outcome.usage.input_tokens)
            if outcome.guard:
                return "guard", outcome.guard, changed
            if not outcome.calls:
                malformed = self._text_calls.malformed > 0
                if self.small and await self.small.asks_again(outcome.text, outcome.message_id, changed=changed, malformed=malformed):
                    continue
                return "finished", None, changed
            reason = await self.calls.run(outcome.calls, outcome.message_id)
            changed = changed or self.calls.round_changed
            if self.small and self.calls.round_changed:
                self.small.untested = True
            if not reason and self.small and await self.small.done_after(outcome.calls, changed=changed):
                return "finished", None, changed
            rounds.record_step(changed=self.calls.round_changed, new_information=self.calls.novelty.last_round_new)
            if reason:
                return "guard", reason, changed
            if self.small and not self.calls.novelty.last_round_new:
                await self.small.after_stall(outcome.message_id, changed=changed)

    async def _step(self, provider: Provider, request: ChatRequest, step: int, message_id: str) -> _StepOutcome:
        """One step into its assistant message (kept across retries; a retried try's parts are
        marked discarded)."""
        store = self.agent.store
        all_reasoning = ReasoningRetry(least=least_reasoning(provider))
        attempt = 0
        while True:
            attempt += 1
            text = _StreamedPart(store, message_id, "text")
            reasoning = _StreamedPart(store, message_id, "reasoning")
            self._writers = [text, reasoning]
            calls: list[ToolCall] = []
            usage = ev.Usage()
            failure: ProviderError | None = None
            async with anyio.create_task_group() as group:
                group.start_soon(flush_while_streaming, self._writers)
                try:
                    usage = await self._stream_once(provider, request, text, reasoning, calls)
                except ProviderError as exc:
                    failure = exc  # handled outside the group, which would wrap it in an ExceptionGroup
                finally:
                    group.cancel_scope.cancel()
            await text.flush()
            await reasoning.flush()
            if failure is not None:
                if isinstance(failure, ContextOverflowError):
                    await self.agent.store.discard_message_parts(message_id)
                    await self.emit(ev.StepDiscarded(session_id=self.session_id, step=step, reason=failure.message))
                    self._writers = []
                if not should_retry(failure, attempt, tool_call_seen=bool(calls)):
                    raise failure
                await self._discard(message_id, step, failure, attempt)
                continue
            guard = await self._cut_repetition(text, reasoning)
            retry = None if guard else all_reasoning.after_reply(text.text, reasoning.text, calls)
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
            await self._learn(provider.name, request.model, calls, text.text)
            await store.add_part(
                message_id, "step", {"step": step, "model": self.answered_by, "usage": usage.model_dump(by_alias=True)}
            )
            await self.emit(ev.StepEnd(session_id=self.session_id, step=step, model=self.answered_by, usage=usage))
            return _StepOutcome(calls=calls, message_id=message_id, usage=usage, guard=guard, text=text.text)

    async def notice(self, message: str) -> None:
        """An info notice the chat shows and the session keeps (a notice part of its own message)."""
        notice_message = await self.agent.store.add_message(self.session_id, "assistant", turn_id=self.turn_id)
        await self.agent.store.add_part(notice_message, "notice", {"text": message})
        await self.emit(ev.Notice(session_id=self.session_id, level="info", message=message))

    async def _retry_with_less_reasoning(self, message_id: str, step: int, notice: str) -> None:
        """Drop a reply that was all reasoning (kept in the store, marked discarded) and say so."""
        self._writers = []
        await self.agent.store.discard_message_parts(message_id)
        await self.emit(ev.StepDiscarded(session_id=self.session_id, step=step, reason=notice))
        await self.emit(ev.Notice(session_id=self.session_id, level="info", message=notice))

    async def _cut_repetition(self, text: _StreamedPart, reasoning: _StreamedPart) -> str | None:
        """The reason to stop when the stream was cut for repeating itself; the stored part keeps
        the text up to two copies of the repeated span."""
        for part, detector in ((text, self._repeat_text), (reasoning, self._repeat_reasoning)):
            if detector.fired:
                await _cut(part, detector.keep(copies=2))
                return detector.reason
        held = self._repeat_held
        if not held.fired:
            return None
        # Caught before the filters: the text given out, if it holds the span, is cut where it starts.
        start = text.text.find(held.unit)
        await _cut(text, start + 2 * len(held.unit) if start >= 0 else None)
        return held.reason

    def text_calls_wanted(self) -> bool:
        """Calls are taught and read as text: the model has no reliable native calls (by its record,
        or as learned during this turn)."""
        return bool(self.specs) and not (self.record.native_tools and self.record.tool_call_format == "native")

    def _request(self, model_id: str, base_prompt: str, history: list) -> ChatRequest:
        """The step's request. A model that does not call tools natively is taught the text form
        instead (the small-model form when small, its earlier calls replayed as it wrote them),
        which the stream reads back."""
        # A small model that loses its way can write until its window is full (minutes on a CPU):
        # its answers are capped at the output the window keeps free for them.
        limit = output_reserve(self.record.max_output_tokens, self.record.context_window) if self.small else None
        if self.small and self.small.writes_blocks:
            history = as_written(history)
        common = dict(
            model=model_id, messages=tuple(history), reasoning=self.options.reasoning, temperature=self.temperature, seed=self.seed, max_tokens=limit
        )
        if not self.text_calls_wanted():
            return ChatRequest(system=base_prompt, tools=self.specs, **common)
        teach = small_tool_prompt if self.small else tool_prompt
        return ChatRequest(system=f"{base_prompt}\n\n{teach(self.specs)}" if self.specs else base_prompt, **common)

    async def _learn(self, provider_name: str, model_id: str, calls: list[ToolCall], text: str) -> None:
        """Update what the model is known to do from what it just did (seed 003 evidence)."""
        stats = self._text_calls
        malformed = stats.malformed + sum(1 for call in calls if not _is_json_object(call.arguments))
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
            self.record = learned
            await self.agent.capabilities.remember(provider_name, model_id, learned)

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

    async def _stream_once(
        self, provider: Provider, request: ChatRequest, text: _StreamedPart, reasoning: _StreamedPart, calls: list[ToolCall]
    ) -> ev.Usage:
        """One try of a step: forward every delta as it arrives, collect the tool calls.

        The stream is read through the text filters: ``<think>`` for models that write their
        thoughts into the text, and tool calls written as text, which fill a step that has no
        native call (native calls win; the markup is then given back as text).
        """
        usage = ev.Usage()
        self._text_calls = TextCallStats()
        self._repeat_text = RepetitionDetector()
        self._repeat_reasoning = RepetitionDetector()
        self._repeat_held = RepetitionDetector()
        stream = provider.stream(request)
        if self.specs:
            # A file block's text is held by the filters until it closes: watched before them.
            stream = _watched(stream, self._repeat_held)
        if self.record.think_tags:
            stream = think_filter(stream)
        if self.specs:
            stream = text_tool_calls(
                stream,
                {spec.name for spec in self.specs},
                schemas={spec.name: spec.parameters for spec in self.specs},
                stats=self._text_calls,
                file_blocks=bool(self.small) and self.small.writes_blocks,
                default_path=self.small.default_path if self.small else None,
                path_for=self.small.block_path if self.small else None,
            )
        async with aclosing(stream) as chunks:
            try:
                async for chunk in chunks:
                    usage = await self._forward(chunk, provider, text, reasoning, calls, usage)
                    if self._repeat_text.fired or self._repeat_reasoning.fired:
                        break  # closing the stream ends the request
            except _Repeating:
                pass  # what the filters held is dropped with the stream
        return usage

    async def _forward(
        self, chunk, provider: Provider, text: _StreamedPart, reasoning: _StreamedPart, calls: list[ToolCall], usage: ev.Usage
    ) -> ev.Usage:
        """One chunk of the stream to the store, the front end or the step's calls; the usage so far."""
        if isinstance(chunk, TextChunk) and chunk.text:
            part_id = await text.add(chunk.text)
            await self.emit(ev.TextDelta(session_id=self.session_id, part_id=part_id, text=chunk.text))
            self._repeat_text.feed(chunk.text)
        elif isinstance(chunk, ReasoningChunk) and chunk.text:
            part_id = await reasoning.add(chunk.text)
            await self.emit(ev.ReasoningDelta(session_id=self.session_id, part_id=part_id, text=chunk.text))
            self._repeat_reasoning.feed(chunk.text)
        elif isinstance(chunk, ToolCallChunk):
            calls.append(self.unique_call(chunk.call))
        elif isinstance(chunk, UsageChunk):
            return ev.Usage(input_tokens=chunk.input_tokens, output_tokens=chunk.output_tokens)
        elif isinstance(chunk, StateChunk):
            await self.agent.store.add_part(text.message_id, "state", {"provider": provider.name, "data": chunk.data})
        elif isinstance(chunk, FinishChunk) and chunk.model:
            self.answered_by = f"{self.model.split('/', 1)[0]}/{chunk.model}"
        return usage

    def unique_call(self, call: ToolCall) -> ToolCall:
        """The call with an id no other call of the session has. Providers' own ids are kept when
        they are unique (some vendors insist on their format); a missing or repeated one is replaced,
        so front ends can key a call by its id."""
        if not call.id or call.id in self._used_call_ids:
            call = replace(call, id=new_id("call"))
        self._used_call_ids.add(call.id)
        return call


async def _cut(part: _StreamedPart, keep: int | None) -> None:
    """``part`` cut to its first ``keep`` characters and marked so, when that is shorter."""
    if keep is not None and keep < len(part.text):
        part.chunks = [part.text[:keep] + "\n[... the same text repeated; cut]"]
        part.dirty = True
        await part.flush()


class _Repeating(Exception):
    """The raw stream repeated itself (``_watched``)."""


async def _watched(stream: AsyncIterator[StreamChunk], detector: RepetitionDetector) -> AsyncIterator[StreamChunk]:
    """``stream`` with its text fed to ``detector`` before any filter holds it; raises
    ``_Repeating`` when it fires."""
    async with aclosing(stream) as chunks:
        async for chunk in chunks:
            if isinstance(chunk, TextChunk) and detector.feed(chunk.text):
                raise _Repeating
            yield chunk


def _is_json_object(arguments: str) -> bool:
    if not arguments.strip():
        return True
    try:
        return isinstance(json.loads(arguments), dict)
    except json.JSONDecodeError:
        return False
