"""The engine's typed event stream: the one contract with every front end.

Each event is a pydantic model whose wire form (``to_wire()``) is a JSON object with camelCase
fields, always carrying ``sessionId`` and ``kind``. The same objects are the NDJSON lines of
``totem run --json`` and the params of the language server's ``totem/event`` notification.
docs/events.md is the catalogue; keep the two in step.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from totem_engine.checks.base import CheckResult

StopReason = Literal["finished", "aborted", "step_limit", "guard", "error"]
ToolStatus = Literal["ok", "error", "denied", "interrupted"]
NoticeLevel = Literal["info", "warning", "error"]


class Event(BaseModel):
    """``parent_call_id`` and ``agent``: set on a sub-agent's events (the ``task`` call that
    started it, and the agent's name); left out of the wire form of the conversation's own."""

    # defer_build: each event's validator and serializer are built when it is first made, so a
    # run pays only for the kinds it emits (a text turn makes a few of the fourteen).
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, defer_build=True)

    session_id: str
    parent_call_id: str | None = None
    agent: str | None = None

    def to_wire(self) -> dict[str, Any]:
        data = self.model_dump(by_alias=True, mode="json")
        if self.parent_call_id is None:
            del data["parentCallId"], data["agent"]
        return data


class TurnStart(Event):
    kind: Literal["turnStart"] = "turnStart"
    turn_id: str
    model: str


class TextDelta(Event):
    kind: Literal["textDelta"] = "textDelta"
    part_id: str
    text: str


class ReasoningDelta(Event):
    kind: Literal["reasoningDelta"] = "reasoningDelta"
    part_id: str
    text: str


class ToolStart(Event):
    kind: Literal["toolStart"] = "toolStart"
    call_id: str
    tool: str
    input: dict[str, Any]
    title: str


class ToolEnd(Event):
    kind: Literal["toolEnd"] = "toolEnd"
    call_id: str
    tool: str
    status: ToolStatus
    summary: str
    output: str
    changed: list[str] = []  # project-relative paths this call changed
    # The checks run on each changed file as the call left it (findings and notes), for front
    # ends to show as diagnostics without running them again.
    checks: dict[str, CheckResult] = {}
    # The user's own words when they rejected the call with feedback (the model gets them in
    # ``output`` too); None otherwise. Front ends show them under the call.
    feedback: str | None = None
    # A bash call's exit code when its command ran to its end (negative: the signal that killed
    # it); None for other tools and a timeout. Front ends mark a non-zero one as a failure.
    exit_code: int | None = None


class RuleRef(BaseModel):
    """The rule that decided a permission: where it came from and what it said."""

    # defer_build: each event's validator and serializer are built when it is first made, so a
    # run pays only for the kinds it emits (a text turn makes a few of the fourteen).
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, defer_build=True)

    # default | user | project | editor | file (config layers) | session (an "always" answer)
    # | answer (a one-time answer) | mode (plan mode) | boundary (outside the project)
    # | protected (.totem/ and .git/ always ask) | stored (an MCP server start's kept answer)
    # | hook (a PreToolUse hook's decision; pattern "PreToolUse")
    source: str
    permission: str
    pattern: str
    action: Literal["allow", "ask", "deny"]


class Permission(Event):
    kind: Literal["permission"] = "permission"
    call_id: str
    decision: Literal["allow", "deny", "reject"]
    rule: RuleRef | None


class Usage(BaseModel):
    # defer_build: each event's validator and serializer are built when it is first made, so a
    # run pays only for the kinds it emits (a text turn makes a few of the fourteen).
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, defer_build=True)

    input_tokens: int = 0
    output_tokens: int = 0


class StepEnd(Event):
    """``finish``: the answer was cut at the output limit (``length``) or stopped by the
    provider's content filter (``refusal``); None for any other end (vocab/chat.finish_kind)."""

    kind: Literal["stepEnd"] = "stepEnd"
    step: int
    model: str
    usage: Usage
    finish: Literal["length", "refusal"] | None = None


class StepDiscarded(Event):
    kind: Literal["stepDiscarded"] = "stepDiscarded"
    step: int
    reason: str


class Notice(Event):
    """``call_id``: the ``mcp-start`` pseudo call whose end this notice also tells (a server
    started or did not start), so a front end that shows that call's end can leave it out."""

    kind: Literal["notice"] = "notice"
    level: NoticeLevel
    message: str
    call_id: str | None = None


class TurnEnd(Event):
    kind: Literal["turnEnd"] = "turnEnd"
    turn_id: str
    stop_reason: StopReason
    text: str
    model: str


class TodoItem(BaseModel):
    """One entry of the agent's visible task list."""

    # defer_build: each event's validator and serializer are built when it is first made, so a
    # run pays only for the kinds it emits (a text turn makes a few of the fourteen).
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, defer_build=True)

    content: str
    status: Literal["pending", "in_progress", "completed"]


class Todo(Event):
    """The agent replaced its task list (the todo tool); ``todos`` is the whole new list."""

    kind: Literal["todo"] = "todo"
    todos: list[TodoItem]


JobState = Literal["running", "exited", "stopped", "killed"]


class Job(Event):
    """A background job (the job tool, jobs.py) started (``running``) or ended: on its own
    (``exited``), by a stop (``stopped``: the agent's ``stop``, ``totem/jobStop``), or killed with
    its session (``killed``: an aborted turn, the project closed). ``exit_code``: the shell's,
    negative for a signal; None while it runs. ``offline``: see below."""

    kind: Literal["job"] = "job"
    job_id: str
    command: str
    state: JobState
    exit_code: int | None
    # True: it runs in the sandbox with no network (``sandbox_network`` off): a server it starts
    # answers the session's later commands on loopback, not the user's browser.
    offline: bool = False
    # The ports of an offline job forwarded to the host's 127.0.0.1, as the user chose when asked
    # to start it (sandbox/forward.py); the event comes again as each one opens. ``forward_taken``:
    # ports it listens on that the host already used, so not forwarded.
    forwarded: list[int] = []
    forward_taken: list[int] = []


class ContextBreakdown(BaseModel):
    """The estimate split by what fills the window (``context.Breakdown``), in tokens that add
    up to it."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    system: int
    history: int
    tool_results: int
    attachments: int
    output: int


class ForgePage(BaseModel):
    """One Forge result: its ``title`` and ``url`` (the address the page tool opens)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, defer_build=True)

    title: str
    url: str


class Forge(Event):
    """Before a turn's first step in a Total.js project: Totem searched Forge with the prompt
    (forge/prefetch.py). ``query`` and ``product`` (``jcomponent``, ``total5``): what was sent;
    ``pages``: the pages put into the request, best first; ``others``: the other results, listed
    to the model for the page tool."""

    kind: Literal["forge"] = "forge"
    query: str
    product: str
    pages: list[ForgePage]
    others: list[ForgePage]


class ContextEstimate(Event):
    """Before a model call: what the request is estimated to occupy of the model's window
    (totem_engine.context; the editor shows it as a ring). ``window`` None: not known."""

    kind: Literal["context"] = "context"
    estimate: int
    window: int | None
    breakdown: ContextBreakdown


class Error(Event):
    """``hint``: what fixes it, for people (providers/hints.py: which provider, which config key
    or ``totem auth set NAME``); None when Totem has nothing to add to the message."""

    kind: Literal["error"] = "error"
    error_class: str
    message: str
    hint: str | None = None
