"""A script's change set as one action: its staged files, asked about and written as a patch is.

``change_set`` turns what a script staged (staging.py) into a ``ScriptAction``: permission
``edit`` with every changed path as a pattern, the whole diff, and ``PatchAction``'s all or
nothing write (each file first checked to be as the script first saw it). The turn snapshots,
formats and checks it like any edit. With nothing staged it is a read: nothing left to ask.
A change set that would put a folder where the project has a file, or a file where it has a
folder, is refused before it is asked (``clash``): the snapshots that undo a change hold files,
not folders, so it could be neither recorded nor taken back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from totem_engine.codemode.staging import StagedChange
from totem_engine.tools.base import ProposedFile, ToolContext, ToolResult
from totem_engine.tools.patch import FileChange, PatchAction, common_glob
from totem_engine.workspace.diff import unified_diff
from totem_engine.workspace.files import Workspace
from totem_engine.workspace.paths import project_path

# What the result says of a clash (the path filled in).
CLASH = "would replace a file with a folder or a folder with a file ({}), which one change set cannot undo: use the bash tool for that"


@dataclass
class ScriptAction(PatchAction):
    printed: str = ""  # what the script printed, the start of the result
    earlier: tuple[str, ...] = ()  # what was written before the script's commands ("edited a.py")

    async def apply(self, ctx: ToolContext) -> ToolResult:
        result = await super().apply(ctx) if self.changes else ToolResult(output="", summary="")
        said = "; ".join(dict.fromkeys([*self.earlier, *(change.report for change in self.changes)]))
        result.output = f"{self.printed}\n[{f'Changes: {said}' if said else 'No changes'}]".lstrip("\n")
        result.summary = f"Changes: {said}" if said else "no changes"
        return result


def change_set(
    root: Path, staged: list[StagedChange], *, printed: str, earlier: tuple[str, ...] = (), commands: tuple[str, ...] = (),
) -> ScriptAction:
    """The script's staged files as one action; ``earlier``: what it wrote before its commands,
    which the result lists with them; ``commands``: what it ran, which the question names (what
    they wrote in the sandbox is part of the diff)."""
    changes = []
    for item in staged:
        change = FileChange(rel=project_path(root, item.path), target=item.path, before=item.before, data=item.after, report="")
        change.report = _verb(change)
        changes.append(change)
    if not changes:
        # Each read of the script was checked against the rules as it ran.
        return ScriptAction(
            title="Run a script", permission="read", patterns=[], always_pattern="*", printed=printed, earlier=earlier
        )
    proposed = [ProposedFile(path=c.rel, new_text=_text(c.data), old_text=_text(c.before)) for c in changes]
    rels = [c.rel for c in changes]
    return ScriptAction(
        title=f"Run a script: {', '.join(c.report for c in changes)}" + (
            f" (after running {', '.join(f'`{c}`' for c in commands)})" if commands else ""
        ),
        permission="edit",
        patterns=rels,
        always_pattern=common_glob(rels),
        diff="".join(unified_diff(p.path, p.old_text, p.new_text) for p in proposed),
        files=proposed,
        changes=changes,
        printed=printed,
        earlier=earlier,
    )


async def clash(workspace: Workspace, root: Path, staged: list[StagedChange]) -> str | None:
    """The first path where writing ``staged`` into ``workspace`` would replace a file with a
    folder (a file written under it) or a folder with a file; None when there is none."""
    for item in staged:
        if item.after is None:
            continue
        rel = Path(project_path(root, item.path))
        for path in (rel, *rel.parents[:-1]):
            found = await workspace.stat(root / path)
            if found is not None and found.is_dir == (path == rel):
                return path.as_posix()
    return None


def _verb(change: FileChange) -> str:
    if change.before is None:
        return f"created {change.rel}"
    return f"deleted {change.rel}" if change.data is None else f"edited {change.rel}"


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")
