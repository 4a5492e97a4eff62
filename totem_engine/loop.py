"""The agent loop: one step is one model call; its tool calls run; repeat until the model is done.

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
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio

from totem_engine import events as ev
from totem_engine.checks.base import Checker
from totem_engine.checks.registry import run_checks
from totem_engine.frontend import FrontEnd, PermissionRequest, QuestionRequest
from totem_engine.guards import Guards, call_key
from totem_engine.history import to_messages
from totem_engine.permissions import Decision, Policy
from totem_engine.prompt import system_prompt
from totem_engine.providers.base import (
    ChatRequest,
    FinishChunk,
    Provider,
    ReasoningChunk,
    StateChunk,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)
from totem_engine.providers.errors import ProviderError
from totem_engine.retry import retry_delay, should_retry
from totem_engine.session_state import SessionState
from totem_engine.store import Store, new_id
from totem_engine.snapshots import Snapshots
from totem_engine.tools.base import Action, BoundaryError, Tool, ToolContext, ToolError, ToolResult, parse_arguments
from totem_engine.tools.registry import CHANGES_FILES, READ_ONLY, tool_specs
from totem_engine.tools.workspace import Workspace

log = logging.getLogger(__name__)

MIN_MAX_STEPS = 10
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
class _Call:
    call: ToolCall
    part_id: str
    data: dict  # the stored part's data, grown as the call goes on
    started: bool = False
    done: bool = False
    input: dict = field(default_factory=dict)


@dataclass
class _StepOutcome:
    calls: list[ToolCall]
    message_id: str


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
        checkers: list[Checker] | None = None,
        rules: list[ev.RuleRef] | None = None,
    ):
        self.root = root.resolve()
        self.store = store
        self.provider_for = provider_for
        self.tools = tools
        self.workspace = workspace
        self.snapshots = snapshots
        self.checkers = checkers or []
        self.rules = rules or []

    def turn(self, text: str, frontend: FrontEnd, *, session_id: str, model: str, options: TurnOptions) -> "Turn":
        return Turn(self, text, frontend, session_id=session_id, model=model, options=options)


class Turn:
    def __init__(self, agent: Agent, text: str, frontend: FrontEnd, *, session_id: str, model: str, options: TurnOptions):
        self.agent = agent
        self.text = text
        self.frontend = frontend
        self.session_id = session_id
        self.model = model  # "provider/model id"
        self.options = options
        self.turn_id = new_id("trn")
        self.answered_by = model
        self.guards = Guards()
        self._scope = anyio.CancelScope()
        self._aborted = False
        self._writers: list[_StreamedPart] = []  # the parts of the step streaming now
        self._answers: list[_StreamedPart] = []  # the text parts of finished steps
        self._open_calls: list[_Call] = []
        self._used_call_ids: set[str] = set()

    def abort(self) -> None:
        self._aborted = True
        self._scope.cancel()

    async def emit(self, event: ev.Event) -> None:
        await self.frontend.emit(event)

    async def run(self) -> TurnResult:
        store = self.agent.store
        session = await store.get_session(self.session_id)
        self.state = SessionState.from_meta(session.meta)
        self.policy = Policy(rules=list(self.agent.rules), session=list(self.state.rules), plan_mode=self.options.mode == "plan")
        if not session.title:
            await store.update_session(self.session_id, title=_title(self.text))
        user_message = await store.add_message(self.session_id, "user", turn_id=self.turn_id)
        await store.add_part(user_message, "text", {"text": self.text})
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

    async def _finish(self, stop: ev.StopReason, reason: str | None) -> TurnResult:
        store = self.agent.store
        for writer in self._writers:
            await writer.flush()
        self._answers.extend(w for w in self._writers if w.kind == "text")
        for call in self._open_calls:
            if not call.done:
                await self._close_call(call, "interrupted", "interrupted", "Interrupted before it finished.")
        self.state.rules = self.policy.session
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
        specs = tool_specs(self.agent.tools)
        system = system_prompt(self.agent.root, self.options.mode)
        limit = effective_max_steps(self.options.max_steps)
        step = 0
        while True:
            if limit and step >= limit:
                return "step_limit", f"Reached the step limit ({limit} steps). Say \"continue\" to go on."
            step += 1
            stored = await self.agent.store.messages(self.session_id)
            self._used_call_ids.update(p.data.get("callId") for m in stored for p in m.parts if p.type == "tool")
            history = to_messages(stored, provider=provider.name)
            request = ChatRequest(model=model_id, system=system, messages=tuple(history), tools=specs)
            outcome = await self._step(provider, request, step)
            if not outcome.calls:
                return "finished", None
            reason = await self._run_calls(outcome)
            if reason:
                return "guard", reason

    async def _step(self, provider: Provider, request: ChatRequest, step: int) -> _StepOutcome:
        store = self.agent.store
        message_id = await store.add_message(self.session_id, "assistant", turn_id=self.turn_id, step=step, model=self.model)
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
                if not should_retry(failure, attempt, tool_call_seen=bool(calls)):
                    raise failure
                await self._discard(message_id, step, failure, attempt)
                continue
            self._answers.append(text)
            self._writers = []
            await store.add_part(
                message_id, "step", {"step": step, "model": self.answered_by, "usage": usage.model_dump(by_alias=True)}
            )
            await self.emit(ev.StepEnd(session_id=self.session_id, step=step, model=self.answered_by, usage=usage))
            return _StepOutcome(calls=calls, message_id=message_id)

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
        """One try of a step: forward every delta as it arrives, collect the tool calls."""
        usage = ev.Usage()
        async for chunk in provider.stream(request):
            if isinstance(chunk, TextChunk) and chunk.text:
                part_id = await text.add(chunk.text)
                await self.emit(ev.TextDelta(session_id=self.session_id, part_id=part_id, text=chunk.text))
            elif isinstance(chunk, ReasoningChunk) and chunk.text:
                part_id = await reasoning.add(chunk.text)
                await self.emit(ev.ReasoningDelta(session_id=self.session_id, part_id=part_id, text=chunk.text))
            elif isinstance(chunk, ToolCallChunk):
                calls.append(self._unique(chunk.call))
            elif isinstance(chunk, UsageChunk):
                usage = ev.Usage(input_tokens=chunk.input_tokens, output_tokens=chunk.output_tokens)
            elif isinstance(chunk, StateChunk):
                await self.agent.store.add_part(text.message_id, "state", {"provider": provider.name, "data": chunk.data})
            elif isinstance(chunk, FinishChunk) and chunk.model:
                self.answered_by = f"{self.model.split('/', 1)[0]}/{chunk.model}"
        return usage

    def _unique(self, call: ToolCall) -> ToolCall:
        """The call with an id no other call of the session has. Providers' own ids are kept when
        they are unique (some vendors insist on their format); a missing or repeated one is replaced,
        so front ends can key a call by its id."""
        if not call.id or call.id in self._used_call_ids:
            call = replace(call, id=new_id("call"))
        self._used_call_ids.add(call.id)
        return call

    async def _publish(self, event: ev.Event) -> None:
        """A tool's own event (the todo list), remembered by the session when it is state."""
        if isinstance(event, ev.Todo):
            self.state.todos = [item.model_dump() for item in event.todos]
        await self.emit(event)

    async def _run_calls(self, outcome: _StepOutcome) -> str | None:
        # Every call gets its stored part before any runs, so an abort can mark the rest interrupted
        # and the history always pairs each call with an answer.
        records = []
        for call in outcome.calls:
            shown = _loose_input(call.arguments)
            data = {"callId": call.id, "tool": call.name, "arguments": call.arguments, "input": shown}
            part_id = await self.agent.store.add_part(outcome.message_id, "tool", data, status="pending")
            records.append(_Call(call=call, part_id=part_id, data=data, input=shown))
        self._open_calls = records
        stop: list[str] = []
        if all(c.name in READ_ONLY for c in outcome.calls):
            async with anyio.create_task_group() as group:
                for record in records:
                    group.start_soon(self._execute_and_guard, record, stop)
        else:
            for record in records:
                await self._execute_and_guard(record, stop)
                if stop:
                    break
        for record in records:
            if not record.done:
                await self._close_call(record, "interrupted", "not run", f"Not run: {stop[0] if stop else 'the run stopped'}")
        return stop[0] if stop else None

    async def _execute_and_guard(self, record: _Call, stop: list[str]) -> None:
        result, status, arguments = await self._execute(record)
        await self._close_call(record, status, result.summary, result.output, changed=result.changed)
        reasons = []
        if status == "denied":
            reasons.append(self.guards.record_permission(False))
        else:
            reasons.append(self.guards.record_permission(True))
            reasons.append(self.guards.record_call(call_key(record.call.name, arguments, result.output), changed_files=bool(result.changed)))
            if record.call.name in CHANGES_FILES:
                reasons.append(self.guards.record_edit(status == "ok"))
        stop.extend(r for r in reasons if r and not stop)

    async def _execute(self, record: _Call) -> tuple[ToolResult, str, object]:
        """Validate, prepare, ask, apply. Returns the result, its status and the parsed arguments."""
        call = record.call
        tool = self.agent.tools.get(call.name)
        if tool is None:
            await self._start(record, call.name)
            known = ", ".join(sorted(self.agent.tools))
            return _error(f"There is no tool named {call.name!r}. Available tools: {known}."), "error", record.input
        ctx = ToolContext(
            root=self.agent.root,
            workspace=self.agent.workspace,
            session_id=self.session_id,
            call_id=call.id,
            mode=self.options.mode,
            reads=self.state.reads,
            question=lambda text, options: self.frontend.question(
                QuestionRequest(session_id=self.session_id, call_id=call.id, question=text, options=options)
            ),
            publish=self._publish,
        )
        try:
            args = parse_arguments(tool.Input, call.arguments)
        except ToolError as exc:
            await self._start(record, call.name)
            return _error(str(exc)), "error", record.input
        record.input = args.model_dump(exclude_none=True)
        try:
            action = await tool.prepare(args, ctx)
        except BoundaryError as exc:
            await self._start(record, call.name)
            rule = ev.RuleRef(source="boundary", permission=call.name, pattern="*", action="deny")
            await self.emit(ev.Permission(session_id=self.session_id, call_id=call.id, decision="deny", rule=rule))
            return _error(str(exc)), "denied", record.input
        except ToolError as exc:
            await self._start(record, call.name)
            return _error(str(exc)), "error", record.input
        await self._start(record, action.title)
        decision = self.policy.decide(action.permission, action.patterns, changes=action.changes, safe=action.safe_patterns)
        allowed, feedback, rule = await self._permit(record, action, decision)
        await self.emit(
            ev.Permission(
                session_id=self.session_id,
                call_id=call.id,
                decision="allow" if allowed else ("deny" if decision.action == "deny" else "reject"),
                rule=rule,
            )
        )
        await self.agent.store.update_part(record.part_id, data=self._part_data(record, action.title, rule=rule))
        if not allowed:
            text = "The user rejected this action." if decision.action != "deny" else f"Denied by rule {_describe(rule)}."
            if feedback:
                text += f" Their feedback: {feedback}"
            return ToolResult(output=text, summary="rejected" if decision.action != "deny" else "denied", is_error=True), "denied", record.input
        try:
            result = await self._apply(action, ctx)
        except ToolError as exc:
            return _error(str(exc)), "error", record.input
        except OSError as exc:
            return _error(f"{exc.strerror or exc} ({exc.filename or ''})"), "error", record.input
        return result, ("error" if result.is_error else "ok"), record.input

    async def _apply(self, action: Action, ctx: ToolContext) -> ToolResult:
        """Apply an allowed action; a change to files is snapshotted first, so undo can restore it."""
        if not action.files:
            return await action.apply(ctx)
        snapshots, where = self.agent.snapshots, dict(session_id=self.session_id, turn_id=self.turn_id, root=self.agent.root)
        paths = [self.agent.root / f.path for f in action.files]
        try:
            await snapshots.before_change(self.agent.workspace, paths=paths, **where)
        except OSError as exc:
            raise ToolError(f"Could not save the current content for undo, so nothing was changed: {exc}") from None
        try:
            result = await action.apply(ctx)
        finally:
            with anyio.CancelScope(shield=True):  # what apply did must be recorded, even on abort
                await snapshots.after_change(self.agent.workspace, paths=paths, **where)
        return await self._with_findings(result)

    async def _with_findings(self, result: ToolResult) -> ToolResult:
        """The checks' findings on each changed file, added to the result so the model fixes them."""
        if not self.agent.checkers or result.is_error:
            return result
        lines: list[str] = []
        for rel in result.changed:
            try:
                text = (await self.agent.workspace.read_bytes(self.agent.root / rel)).decode("utf-8", errors="replace")
            except OSError:
                continue
            checked = await run_checks(self.agent.checkers, self.agent.root, rel, text)
            lines += [f"{rel}:{finding.for_model()}" for finding in checked.findings]
            lines += [f"({note})" for note in checked.notes]
        if lines:
            result.output += "\n\nChecks found:\n" + "\n".join(lines)
            result.summary += f", {sum(1 for line in lines if not line.startswith('('))} findings"
        return result

    async def _permit(self, record: _Call, action, decision: Decision) -> tuple[bool, str | None, ev.RuleRef]:
        if decision.action == "allow":
            return True, None, decision.rule
        if decision.action == "deny":
            return False, None, decision.rule
        request = PermissionRequest(
            session_id=self.session_id,
            call_id=record.call.id,
            tool=record.call.name,
            title=action.title,
            input=record.input,
            rule=decision.rule if decision.rule.source != "default" else None,
            permission=action.permission,
            always_pattern=action.always_pattern,
            paths=[f.path for f in action.files] or list(action.patterns),
            diff=action.diff,
            proposed=list(action.files),
        )
        reply = await self.frontend.permission(request)
        if reply.outcome == "allow_always":
            return True, reply.feedback, self.policy.remember(action.permission, action.always_pattern, "allow")
        if reply.outcome == "reject_always":
            return False, reply.feedback, self.policy.remember(action.permission, action.always_pattern, "deny")
        answered = ev.RuleRef(
            source="answer", permission=action.permission, pattern=action.always_pattern,
            action="allow" if reply.outcome == "allow_once" else "deny",
        )
        return reply.outcome == "allow_once", reply.feedback, answered

    async def _start(self, record: _Call, title: str) -> None:
        record.started = True
        await self.emit(
            ev.ToolStart(session_id=self.session_id, call_id=record.call.id, tool=record.call.name, input=record.input, title=title)
        )
        await self.agent.store.update_part(record.part_id, data=self._part_data(record, title), status="running")

    async def _close_call(
        self, record: _Call, status: ev.ToolStatus, summary: str, output: str, *, changed: list[str] | None = None
    ) -> None:
        # Shielded: an abort landing here must not leave a call stored as done but never reported.
        with anyio.CancelScope(shield=True):
            record.done = True
            if not record.started:
                await self._start(record, record.call.name)
            data = self._part_data(record, None)
            data.update(output=output, summary=summary, endedAt=time.time())
            await self.agent.store.update_part(record.part_id, data=data, status=status)
            await self.emit(
                ev.ToolEnd(
                    session_id=self.session_id, call_id=record.call.id, tool=record.call.name,
                    status=status, summary=summary, output=output, changed=changed or [],
                )
            )

    def _part_data(self, record: _Call, title: str | None, rule: ev.RuleRef | None = None) -> dict:
        record.data["input"] = record.input
        record.data.setdefault("startedAt", time.time())
        if title:
            record.data["title"] = title
        if rule is not None:
            record.data["rule"] = rule.model_dump(by_alias=True)
        return dict(record.data)


def _error(message: str) -> ToolResult:
    return ToolResult(output=f"Error: {message}", summary=message.split("\n", 1)[0][:120], is_error=True)


def _describe(rule: ev.RuleRef) -> str:
    return f"{rule.permission} {rule.pattern!r} -> {rule.action} ({rule.source})"


def _loose_input(arguments: str) -> dict:
    """The call's arguments for display, whatever the model wrote."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}


def _title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:59] + "…"
