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

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from totem_engine.codemode.api import ScriptApi
from totem_engine.codemode.runner import run_script
from totem_engine.tools.base import (
    Action,
    Bounded,
    ProposedFile,
    Tool,
    ToolContext,
    ToolError,
    ToolInput,
    ToolResult,
    short,
)
from totem_engine.tools.bash import MAX_OUTPUT
from totem_engine.tools.diff import unified_diff
from totem_engine.tools.patch import FileChange, PatchAction, common_glob
from totem_engine.tools.paths import relative

DEFAULT_TIMEOUT = 60  # seconds
MAX_TIMEOUT = 600


class RunScriptInput(ToolInput):
    script: str = Field(min_length=1, description="A Python script; `import totem` for the project's files.")
    timeout: Annotated[int | None, Bounded(default=DEFAULT_TIMEOUT, maximum=MAX_TIMEOUT)] = Field(
        None, description=f"Seconds it may run (default {DEFAULT_TIMEOUT}, at most {MAX_TIMEOUT})."
    )


@dataclass
class ScriptAction(PatchAction):
    printed: str = ""

    async def apply(self, ctx: ToolContext) -> ToolResult:
        if not self.changes:
            return ToolResult(output=f"{self.printed}\n[No changes]".lstrip("\n"), summary="no changes")
        result = await super().apply(ctx)
        said = "; ".join(change.report for change in self.changes)
        result.output = f"{self.printed}\n[Changes: {said}]".lstrip("\n")
        result.summary = f"Changes: {said}"
        return result


def _verb(change: FileChange) -> str:
    if change.before is None:
        return f"created {change.rel}"
    return f"deleted {change.rel}" if change.data is None else f"edited {change.rel}"


class RunScriptTool(Tool):
    name = "run_script"
    changes_files = True
    Input = RunScriptInput

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        """"run_script: Changes: edited a.py", "run_script failed: …"."""
        if is_error:
            return f"run_script failed: {short(output.strip().splitlines()[-1] if output.strip() else '', 120)}"
        return f"run_script: {summary or 'no changes'}"

    async def prepare(self, args: RunScriptInput, ctx: ToolContext) -> Action:
        api = ScriptApi(ctx)
        timeout = args.timeout or DEFAULT_TIMEOUT
        run = await run_script(args.script, api, timeout=timeout, limit=min(ctx.output_budget, MAX_OUTPUT))
        printed = run.output.rstrip("\n")
        if run.exit_code is None:
            raise ToolError(
                f"{printed}\n[The script ran past its time limit of {timeout} s and was killed; the project is unchanged.]".lstrip("\n")
            )
        if run.exit_code != 0:
            raise ToolError(f"{printed}\n[The script failed (exit code {run.exit_code}); the project is unchanged.]".lstrip("\n"))
        changes = []
        for staged in api.staged.changes():
            rel = relative(ctx.root, staged.path)
            change = FileChange(rel=rel, target=staged.path, before=staged.before, data=staged.after, report="")
            change.report = _verb(change)
            changes.append(change)
        notes = "".join(f"\n[{note}]" for note in args.notes)
        if not changes:
            # Its reads were each checked against the rules as they ran: nothing is left to ask.
            return ScriptAction(title="Run a script", permission="read", patterns=[], always_pattern="*", printed=printed + notes)
        proposed = [ProposedFile(path=c.rel, new_text=_text(c.data), old_text=_text(c.before)) for c in changes]
        rels = [c.rel for c in changes]
        return ScriptAction(
            title=f"Run a script: {', '.join(c.report for c in changes)}",
            permission="edit",
            patterns=rels,
            always_pattern=common_glob(rels),
            diff="".join(unified_diff(p.path, p.old_text, p.new_text) for p in proposed),
            files=proposed,
            changes=changes,
            printed=printed + notes,
        )


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")
