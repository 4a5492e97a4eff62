"""The tool round: the calls of one step: validate, prepare, ask, snapshot, apply, check, report.

Why one module of this size (over 500 lines): the order of those phases is the safety of a call
(nothing applies before its permission and its snapshot), and it is read in one place.

Each changing call is its own transaction, in the order the model sent them: what one call
changed, the next call sees. A step whose calls are all read-only runs them concurrently.
Every call is stored (part type ``tool``) before any runs, so an abort can mark the rest
interrupted and the history always pairs each call with an answer. ``ToolCalls.run`` returns
the round as a ``Round`` value (round.py).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import anyio

from totem_engine.api import events as ev
from totem_engine.images import FRESH, IMAGE_PART, part_data
from totem_engine.checks.base import CheckResult
from totem_engine.checks.formatter import format_file
from totem_engine.checks.registry import run_checks
from totem_engine.file_changes import FileChange, describe
from totem_engine.api.frontend import PermissionReply, PermissionRequest, QuestionRequest
from totem_engine.command_changes import SandboxRequired
from totem_engine.permissions import Decision, Policy, strictest, with_hook
from totem_engine.vocab.messages import Image
from totem_engine.vocab.tools import ToolCall, arguments_object
from totem_engine.providers.capabilities import output_budget
from totem_engine.tools.base import Action, NothingToDo, Tool, ToolContext, ToolResult, parse_arguments
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.paths import BoundaryError
from totem_engine.tools.freshness import mark_seen
from totem_engine.tools.registry import narrowing
from totem_engine.workspace.files import Workspace
from totem_engine.kept_files import kept
from totem_engine.turn.guards import Guards, Novelty, call_key
from totem_engine.turn.host import RoundHost
from totem_engine.turn.review import reviewed
from totem_engine.turn.round import CallOutcome, Round


@dataclass
class _Call:
    call: ToolCall
    part_id: str
    message_id: str  # the step's message, which holds the call's part and its result's images
    data: dict  # the stored part's data, grown as the call goes on
    started: bool = False
    done: bool = False
    input: dict = field(default_factory=dict)
    outcome: CallOutcome | None = None  # set when it ended
    end_turn: str | None = None  # a rejection that ends the turn (PermissionReply.end_turn)
    hook_reason: str = ""  # why a PreToolUse hook denied or asked about it
    stop: str | None = None  # a hook's ``continue: false``: the turn ends after this call
    # A run_script call's own actions, asked about within it: id(action) -> the action as the
    # user reviewed it (review.py), applied in its place when the call commits it.
    reviewed: dict[int, Action] = field(default_factory=dict)


@dataclass
class _Running:
    """What one round gathers while its calls run (``ToolCalls.run``), as the guards see it."""

    stop: list[str] = field(default_factory=list)  # the first guard's reason, once one fires
    results: list[tuple[str, object, str, bool]] = field(default_factory=list)  # for guards.Novelty
    flagged: list[str] = field(default_factory=list)  # the files the checks found something in


class ToolCalls:
    """The rounds of one attempt of a turn: its permission policy (the project's rules and the
    ``session_rules`` the user granted), its guards, and the calls still open."""

    def __init__(self, turn: RoundHost, session_rules: list[ev.RuleRef]):
        self.turn = turn
        self.agent = turn.agent
        self.session_id = turn.session_id
        self.policy = Policy(rules=list(self.agent.rules), session=list(session_rules), plan_mode=turn.options.mode == "plan")
        self.guards = Guards()
        self.novelty = Novelty()  # no new information (seed 003)
        self.good_rounds = 0  # rounds whose calls all succeeded (evidence that tools work)
        self._open: list[_Call] = []
        # The calls' parts are queued without waiting (store.DeferredWrites); the turn's next
        # step reads them back, and a question to the front end waits for them first.
        self.writes = self.agent.store.deferred(self.session_id)

    async def emit(self, event: ev.Event) -> None:
        await self.turn.emit(event)

    async def run(self, calls: list[ToolCall], message_id: str) -> Round:
        """Run a step's calls, stored in the assistant message ``message_id``; what they came to."""
        records = []
        for call in calls:
            shown = _shown_input(call.arguments)
            data = {"callId": call.id, "tool": call.name, "arguments": call.arguments, "input": shown}
            part_id = await self.writes.add_part(message_id, "tool", data, status="pending")
            records.append(_Call(call=call, part_id=part_id, message_id=message_id, data=data, input=shown))
        self._open = records
        running = _Running()
        stop = running.stop
        if all(self._together(c.name) for c in calls):
            async with anyio.create_task_group() as group:
                for record in records:
                    group.start_soon(self._execute_and_guard, record, running)
        else:
            for record in records:
                await self._execute_and_guard(record, running)
                if stop:
                    break
        for record in records:
            if not record.done:
                await self._close_call(record, "interrupted", "not run", f"Not run: {stop[0] if stop else 'the run stopped'}")
        stale = self.novelty.record_round(running.results)
        if stale and not stop:
            stop.append(stale)
        round_ = Round(
            calls=tuple(record.outcome for record in records if record.outcome is not None),
            flagged=tuple(running.flagged),
            stop=stop[0] if stop else None,
            new_information=self.novelty.last_round_new,
        )
        self.good_rounds += round_.ok
        return round_

    def _is(self, name: str, fact: str) -> bool:
        """What the turn's tool ``name`` declares of itself (``Tool.read_only``, ...); False for
        a name that is no tool."""
        tool = self.turn.tools.get(name)
        return tool is not None and getattr(tool, fact)

    def _together(self, name: str) -> bool:
        """Whether a call of ``name`` may run alongside the step's others: read-only or concurrent."""
        return self._is(name, "read_only") or self._is(name, "concurrent")

    async def close_open(self) -> None:
        """Mark the calls an abort left unfinished as interrupted."""
        for record in self._open:
            if not record.done:
                await self._close_call(record, "interrupted", "interrupted", "Interrupted before it finished.")

    def _context(self, record: _Call, flagged: list[str]) -> ToolContext:
        call = record.call

        async def question(text: str, options: list[str]) -> str | None:
            request = QuestionRequest(session_id=self.session_id, call_id=call.id, question=text, options=options)
            await self.writes.flush()  # an answer may take minutes: the session as it stands is stored first
            return await self.turn.hooks.while_asking(
                f"Totem asks: {text}", "elicitation_dialog", lambda: self.turn.frontend.question(request)
            )

        async def permit(action: Action) -> bool:
            return await self._permit_and_say(record, action)

        async def commit(action: Action) -> ToolResult:
            return await self._apply(record.reviewed.pop(id(action), action), ctx, flagged)

        ctx = ToolContext(
            root=self.agent.root,
            workspace=self.agent.workspace,
            session_id=self.session_id,
            call_id=call.id,
            mode=self.turn.options.mode,
            reads=self.turn.state.reads,
            whole_files=self.turn.policy.whole_files,
            output_budget=output_budget(self.turn.record),
            question=question,
            publish=self._publish,
            decide=lambda action: self._decide(record, action).action,
            permit=permit,
            commit=commit,
            test_command=self.agent.config.test_command,
            agent_mode=self.agent.config.agent_mode,
            commands=self.agent.command_changes,
            runner=self.agent.command_runner,
            command_env_pass=tuple(self.agent.config.command_env_pass),
            extra_roots=self.agent.extra_roots,
        )
        return ctx

    async def _publish(self, event: ev.Event) -> None:
        """A tool's own event (the todo list), remembered by the session when it is state."""
        if isinstance(event, ev.Todo):
            self.turn.state.todos = [item.model_dump() for item in event.todos]
        await self.emit(event)

    async def _execute_and_guard(self, record: _Call, running: _Running) -> None:
        result, status, arguments = await self._execute(record, running.flagged)
        record.data.update(result.part)
        await self._close_call(
            record, status, result.summary, result.output, changed=result.changed, metadata=result.metadata, checks=result.checks,
            images=result.attachments,
        )
        running.results.append((record.call.name, arguments, result.output, bool(result.changed)))
        stop = running.stop
        reasons = []
        reasons.append(record.stop)
        if status == "denied":
            reasons.append(record.end_turn)
            reasons.append(self.guards.record_permission(False))
        else:
            reasons.append(self.guards.record_permission(True))
            reasons.append(self.guards.record_call(call_key(record.call.name, arguments, result.output), changed_files=bool(result.changed)))
            if self._is(record.call.name, "edits_files"):
                reasons.append(self.guards.record_edit(status == "ok"))
        stop.extend(r for r in reasons if r and not stop)

    def _no_such_tool(self, name: str) -> str:
        """What the model is told of a call to a tool it does not have: the tools it has, and,
        for a built-in one its window left out (tools/registry.py ``surface``), why."""
        known = ", ".join(sorted(self.turn.tools))
        record = self.turn.record
        why = narrowing(record.context_window, record.tier) if name in self.turn.agent.tools else None
        if why is None:
            return f"There is no tool named {name!r}. Available tools: {known}."
        return f"There is no tool named {name!r} in this session: {why}. Available tools: {known}."

    async def _execute(self, record: _Call, flagged: list[str]) -> tuple[ToolResult, str, object]:
        """Validate, prepare, ask, apply. Returns the result, its status and the parsed arguments;
        a changed file the checks found something in is added to ``flagged``."""
        call = record.call
        tool = self.turn.tools.get(call.name)
        if tool is None:
            await self._start(record, _plain_title(record))
            return _error(self._no_such_tool(call.name)), "error", record.input
        ctx = self._context(record, flagged)
        try:
            args = parse_arguments(tool.Input, call.arguments)
        except ToolError as exc:
            await self._start(record, _plain_title(record))
            return _error(str(exc)), "error", record.input
        record.input = args.model_dump(exclude_none=True)
        try:
            action = await tool.prepare(args, ctx)
        except NothingToDo as exc:
            await self._start(record, _plain_title(record))
            return ToolResult(output=str(exc), summary="unchanged"), "ok", record.input
        except BoundaryError as exc:
            await self._start(record, _plain_title(record))
            rule = ev.RuleRef(source="boundary", permission=call.name, pattern="*", action="deny")
            await self.emit(ev.Permission(session_id=self.session_id, call_id=call.id, decision="deny", rule=rule))
            return _error(str(exc)), "denied", record.input
        except ToolError as exc:
            await self._start(record, _plain_title(record))
            return _error(str(exc)), "error", record.input
        await self._start(record, action.title)
        decision = await self._with_hooks(record, tool, action, self._decide(record, action))
        allowed, rule, reply = await self._permit(record, action, decision)
        await self._say_permission(record, allowed, decision, rule)
        await self.writes.update_part(record.part_id, data=self._part_data(record, action.title, rule=rule))
        if not allowed:
            record.end_turn = reply.end_turn if reply else None
            return _refusal(rule, reply, record.hook_reason), "denied", record.input
        action.unasked = self._unasked(action, reply)
        if reply is not None:
            action = reviewed(action, reply.accepted)

        async def after(result: ToolResult) -> None:
            await self._after_hooks(record, tool, action, ctx, result)

        try:
            result = await self._apply(action, ctx, flagged, after=after)
        except ToolError as exc:
            return _error(str(exc)), "error", record.input
        except OSError as exc:
            return _error(f"{exc.strerror or exc} ({exc.filename or ''})"), "error", record.input
        if action.files and not result.is_error:
            result.part["files"] = kept(action.files)  # so a reopened session shows its diff
        return result, ("error" if result.is_error else "ok"), record.input

    async def _apply(
        self, action: Action, ctx: ToolContext, flagged: list[str], *, after: Callable[[ToolResult], Awaitable[None]] | None = None,
    ) -> ToolResult:
        """Apply an allowed action; a change to files is snapshotted first, so undo can restore it.
        ``after(result)`` (the PostToolUse hooks) runs before the checks and, for a change to
        files, before the snapshot after it: what a hook's formatter rewrites is the call's too."""
        after = after or _nothing_after
        if action.runs_commands:
            result = await self._run_commands(action, ctx)
            await after(result)
            return await self._with_findings(result, flagged)
        if not action.files:
            result = await action.apply(ctx)
            await after(result)
            return result
        snapshots, where = self.agent.snapshots, dict(session_id=self.session_id, turn_id=self.turn.turn_id, root=self.agent.root)
        paths = [self.agent.root / f.path for f in action.files]
        try:
            await snapshots.before_change(self.agent.workspace, paths=paths, **where)
        except OSError as exc:
            raise ToolError(f"Could not save the current content for undo, so nothing was changed: {exc}") from None
        try:
            result = await action.apply(ctx)
            if not result.is_error:
                await self._format(action, ctx, result)
                await self.turn.policy.mend(action, ctx, result)
                await after(result)
        finally:
            with anyio.CancelScope(shield=True):  # what apply did must be recorded, even on abort
                await snapshots.after_change(self.agent.workspace, paths=paths, **where)
        return await self._with_findings(result, flagged)

    async def _run_commands(self, action: Action, ctx: ToolContext) -> ToolResult:
        """Run an action that runs commands; what they changed (``ctx.taken``, command_changes.py)
        joins the turn's change set, even when the call is cut short, and the result names it."""
        ctx.taken = []
        try:
            result = await action.apply(ctx)
        except SandboxRequired as exc:
            raise ToolError(str(exc)) from None
        finally:
            with anyio.CancelScope(shield=True):
                if ctx.taken:
                    await self.agent.snapshots.record_command_changes(
                        session_id=self.session_id, turn_id=self.turn.turn_id, changes=ctx.taken,
                    )
                    await _show_in_editor(self.agent.workspace, self.agent.root, ctx.taken)
        for line in describe(ctx.taken):
            result.output += f"\n[{line}]"
        notice = self.agent.command_changes.notice(self.session_id) if self.agent.command_changes else None
        if notice:  # said once per session: the sandbox (auto) does not work here
            result.output += f"\n[{notice}]"
            await self.emit(ev.Notice(session_id=self.session_id, level="warning", message=notice))
        result.changed += [c.path for c in ctx.taken if c.path and not c.unrestorable and c.path not in result.changed]
        return result

    async def _format(self, action: Action, ctx: ToolContext, result: ToolResult) -> None:
        """Run the project's formatter on each written file. Its rewrite joins the call's change set
        (the snapshot after it is taken later) and is what the agent has now seen, so the next edit
        is not refused as stale. It runs on the disk, so a file the editor holds unsaved is left."""
        config = self.agent.config
        if not config.format:
            return
        unsaved = set(await self.agent.workspace.unsaved())
        for rel in [f.path for f in action.files if f.new_text is not None]:
            if self.agent.root / rel in unsaved:
                continue
            formatted = await format_file(self.agent.root, rel, config)
            if formatted.changed and formatted.new_bytes is not None:
                mark_seen(ctx, rel, formatted.new_bytes)
            line = formatted.for_model(rel)
            if line:
                result.output += f"\n({line})"

    async def _with_hooks(self, record: _Call, tool: Tool, action: Action, decision: Decision) -> Decision:
        """The rules' decision with the PreToolUse hooks' (permissions.with_hook): they run
        after the rules, before the user is asked; a call the rules deny runs none."""
        if decision.action == "deny":
            return decision
        verdict = await self.turn.hooks.before_tool(tool, record.call.id, record.input)
        record.stop = verdict.stop
        hooked = with_hook(decision, verdict.permission, permission=action.permission)
        if hooked is not decision:
            record.hook_reason = verdict.reason
        return hooked

    async def _after_hooks(self, record: _Call, tool: Tool, action: Action, ctx: ToolContext, result: ToolResult) -> None:
        """The PostToolUse hooks of a call that succeeded: what they say joins the result the
        model reads, and a file they rewrote (a formatter) is what the agent has now seen."""
        if result.is_error:
            return
        verdict = await self.turn.hooks.after_tool(tool, record.call.id, record.input, result)
        record.stop = record.stop or verdict.stop
        said = "\n".join(t for t in (verdict.reason, verdict.context) if t)
        if said:
            result.output += f"\n\n[PostToolUse hook]\n{said}"
        for rel in [f.path for f in action.files if f.new_text is not None] if verdict.outcomes else ():
            with contextlib.suppress(OSError, ToolError):
                mark_seen(ctx, rel, await self.agent.workspace.read_bytes(self.agent.root / rel))

    async def _with_findings(self, result: ToolResult, flagged: list[str]) -> ToolResult:
        """The checks' findings on each changed file, added to the result so the model fixes them."""
        if not self.turn.checkers or result.is_error:
            return result
        lines: list[str] = []
        count = 0
        for rel in result.changed:
            checked = await self._check(rel)
            if checked is None:
                continue
            result.checks[rel] = checked
            found, notes = _lines(rel, checked)
            if found:
                flagged.append(rel)
            lines += found + notes
            count += len(found)
        if lines:
            result.output += "\n\nChecks found:\n" + "\n".join(lines)
            result.summary += f", {count} finding" if count == 1 else f", {count} findings"
        return result

    async def findings(self, rel: str) -> tuple[list[str], list[str]]:
        """The checks' findings on ``rel`` as it is now, as ``path:finding`` lines, and their notes
        (a check that could not run) as ``(note)`` lines; none when it cannot be read."""
        checked = await self._check(rel)
        return _lines(rel, checked) if checked is not None else ([], [])

    async def _check(self, rel: str) -> CheckResult | None:
        """The checks run on ``rel`` as it is now; None when it cannot be read."""
        try:
            text = (await self.agent.workspace.read_bytes(self.agent.root / rel)).decode("utf-8", errors="replace")
        except OSError:
            return None
        return await run_checks(self.turn.checkers, self.agent.root, rel, text)

    def _decide(self, record: _Call, action: Action) -> Decision:
        """The rules of the action's permission, and of those it also needs (``requires``: a
        command run outside the sandbox is asked as ``sandbox-escape`` and still meets the ``bash``
        rules): the strictest decides. Whether it may change the project (plan mode refuses it) is
        what the call's tool says of it (``Tool.may_change``), never the action alone."""
        tool = self.turn.tools.get(record.call.name)
        changes = tool.may_change(action) if tool is not None else True
        decided = [
            self.policy.decide(
                permission, action.patterns, changes=changes, safe=action.safe_patterns, unconfined=action.unconfined,
            )
            for permission in (action.permission, *action.requires)
        ]
        return strictest(decided)

    def _unasked(self, action: Action, reply: PermissionReply | None) -> bool:
        """Whether an allowed command runs with nobody's leave but the read-only default's: no
        question was answered and some part of it was allowed by that default alone (a rule
        allowing ``npm test`` does not allow the ``grep -r`` beside it to read ``.env``)."""
        if not action.runs_commands or reply is not None:
            return False
        return any(
            self.policy.decide(action.permission, [pattern], changes=action.changes, safe=action.safe_patterns).rule.source
            == "default"
            for pattern in action.patterns
        )

    async def _say_permission(self, record: _Call, allowed: bool, decision: Decision, rule: ev.RuleRef) -> None:
        decided = "allow" if allowed else ("deny" if decision.action == "deny" else "reject")
        await self.emit(ev.Permission(session_id=self.session_id, call_id=record.call.id, decision=decided, rule=rule))

    async def _permit_and_say(self, record: _Call, action: Action) -> bool:
        """A call's own action asked about within it (run_script's commands): rules, then the user."""
        decision = self._decide(record, action)
        allowed, rule, reply = await self._permit(record, action, decision)
        await self._say_permission(record, allowed, decision, rule)
        action.unasked = self._unasked(action, reply)
        if allowed and reply is not None:
            record.reviewed[id(action)] = reviewed(action, reply.accepted)
        return allowed

    async def _permit(
        self, record: _Call, action: Action, decision: Decision
    ) -> tuple[bool, ev.RuleRef, PermissionReply | None]:
        """Whether the call may run, the rule that decided, and the user's reply when asked."""
        if decision.action != "ask":
            return decision.action == "allow", decision.rule, None
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
            choices=action.choices,
        )
        await self.writes.flush()  # an answer may take minutes: the session as it stands is stored first
        reply = await self.turn.hooks.while_asking(
            f"Totem needs your permission: {action.title}", "permission_prompt", lambda: self.turn.frontend.permission(request)
        )
        if reply.choice is not None:
            if reply.outcome != "allow_once" or reply.choice not in {c.id for c in action.choices}:
                reply = PermissionReply("reject_once", reason=f"the answer chose {reply.choice!r}, which was not offered")
            else:
                action.chosen = reply.choice
        if reply.outcome == "allow_always":
            return True, self.policy.remember(action.permission, action.always_pattern, "allow"), reply
        if reply.outcome == "reject_always":
            return False, self.policy.remember(action.permission, action.always_pattern, "deny"), reply
        answered = ev.RuleRef(
            source="answer", permission=action.permission, pattern=action.always_pattern,
            action="allow" if reply.outcome == "allow_once" else "deny",
        )
        return reply.outcome == "allow_once", answered, reply

    async def _start(self, record: _Call, title: str) -> None:
        record.started = True
        await self.emit(
            ev.ToolStart(session_id=self.session_id, call_id=record.call.id, tool=record.call.name, input=record.input, title=title)
        )
        await self.writes.update_part(record.part_id, data=self._part_data(record, title), status="running")

    async def _close_call(
        self,
        record: _Call,
        status: ev.ToolStatus,
        summary: str,
        output: str,
        *,
        changed: list[str] | None = None,
        metadata: dict | None = None,
        checks: dict[str, CheckResult] | None = None,
        images: list[Image] | None = None,
    ) -> None:
        # Shielded: an abort landing here must not leave a call stored as done but never reported.
        with anyio.CancelScope(shield=True):
            for image in images or ():
                # Before the call's status: a call stored as done has all of its result.
                await self.writes.add_part(record.message_id, IMAGE_PART, part_data(image, call_id=record.call.id), status=FRESH)
            record.done = True
            record.outcome = CallOutcome(
                call=record.call, status=status, output=output,
                metadata=MappingProxyType(dict(metadata or {})), changed=tuple(changed or ()),
            )
            if not record.started:
                await self._start(record, _plain_title(record))
            # A bash call's exit code (negative: the signal that killed it), so a front end marks a
            # failed command, live and in a stored session.
            exit_code = (metadata or {}).get("exit_code") if record.call.name == "bash" else None
            data = self._part_data(record, None)
            data.update(output=output, summary=summary, endedAt=time.time())
            if exit_code is not None:
                data["exitCode"] = exit_code
            await self.writes.update_part(record.part_id, data=data, status=status)
            await self.emit(
                ev.ToolEnd(
                    session_id=self.session_id, call_id=record.call.id, tool=record.call.name,
                    status=status, summary=summary, output=output, changed=changed or [], checks=checks or {},
                    feedback=record.data.get("feedback"),
                    exit_code=exit_code,
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



async def _show_in_editor(workspace: Workspace, root: Path, changes: list[FileChange]) -> None:
    """A file the command changed on disk that the editor shows as it was before (an open
    buffer without unsaved changes) shows the new content, so the agent and the user read what
    the disk holds. Best effort: a buffer the editor will not change stays as it is."""
    for change in changes:
        if change.unrestorable or change.before is None or change.after is None:
            continue
        path = root / change.path
        with contextlib.suppress(ToolError, OSError, ValueError):
            shown = await workspace.read_bytes(path)
            if shown == change.before:
                await workspace.write_bytes(path, change.after)


def _lines(rel: str, checked: CheckResult) -> tuple[list[str], list[str]]:
    """Findings as ``path:finding`` lines for the model, and notes as ``(note)`` lines."""
    return [f"{rel}:{finding.for_model()}" for finding in checked.findings], [f"({note})" for note in checked.notes]


async def _nothing_after(result: ToolResult) -> None:
    return None


def _error(message: str) -> ToolResult:
    return ToolResult(output=f"Error: {message}", summary=message.split("\n", 1)[0][:120], is_error=True)


def _plain_title(record: _Call) -> str:
    """A call's title when it could not be prepared: the tool and what it was about."""
    subject = next((record.input[k] for k in ("path", "pattern", "command", "url", "name") if isinstance(record.input.get(k), str)), "")
    return f"{record.call.name} {subject}".strip()


def _refusal(rule: ev.RuleRef, reply: PermissionReply | None, hook_reason: str = "") -> ToolResult:
    """What the model is told when a call is not run: whose decision it was, and why
    (``hook_reason``: what the PreToolUse hook that denied it said)."""
    if reply is None and rule.source == "hook":
        return ToolResult(output=f"Blocked by a PreToolUse hook: {hook_reason or 'no reason given'}", summary="blocked by a hook", is_error=True)
    if reply is None and rule.source == "mode":
        return ToolResult(
            output="Plan mode: nothing may be changed. Describe the change in your plan instead.",
            summary="denied (plan mode)",
            is_error=True,
        )
    if reply is None:
        text = f"Denied by rule {rule.permission} {rule.pattern!r} -> {rule.action} ({rule.source})."
        return ToolResult(output=text, summary="denied", is_error=True)
    if reply.reason:
        return ToolResult(output=f"Not run: {reply.reason}.", summary="not allowed", is_error=True)
    text = "The user rejected this action." + (f" Their feedback: {reply.feedback}" if reply.feedback else "")
    # The feedback kept beside the output in the stored part, so a reopened session shows it.
    kept = {"feedback": reply.feedback} if reply.feedback else {}
    return ToolResult(output=text, summary="rejected", is_error=True, part=kept)


def _shown_input(arguments: str) -> dict:
    """The call's arguments for display, whatever the model wrote (``_raw`` when not an object)."""
    value = arguments_object(arguments)
    return value if value is not None else {"_raw": arguments}
