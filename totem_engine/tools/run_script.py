"""run_script: one short Python script against the project instead of a dozen tool rounds (code mode).

The script runs in prepare, in a process of its own (codemode/runner.py), on a staged view of
the project (codemode/staging.py): it reads, searches and stages writes, edits and deletes
through ``import totem`` (codemode/api.py) and changes nothing. When it ends without an
exception its staged files are the call's change set: one permission question with the whole
diff (permission ``edit``, the changed paths as its patterns, as a patch is asked), then, once
allowed, one all-or-nothing write that the turn snapshots for undo, formats and checks like any
edit. A script that fails or runs past its time limit leaves the project exactly as it was and
returns what it printed, with its traceback.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from totem_engine.codemode.api import ScriptApi
from totem_engine.codemode.changes import CLASH, change_set, clash
from totem_engine.codemode.runner import run_script
from totem_engine.command_changes import SandboxRequired
from totem_engine.tools.base import Action, Bounded, Tool, ToolContext, ToolInput
from totem_engine.tools.bash import MAX_OUTPUT
from totem_engine.vocab.accounts import short
from totem_engine.vocab.tools import ToolError

DEFAULT_TIMEOUT = 60  # seconds
MAX_TIMEOUT = 600


class RunScriptInput(ToolInput):
    script: str = Field(min_length=1, description="A Python script; `import totem` for the project's files.")
    timeout: Annotated[int | None, Bounded(default=DEFAULT_TIMEOUT, maximum=MAX_TIMEOUT)] = Field(
        None, description=f"Seconds it may run (default {DEFAULT_TIMEOUT}, at most {MAX_TIMEOUT})."
    )


class RunScriptTool(Tool):
    name = "run_script"
    edits_files = True
    Input = RunScriptInput

    def may_change(self, action: Action) -> bool:
        """Its change set (what the script staged) changes the project; of the actions the script
        asks about as it runs, a command does as ``bash`` says (not read-only), a read does not."""
        if action.runs_commands:
            return bool(action.changes)
        return bool(action.files)

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        """"run_script: Changes: edited a.py", "run_script failed: …"."""
        if is_error:
            return f"run_script failed: {short(output.strip().splitlines()[-1] if output.strip() else '', 120)}"
        return f"run_script: {summary or 'no changes'}"

    async def prepare(self, args: RunScriptInput, ctx: ToolContext) -> Action:
        api = ScriptApi(ctx)
        timeout = args.timeout or DEFAULT_TIMEOUT
        try:
            wrap = await ctx.commands.script_profile(ctx.session_id) if ctx.commands else None
        except SandboxRequired as exc:
            raise ToolError(str(exc)) from None
        run = await run_script(
            args.script, api, timeout=timeout, limit=min(ctx.output_budget, MAX_OUTPUT),
            project=ctx.root if ctx.agent_mode else None, wrap=wrap,
        )
        printed = run.output.rstrip("\n")
        if run.exit_code is None:
            raise ToolError(f"{printed}\n[The script ran past its time limit of {timeout} s and was killed; {_left(api)}]".lstrip("\n"))
        if run.exit_code != 0:
            raise ToolError(f"{printed}\n[The script failed (exit code {run.exit_code}); {_left(api)}]".lstrip("\n"))
        clashing = await clash(ctx.workspace, ctx.root, api.staged.changes())
        if clashing:
            raise ToolError(f"{printed}\n[The script's changes {CLASH.format(clashing)}; {_left(api)}]".lstrip("\n"))
        notes = "".join(f"\n[{note}]" for note in args.notes)
        ran = "".join(f"\n[Written before a command: {said}]" for said in api.written)
        ran += f"\n[Commands run: {'; '.join(api.commands)}]" if api.commands else ""
        return change_set(
            ctx.root, api.staged.changes(), printed=printed + ran + notes, earlier=tuple(api.written), commands=tuple(api.commands),
        )



def _left(api: ScriptApi) -> str:
    """What a failed script leaves: nothing, or what was written before its commands."""
    if not api.written:
        return "the project is unchanged."
    return f"what was written before its commands stays ({'; '.join(api.written)}; undo takes it back), nothing else changed."
