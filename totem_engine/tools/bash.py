"""bash: run a shell command in the project root, and the commands that only read.

Why one module of this size (over 500 lines): what a command may do unasked (the read-only
commands, the paths a word names, the credential variables it sees) and how it runs are read
together by every check that asks about a command; jobs and terminals reuse both halves.

The command runs as ``/bin/bash -c`` (``/bin/sh`` where bash is missing) in a process group of
its own, so a timeout or an abort can end it and everything it started. The call returns when the
shell exits, even if a background child still holds the output pipe open.
"""

from __future__ import annotations

import codecs
import os
import re
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import anyio
from anyio.abc import ByteReceiveStream, Process
from pydantic import Field

from totem_engine.permissions import is_protected
from totem_engine.command_changes import CommandScope, SandboxRequired
from totem_engine.command_env import command_environ, left_out
from totem_engine.tools.command_runner import Outcome
from totem_engine.workspace.files import unsaved_note
from totem_engine.tools.base import Action, Bounded, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.vocab.accounts import first_line, short, whole_lines_head, with_note
from totem_engine.vocab.tools import ToolError
from totem_engine.tools.shell_confinement import confined_commands
from totem_engine.workspace.shell_words import SimpleCommand, parse

DEFAULT_TIMEOUT = 120  # seconds
MAX_TIMEOUT = 600
MAX_OUTPUT = 30_000  # characters, before the context's own budget
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
DRAIN_SECONDS = 0.25  # after the shell exits: how long to collect output still in the pipe

# Commands that only read, by their first word (or first two, for git). `is_read_only` adds the
# options that would make some of them write or run other programs.
# Not here on purpose: git (a repository's own config can run programs: core.fsmonitor,
# diff.external, textconv drivers), rg (--pre and --hostname-bin run programs), date (-s sets
# the clock), file (-C writes). They ask, and "always" answers or rules can allow them.
READ_ONLY_COMMANDS = frozenset({
    "ls", "cat", "head", "tail", "wc", "pwd", "echo", "printf", "which", "type", "stat",
    "du", "df", "tree", "find", "grep", "egrep", "fgrep", "cd", "basename", "dirname",
    "realpath", "readlink", "whoami", "uname", "diff", "cmp", "cut", "nl", "true", "false",
})

# Any of these runs another command inside the line, wherever it appears ($((… $(cmd) …)) too).
_SUBSTITUTIONS = ("$(", "`", "<(", ">(")

# Options that write files or run other programs: with one of them the command is not read-only.
_FORBIDDEN_OPTIONS: dict[str, tuple[str, ...]] = {
    "find": ("-exec", "-ok", "-delete", "-fprint", "-fls"),  # prefixes: -execdir, -okdir, -fprintf...
    "rg": ("--pre",),
    "tree": ("-o",),
    "git diff": ("--output", "--ext-diff"),
    "git log": ("--output", "--ext-diff"),
    "git show": ("--output", "--ext-diff"),
}

# `git branch` only lists when every argument is one of these; a name creates, -d deletes...
_BRANCH_LISTING = frozenset({
    "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "-l", "--list", "--show-current",
    "--no-color", "--color",
})

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


OUTSIDE = " (outside the sandbox)"  # what an action's title adds when it leaves the sandbox
# The ``outside_sandbox`` parameter of bash, and of job and terminal ``start`` (``asked_as``).
OUTSIDE_SANDBOX = "true: outside the sandbox (asked), after it failed there."


class BashInput(ToolInput):
    command: str = Field(description="The command to run with bash, in the project root.")
    timeout: Annotated[int | None, Bounded(default=DEFAULT_TIMEOUT, maximum=MAX_TIMEOUT)] = Field(
        None, description=f"Seconds before the command is killed (default {DEFAULT_TIMEOUT}, at most {MAX_TIMEOUT})."
    )
    description: str | None = Field(None, description="What the command does, in five to ten words, for the user.")
    # Short: every model pays for it in every request, a 4K-window one too.
    outside_sandbox: bool | None = Field(None, description=OUTSIDE_SANDBOX)


# --- which commands only read ----------------------------------------------------------------


def is_read_only(command: str) -> bool:
    """True when every simple command of ``command`` is a built-in read-only one and none writes a file.

    ``cat a | grep b`` -> True; ``ls > out.txt``, ``git push``, ``echo $(rm x)`` -> False.
    """
    if any(marker in command for marker in _SUBSTITUTIONS):
        return False
    parts = parse(command)
    return bool(parts) and all(_reads_only(part) for part in parts)


def _reads_only(part: SimpleCommand) -> bool:
    if part.writes or _ASSIGNMENT.match(part.words[0]):  # "PATH=. ls" may run another "ls"
        return False
    name, args = _command_name(part.words)
    if name not in READ_ONLY_COMMANDS:
        return False
    if name == "git branch":
        return all(arg in _BRANCH_LISTING for arg in args)
    forbidden = _FORBIDDEN_OPTIONS.get(name, ())
    return not any(arg.startswith(option) for arg in args for option in forbidden)


def _needs_no_asking(
    parts: list[SimpleCommand], command: str, root: Path, secrets_hidden: bool, env_pass: tuple[str, ...],
    extra_roots: tuple[Path, ...],
) -> frozenset[str]:
    """The parts that are read-only and proven to touch only paths inside the project
    (shell_confinement); a substitution anywhere runs a command, so then none."""
    if any(marker in command for marker in _SUBSTITUTIONS):
        return frozenset()
    read_only = {index for index, part in enumerate(parts) if _reads_only(part)}
    return confined_commands(
        parts, command, root, os.environ, read_only, secrets_hidden=secrets_hidden, passed=frozenset(env_pass),
        extra_roots=extra_roots,
    )


def _command_name(words: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """``("git", "--no-pager", "log", "-3")`` -> ``("git log", ("-3",))``; other commands by their first word."""
    if words[0] != "git":
        return words[0], words[1:]
    rest = list(words[1:])
    while rest[:1] == ["--no-pager"] or rest[:1] == ["-C"]:  # the only global options that keep git reading
        del rest[: 2 if rest[0] == "-C" else 1]
    if not rest:
        return "git", ()
    return f"git {rest[0]}", tuple(rest[1:])


# --- what permission rules match ------------------------------------------------------------


def command_patterns(parts: list[SimpleCommand]) -> list[str]:
    """Each simple command; one led by variable assignments also without them, so ``X=1 rm a`` meets ``rm`` rules."""
    patterns: list[str] = []
    for part in parts:
        patterns.append(part.text)
        bare = _without_assignments(part.words)
        if bare and len(bare) < len(part.words):
            patterns.append(" ".join(bare))
    return patterns


def always_pattern(parts: list[SimpleCommand]) -> str:
    """What "allow always" stores: the command name, with its subcommand when it has one.

    ``npm test --watch`` -> ``npm test``; ``git status`` -> ``git status``; ``ls -la src`` -> ``ls``;
    ``python app.py`` -> ``python``. Of a compound command, the first part that is not read-only
    (``cd web && npm test`` -> ``npm test``): that is the part that needed asking.
    """
    chosen = next((p for p in parts if not _reads_only(p)), parts[0])
    words = _without_assignments(chosen.words) or chosen.words
    if len(words) > 1 and _is_subcommand(words[1]):
        return f"{words[0]} {words[1]}"
    return words[0]


def _without_assignments(words: tuple[str, ...]) -> tuple[str, ...]:
    index = 0
    while index < len(words) and _ASSIGNMENT.match(words[index]):
        index += 1
    return words[index:]


def _is_subcommand(word: str) -> bool:
    """A word like ``test`` or ``run``: not an option, not a path, not a file name."""
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9_:-]*", word))


async def sandboxed(ctx: ToolContext) -> bool | None:
    """Whether the session's commands run in the sandbox (which keeps the protected folders
    read-only, sandbox/bwrap.py); None when it is required and does not work here: then no
    command runs at all."""
    if ctx.commands is None:
        return False
    try:
        return await ctx.commands.sandboxed(ctx.session_id)
    except SandboxRequired:
        return None


# What separates the paths of a command line, for names_protected: blanks, quotes, redirections,
# operators, an assignment's = and a brace's ,.
_WORD_BREAKS = re.compile(r"[\s'\"=<>|;&(){},`]+")


def outside_sandbox(permission: dict[str, Any]) -> dict[str, Any]:
    """``command_permission`` of a command run outside the sandbox: asked as ``sandbox-escape``
    (default ask, never the read-only exemption), the ``bash`` rules still applying."""
    return {**permission, "permission": "sandbox-escape", "requires": ("bash",), "changes": True, "safe_patterns": None}


async def asked_as(ctx: ToolContext, command: str, outside: bool | None) -> tuple[dict[str, Any], bool]:
    """How an ``Action`` running ``command`` (bash, a job's or a terminal's ``start``) is asked
    (``command_permission``, or ``outside_sandbox`` of it when it leaves the sandbox), and whether
    it leaves it (``outside``: the model's ``outside_sandbox``, when there is a sandbox to leave).
    A command that may change the project, runs without the sandbox and names a protected
    folder (``.totem``, ``.git``) is ``unconfined``: it is asked whatever the rules say
    (permissions.py). Without the sandbox that is the only protection: a program that makes the
    path itself is not seen (docs/config.md ``sandbox``)."""
    boxed = await sandboxed(ctx)
    escape = bool(outside) and boxed is True
    permission = command_permission(
        command, ctx.root, secrets_hidden=boxed is True and not escape, env_pass=ctx.command_env_pass,
        extra_roots=ctx.extra_roots,
    )
    if escape:
        permission = outside_sandbox(permission)
    unconfined = permission["changes"] and (escape or boxed is False) and names_protected(command)
    return {**permission, "unconfined": unconfined}, escape


def names_protected(command: str) -> bool:
    """Whether a word of ``command`` is a path in or at a protected folder (``.git/hooks/x``,
    ``./.totem``, ``>.git/config``); ``git commit`` and ``.gitignore`` are not."""
    return any(is_protected(word) for word in _WORD_BREAKS.split(command) if word)


def command_permission(
    command: str, root: Path, *, secrets_hidden: bool = False, env_pass: tuple[str, ...] = (),
    extra_roots: tuple[Path, ...] = (),
) -> dict[str, Any]:
    """What an ``Action`` running ``command`` is asked about: the ``bash`` rules, matched against
    each simple command of it; what "always" stores; whether it may change the project; the parts
    that need no asking (``secrets_hidden``: it runs in the sandbox, which shows a command run
    unasked no secret file, so a folder may be searched; ``env_pass``: the credential variables a
    command run unasked keeps, config ``command_env_pass``; ``extra_roots``: the session's
    folders beside ``root``, inside the project as much as it). The ``job`` tool's ``start`` is
    asked the same way. A ToolError when the command is empty."""
    parts = parse(command)
    if not parts:
        raise ToolError("The command is empty: give a shell command to run.")
    return {
        "permission": "bash",
        "patterns": command_patterns(parts),
        "always_pattern": always_pattern(parts),
        "changes": not is_read_only(command),
        "safe_patterns": _needs_no_asking(parts, command, root, secrets_hidden, env_pass, extra_roots),
    }


# --- running ----------------------------------------------------------------------------------


class HeadTail:
    """Keeps the first and the last ``limit // 2`` characters of a stream, and counts what falls between.

    Memory stays bounded however much a command prints.
    """

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = ""
        self.tail = ""
        self.dropped_chars = 0
        self.dropped_lines = 0

    def add(self, text: str) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += text[:room]
            text = text[room:]
        self.tail += text
        if len(self.tail) > 2 * self.half:  # trim now and then, not on every chunk
            self._trim()

    def _trim(self) -> None:
        cut = len(self.tail) - self.half
        if cut > 0:
            self.dropped_chars += cut
            self.dropped_lines += self.tail.count("\n", 0, cut)
            self.tail = self.tail[cut:]

    def text(self) -> str:
        self._trim()
        if not self.dropped_chars:
            return self.head + self.tail
        note = f"\n[... {self.dropped_lines} lines ({self.dropped_chars} characters) left out ...]\n"
        return self.head + note + self.tail


def shell() -> str:
    return "/bin/bash" if Path("/bin/bash").exists() else "/bin/sh"


Wrap = Callable[[list[str]], list[str]]


def as_is(argv: list[str]) -> list[str]:
    return argv


async def spawn(command: str, cwd: Path, wrap: Wrap = as_is, env: dict[str, str] | None = None) -> Process:
    """``command`` started under the shell in ``cwd``, in a process group of its own (its pid is
    the group's id), no input, stdout and stderr merged into one pipe. ``wrap``: how the shell's
    argv is launched (a command scope's ``argv``: the sandbox); ``env``: its environment
    (command_env.py; None: Totem's)."""
    try:
        # Shielded: a cancel landing mid-spawn would leave a started group nobody kills.
        with anyio.CancelScope(shield=True):
            return await anyio.open_process(
                wrap([shell(), "-c", command]), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True, env=env,
            )
    except OSError as exc:
        raise ToolError(f"Could not start the shell: {exc}") from None


async def run_command(
    command: str, cwd: Path, timeout: float, limit: int, wrap: Wrap = as_is, env: dict[str, str] | None = None,
) -> Outcome:
    """Run ``command`` and collect its merged output; on timeout or cancellation kill its whole group."""
    process = await spawn(command, cwd, wrap, env)
    collected = HeadTail(limit)
    finished_reading = anyio.Event()
    timed_out = False
    try:
        async with anyio.create_task_group() as group:
            assert process.stdout is not None
            group.start_soon(read_into, process.stdout, collected.add, finished_reading)
            with anyio.move_on_after(timeout) as deadline:
                await process.wait()
            if deadline.cancelled_caught:
                timed_out = True
                await kill_group(process)
            # A background child may hold the pipe open for ever: take what is there, don't wait for EOF.
            with anyio.move_on_after(DRAIN_SECONDS):
                await finished_reading.wait()
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):  # an abort cancels us: the group must still die
            if process.returncode is None:
                await kill_group(process)
            await process.aclose()
    return Outcome(collected.text(), None if timed_out else process.returncode, timed_out)


async def read_into(stream: ByteReceiveStream, add: Callable[[str], None], done: anyio.Event) -> None:
    """The stream decoded as UTF-8 (bad bytes replaced) into ``add``, to its end; then ``done``."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    async for chunk in stream:
        add(decoder.decode(chunk))
    add(decoder.decode(b"", final=True))
    done.set()


async def kill_group(process: Process) -> None:
    """SIGTERM the process group (the shell leads it); SIGKILL whatever is left after a grace period."""
    _signal_group(process.pid, signal.SIGTERM)
    with anyio.move_on_after(KILL_GRACE):
        await process.wait()
        while _group_alive(process.pid):
            await anyio.sleep(0.05)
    if _group_alive(process.pid):
        _signal_group(process.pid, signal.SIGKILL)
    await process.wait()


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


# --- the tool ---------------------------------------------------------------------------------


@dataclass
class BashAction(Action):
    command: str = ""
    timeout: int = DEFAULT_TIMEOUT
    escape: bool = False  # outside the sandbox, as the user allowed

    async def apply(self, ctx: ToolContext) -> ToolResult:
        if ctx.commands is None:
            return await self.run_in(ctx, None)
        scope = await ctx.commands.scope(
            ctx.session_id, command=self.command, may_change=self.changes, escape=self.escape, unasked=self.unasked,
        )
        return await self.run_in(ctx, scope)

    async def run_in(self, ctx: ToolContext, scope: CommandScope | None) -> ToolResult:
        """The command run in ``scope`` (None: as it is), closed after it; what it took in joins
        ``ctx.taken``. A script's command comes here with a scope of its own (codemode/overlaid.py)."""
        limit = min(ctx.output_budget, MAX_OUTPUT)
        # Before it runs: what the command cannot see (after it, a file it changed on disk differs
        # from the editor's buffer until the round shows it there).
        note = await unsaved_note(ctx.workspace, ctx.root, ctx.root.resolve())
        if scope is None:
            outcome = await self._run(ctx, limit)
        else:
            try:
                outcome = await self._run(ctx, limit, scope.argv, sandboxed=scope.sandboxed)
            finally:
                with anyio.CancelScope(shield=True):  # what it did before an abort is kept too
                    ctx.taken.extend(await scope.close())
        return _result(outcome, self.timeout, [*self.notes, *([note] if note else [])])

    async def _run(self, ctx: ToolContext, limit: int, wrap: Wrap = as_is, *, sandboxed: bool = False) -> Outcome:
        """In Totem, or where the front end runs commands (an ACP client's terminal). A sandboxed
        command stays in Totem: the client's terminal cannot give the sandbox's guarantees (its
        editor would run the wrapper in namespaces it cannot reach, and a client that starts
        terminals from a worker thread would see ``--die-with-parent`` kill them), so it gets
        only the commands that run outside the sandbox, as the user wrote them."""
        if ctx.runner is None or sandboxed:
            env = command_environ(unasked=self.unasked, passed=ctx.command_env_pass)
            return await run_command(self.command, ctx.root, self.timeout, limit, wrap, env)
        # The client's terminal has its own environment: what Totem's would leave out, unset there.
        unset = [word for name in left_out(unasked=self.unasked, passed=ctx.command_env_pass) for word in ("-u", name)]
        argv = wrap(["env", *unset, shell(), "-c", self.command] if unset else [shell(), "-c", self.command])
        return await ctx.runner.run(argv, cwd=ctx.root, timeout=self.timeout, limit=limit, call_id=ctx.call_id)


def _result(outcome: Outcome, timeout: int, notes: list[str]) -> ToolResult:
    """``output``: what the command printed, then ``[exit code N]`` (non-zero) or the timeout, then notes."""
    lines = [outcome.output.rstrip("\n") or "(no output)"]
    if outcome.timed_out:
        lines.append(f"[Timed out after {timeout} s; the command and every process it started were killed.]")
    elif outcome.exit_code:
        lines.append(f"[exit code {outcome.exit_code}]")
    lines.extend(f"[{note}]" for note in notes)
    if outcome.timed_out:
        summary = f"timed out after {timeout} s"
    elif outcome.exit_code is not None and outcome.exit_code < 0:
        summary = f"killed by signal {-outcome.exit_code}"
    else:
        summary = f"exit {outcome.exit_code}"
    return ToolResult(
        output="\n".join(lines),
        summary=summary,
        is_error=outcome.timed_out,
        metadata={"exit_code": outcome.exit_code, "timed_out": outcome.timed_out},
    )


_EXIT = re.compile(r"^\[exit code (-?\d+)\]$", re.MULTILINE)  # the line ``_result`` adds


class BashTool(Tool):
    name = "bash"
    hook_name = "Bash"
    surface = "minimal"
    Input = BashInput

    def may_change(self, action: Action) -> bool:
        """A command that is not one of the read-only ones (``command_permission``), or one run
        outside the sandbox, may change the project."""
        return bool(action.changes)

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        """"ran `pytest -q`: exit 1; last output: AssertionError", "ran `ls`: exit 0", "…: timed out"."""
        command = short(args.get("command", "?"), 80)
        if "[Timed out after" in output:
            return f"ran `{command}`: timed out"
        if is_error:
            return f"ran `{command}`: {short(first_line(output), 120)}"
        code = _EXIT.search(output)
        if not code:
            return f"ran `{command}`: exit 0"
        body = [
            line.strip()
            for line in output.splitlines()
            if line.strip() and not (line.startswith("[") and line.rstrip().endswith("]"))
        ]
        tail = f"; last output: {short(body[-1], 120)}" if body else ""
        return f"ran `{command}`: exit {code.group(1)}{tail}"

    def cut(self, args: dict[str, Any], output: str, chars: int) -> str:
        """A command's output keeps its start and its end (where the failure and the exit are)."""
        if len(output) <= chars:
            return output
        note = lambda kept: self.cut_note(args, kept, len(output))  # noqa: E731
        room = max(0, chars - len(note("")) - 16)
        head_room, tail_room = room // 3, room - room // 3
        head = whole_lines_head(output, head_room)
        tail = output[len(output) - tail_room :] if tail_room else ""
        if "\n" in tail:
            tail = tail[tail.index("\n") + 1 :]
        return with_note(f"{head}\n…\n{tail}" if head or tail else "", note)

    def cut_note(self, args: dict[str, Any], kept: str, total_chars: int) -> str:
        return (
            f"[Cut to fit the context window: the start and end of {total_chars} characters shown. "
            "Run it again with the output sent to a file, then read or grep that file in parts.]"
        )

    async def prepare(self, args: BashInput, ctx: ToolContext) -> BashAction:
        permission, escape = await asked_as(ctx, args.command, args.outside_sandbox)
        title = args.description or f"$ {args.command}"
        return BashAction(
            title=f"{title}{OUTSIDE if escape else ''}",
            **permission,
            escape=escape,
            notes=list(args.notes),
            runs_commands=True,
            command=args.command,
            timeout=args.timeout or DEFAULT_TIMEOUT,
        )
