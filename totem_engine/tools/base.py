"""What a tool is: one declared input, and two phases (prepare, then apply).

A tool declares its input once, as a pydantic model (``ToolInput``). The same model validates the
model's arguments and gives the JSON schema the model sees (``input_schema``). Every tool runs in
two phases: ``prepare`` works out what the call will do (resolves paths, reads, matches, builds
the new text and the diff) without changing anything and returns an ``Action``; the loop asks
permission with that action; only then ``Action.apply`` changes the world. Read-only tools do
their reading in ``apply`` too, so a denied read reads nothing.
"""

from __future__ import annotations

import json
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, model_validator

from totem_engine.checks.base import CheckResult
from totem_engine.prompt_files import tool_description
from totem_engine.vocab.accounts import cut_lines, plain_account, plain_cut_note
from totem_engine.vocab.messages import Image
from totem_engine.vocab.tools import ArgumentsError, ToolError, decode_arguments

if TYPE_CHECKING:
    from totem_engine.command_changes import CommandChanges
    from totem_engine.file_changes import FileChange
    from totem_engine.tools.command_runner import CommandRunner
    from totem_engine.workspace.files import Workspace


class NothingToDo(ToolError):
    """The call would change nothing (a whole file sent back as it is): reported as done, with
    the message, not as a failure; a small model echoes the files it was shown."""


@dataclass(frozen=True)
class Bounded:
    """Field metadata: an optional number clamped into range instead of refused.

    Zero or negative means ``default``; above ``maximum`` means ``maximum``. The call goes on and
    the result carries a note saying what was changed.
    """

    default: float
    maximum: float


class ToolInput(BaseModel):
    """Base of every tool's input model. Unknown arguments are ignored, not refused."""

    model_config = ConfigDict(extra="ignore")

    _notes: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _clamp_bounded(self) -> "ToolInput":
        for name, info in type(self).model_fields.items():
            bound = next((m for m in info.metadata if isinstance(m, Bounded)), None)
            value = getattr(self, name)
            if bound is None or value is None:
                continue
            kind = int if isinstance(value, int) else float
            if value <= 0:
                object.__setattr__(self, name, kind(bound.default))
                self._notes.append(f"{name}={value} is not positive; used the default {kind(bound.default)}.")
            elif value > bound.maximum:
                object.__setattr__(self, name, kind(bound.maximum))
                self._notes.append(f"{name}={value} is above the maximum; used {kind(bound.maximum)}.")
        return self

    @property
    def notes(self) -> list[str]:
        return self._notes


def input_schema(model: type[ToolInput]) -> dict[str, Any]:
    """The JSON schema the model sees: flat, self-contained, no titles, optional fields not nullable.

    Small models stumble on ``$ref`` and on ``anyOf: [{...}, {type: null}]``, so references are
    inlined and an optional argument is simply one that is not in ``required``. Built once per
    model class (pydantic's schema generation cost about 7 ms a step for the fifteen tools,
    bench/steps.py); the caller must not change the dict it gets.
    """
    cached = _SCHEMAS.get(model)
    if cached is None:
        schema = model.model_json_schema()
        cached = _SCHEMAS[model] = _clean(schema, schema.get("$defs", {}))
    return cached


_SCHEMAS: weakref.WeakKeyDictionary[type[ToolInput], dict[str, Any]] = weakref.WeakKeyDictionary()


def _clean(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_clean(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _clean(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    out = {k: _clean(v, defs) for k, v in node.items() if k not in ("title", "default", "$defs")}
    branches = out.pop("anyOf", None)
    if branches is not None:
        non_null = [b for b in branches if b.get("type") != "null"]
        if len(non_null) == 1:
            out = {**non_null[0], **out}
        else:
            out["anyOf"] = non_null
    if "properties" in out:
        # Property names are data, not schema keywords: a field may be called "title".
        out["properties"] = {name: _clean(prop, defs) for name, prop in node["properties"].items()}
    return out


def parse_arguments(model: type[ToolInput], raw: str) -> ToolInput:
    """Validate the model's raw JSON arguments; a ToolError says what was expected."""
    try:
        data = decode_arguments(raw)
    except ArgumentsError as exc:
        if exc.found is not None:
            raise ToolError(f"The arguments must be a JSON object, got {exc.found}.") from None
        raise ToolError(f"The arguments are not valid JSON ({exc}). "
                        f"Expected an object matching: {json.dumps(input_schema(model))}") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'input'}: {err['msg']}" for err in exc.errors()
        )
        raise ToolError(f"Invalid arguments: {problems}. Expected: {json.dumps(input_schema(model))}") from None


async def _nobody_to_ask(question: str, options: list[str]) -> str | None:
    return None


async def _nowhere(event: Any) -> None:
    return None


def _undecided(action: "Action") -> str:
    return "ask"


async def _not_permitted(action: "Action") -> bool:
    return False


async def _uncommitted(action: "Action") -> "ToolResult":
    raise ToolError("This call cannot change the project on its own.")


@dataclass
class ToolContext:
    """What a call needs from its run.

    ``question(text, options)`` asks the user through the front end (None: nobody could be
    asked); ``publish(event)`` sends an engine event (e.g. the todo list) to the front end;
    ``output_budget`` is the most characters one result may hold (a share of the model's window);
    ``whole_files``: the model writes whole files (a small model, tools/write.py checks that it did);
    For a tool that runs other tools' actions itself (run_script's API): ``decide(action)`` says
    what the run's permission rules say of one without asking ("allow", "ask" or "deny");
    ``permit(action)`` asks as the turn asks for a call (rules, then the user; a ``permission``
    event of this call each time) and says whether it may run; ``commit(action)`` applies a
    permitted one as the turn applies a call (snapshot for undo, formatter, checks).
    ``test_command``: the config's (None: find it, verify.py; "": none); ``agent_mode``: the
    config's (a script may import the project's own modules).
    ``commands``: where commands run and what they changed (command_changes.py; None: run as
    they are, nothing kept); ``taken``: a command tool adds what its commands changed here, and
    the round records it for undo. ``runner``: where ``bash`` runs its command when not in
    Totem (a front end's, command_runner.py: an ACP client's terminal; None: in Totem).
    ``command_env_pass``: the credential variables a command run unasked keeps (config
    ``command_env_pass``, command_env.py). ``extra_roots``: the session's folders beside
    ``root`` that file tools reach too (workspace/paths.py; an ACP client's additionalDirectories).
    """

    root: Path
    workspace: "Workspace"
    session_id: str
    call_id: str
    mode: str = "build"
    reads: "ReadLedger | None" = None
    whole_files: bool = False
    output_budget: int = 50_000
    question: Callable[[str, list[str]], Awaitable[str | None]] = _nobody_to_ask
    publish: Callable[[Any], Awaitable[None]] = _nowhere
    decide: Callable[["Action"], str] = _undecided
    permit: Callable[["Action"], Awaitable[bool]] = _not_permitted
    commit: Callable[["Action"], Awaitable["ToolResult"]] = _uncommitted
    test_command: str | None = None
    agent_mode: bool = False
    commands: "CommandChanges | None" = None
    taken: "list[FileChange]" = field(default_factory=list)
    runner: "CommandRunner | None" = None
    command_env_pass: tuple[str, ...] = ()
    extra_roots: tuple[Path, ...] = ()


@dataclass
class ReadLedger:
    """Per session: which files the agent has seen, and the instruction files already attached."""

    seen: dict[str, str] = field(default_factory=dict)  # relative path -> content hash seen
    instructions: set[str] = field(default_factory=set)
    # The files shown with this turn's request (a small model's, turn/small.py), path -> hash:
    # a read of one that has not changed is pointed back at it (read.py). Emptied at each turn.
    shown: dict[str, str] = field(default_factory=dict)


@dataclass
class ToolResult:
    """What comes back from a call: ``output`` for the model, ``summary`` (one line) for people,
    ``attachments``: images that are part of the result (built with ``totem_engine.images``;
    stored as image parts of the call, sent once to a model that sees images, captioned after)."""

    output: str
    summary: str
    is_error: bool = False
    changed: list[str] = field(default_factory=list)  # project-relative paths this call changed
    metadata: dict[str, Any] = field(default_factory=dict)
    # The checks run on each changed file as the call left it (set by the tool round).
    checks: dict[str, CheckResult] = field(default_factory=dict)
    # Kept in the call's stored part beside its output (a sub-agent's ``thread``), never sent.
    part: dict[str, Any] = field(default_factory=dict)
    attachments: list[Image] = field(default_factory=list)


@dataclass(frozen=True)
class PermissionChoice:
    """An answer offered beside the four (allow or reject, once or always): allow this call
    once, with something more (``id``, what the tool acts on; ``label``, what the user reads):
    a job's ports forwarded to this machine's loopback (tools/job.py)."""

    id: str
    label: str


@dataclass
class ProposedFile:
    """One file of a prepared change: its path, whole new text (None: delete) and old text."""

    path: str
    new_text: str | None
    old_text: str | None


@dataclass
class Action(ABC):
    """A prepared call, ready for permission.

    ``permission`` names the rule family (read, edit, bash, ...); ``patterns`` are what rules
    match (project-relative paths, or the command); ``always_pattern`` is what an "allow always"
    answer stores; ``diff`` and ``files`` show a change before it is made; ``changes`` says the
    call may change the project (plan mode denies it); ``safe_patterns`` (commands only) are the
    patterns that need no asking by default: the read-only parts of a compound command that stay in
    the project and read no secret file.
    """

    title: str
    permission: str
    patterns: list[str]
    always_pattern: str
    diff: str | None = None
    files: list[ProposedFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    changes: bool = False
    safe_patterns: frozenset[str] | None = None
    # It runs commands (bash, job, terminal): what they change is taken in (ToolContext.taken).
    runs_commands: bool = False
    # Other permissions whose rules it must also pass (a command outside the sandbox: "bash").
    requires: tuple[str, ...] = ()
    # A command that may change the project and runs without the sandbox: nothing keeps it out of
    # the protected folders (.totem, .git), so it asks whatever the rules and answers say.
    unconfined: bool = False
    # Set by the tool round: only the read-only default let it run, the user allowed nothing of
    # it, so its commands see no secret file (in the sandbox) and no credential variable.
    unasked: bool = False
    # More allows the question offers (``PermissionChoice``); ``chosen``, set by the tool round:
    # the id of the one the user took (None: a plain allow, or not asked).
    choices: tuple[PermissionChoice, ...] = ()
    chosen: str | None = None

    @abstractmethod
    async def apply(self, ctx: ToolContext) -> ToolResult: ...


class Tool(ABC):
    """A tool: a name, an input model, a description file under prompts/tools/, and ``prepare``.

    What the turn and compaction need to know of a tool is declared here, on the tool, so adding
    a tool never means editing them: ``read_only`` (calls of a step that are all read-only run
    together), ``concurrent`` (its calls run together with each other and read-only ones),
    ``can_change`` and ``may_change`` (whether its calls, and this call, may change the project:
    plan mode refuses those), ``edits_files`` (editing project files is its job: the failed-edit
    guard counts it, a small model's file blocks are its calls), ``kept_on_compaction`` (its results are never replaced by an account),
    ``surface`` (the smallest tool set it belongs to: ``minimal`` for windows under 8K tokens,
    ``core`` for a small model, ``full``), ``account`` (one line saying what a call did) and
    ``cut`` (a result cut to fit the window), ``hook_name`` (its name to a hook, hooks/).
    """

    name: ClassVar[str]
    Input: ClassVar[type[ToolInput]]
    read_only: ClassVar[bool] = False
    edits_files: ClassVar[bool] = False
    kept_on_compaction: ClassVar[bool] = False
    surface: ClassVar[Literal["minimal", "core", "full"]] = "full"
    concurrent: ClassVar[bool] = False  # its calls of a step run together (task), like read-only ones
    # The name Claude Code's hooks know its counterpart by ("Bash"), sent to a hook as
    # ``tool_name`` so the scripts people have work unchanged; None: the tool's own name.
    hook_name: ClassVar[str | None] = None

    @property
    def can_change(self) -> bool:
        """Whether any call of it may change the project (a file, or what a command, a script, an
        agent or an outside server does). A tool that does not say is taken to change: only the
        read-only ones, and those that declare ``can_change = False`` (their effect stays in the
        session: the todo list, a question), do not. An MCP tool says it per instance."""
        return not self.read_only

    def may_change(self, action: Action) -> bool:
        """Whether this call (``action``, as ``prepare`` made it) may change the project: plan mode
        refuses it, and a command's default permission reads it. ``can_change`` unless the tool
        can tell its calls apart (a read-only command, a script that staged nothing)."""
        return self.can_change

    @property
    def description(self) -> str:
        return tool_description(self.name)

    def parameters(self) -> dict[str, Any]:
        """The JSON schema of its input that the model sees: its ``Input``'s (``input_schema``);
        an MCP server's tool gives the server's own."""
        return input_schema(self.Input)

    @abstractmethod
    async def prepare(self, args: ToolInput, ctx: ToolContext) -> Action: ...

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        """One line saying what a call did, for compaction: it stands in for a compacted result
        and lists the call in a checkpoint summary. ``args``: the call's arguments (``{}`` when
        they were not an object); ``output``: the result the model saw; ``summary``: the stored
        ``ToolResult.summary`` ("" when none); ``is_error``: the call failed or was not allowed
        (``Message.is_error``). By default ``plain_account``; tools that can say more override it."""
        return plain_account(self.name, args, output, summary)

    def cut(self, args: dict[str, Any], output: str, chars: int) -> str:
        """``output`` cut to about ``chars`` characters to fit the model's window (whole lines from
        the start), followed by ``cut_note``; ``output`` itself when it is short enough."""
        return cut_lines(output, chars, lambda kept: self.cut_note(args, kept, len(output)))

    def cut_note(self, args: dict[str, Any], kept: str, total_chars: int) -> str:
        """What a result cut to ``kept`` (of ``total_chars`` characters) says about getting the rest."""
        return plain_cut_note(kept, total_chars)
