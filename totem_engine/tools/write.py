"""write: create a file or replace its whole content."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from pydantic import Field

from totem_engine.tools.base import Action, NothingToDo, ProposedFile, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.vocab.accounts import first_line, short
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.diff import unified_diff
from totem_engine.workspace.paths import folder_glob, refuse_totem_file, project_path, resolve_in_project
from totem_engine.tools.freshness import check_fresh, mark_seen
from totem_engine.tools.fragments import check_whole, merge_python


class WriteInput(ToolInput):
    path: str = Field(description="Path of the file, relative to the project root.")
    content: str = Field(description="The whole new content of the file.")


@dataclass
class WriteAction(Action):
    target: Path | None = None
    data: bytes = b""

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.target is not None
        await ctx.workspace.write_bytes(self.target, self.data)
        rel = project_path(ctx.root, self.target)
        mark_seen(ctx, rel, self.data)
        created = self.files[0].old_text is None
        lines = len(self.files[0].new_text.splitlines()) if self.files[0].new_text else 0
        verb = "Created" if created else "Wrote"
        notes = "".join(f"\n[{n}]" for n in self.notes)
        return ToolResult(
            output=f"{verb} {rel} ({_lines(lines)}).{notes}",
            summary=f"{verb.lower()} {_lines(lines)}",
            changed=[rel],
        )


class WriteTool(Tool):
    name = "write"
    hook_name = "Write"
    surface = "minimal"
    edits_files = True
    Input = WriteInput

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        """"wrote a.py", "created a.py", "write of a.py failed: …"."""
        path = str(args.get("path", "?"))
        if is_error:
            return f"write of {path} failed: {short(first_line(output), 120)}"
        return f"{'created' if first_line(output).startswith('Created') else 'wrote'} {path}"

    async def prepare(self, args: WriteInput, ctx: ToolContext) -> Action:
        target = await anyio.to_thread.run_sync(resolve_in_project, ctx.root, args.path, ctx.extra_roots)
        rel = project_path(ctx.root, target)
        refuse_totem_file(target, rel)
        stat = await ctx.workspace.stat(target)
        if stat is not None and stat.is_dir:
            raise ToolError(f"{rel} is a directory.")
        current = await ctx.workspace.read_bytes(target) if stat is not None else None
        check_fresh(ctx, rel, current, whole_rewrite=True)
        old = current.decode("utf-8", errors="replace") if current is not None else None
        content, notes = args.content, []
        if ctx.whole_files and old is not None:
            content = _whole_file(rel, old, content, notes)
        return WriteAction(
            title=f"{'Create' if old is None else 'Write'} {rel}",
            permission="edit",
            patterns=[rel],
            always_pattern=folder_glob(rel),
            diff=unified_diff(rel, old, content),
            files=[ProposedFile(path=rel, new_text=content, old_text=old)],
            changes=True,
            target=target,
            data=content.encode("utf-8"),
            notes=notes,
        )


def _whole_file(rel: str, old: str, new: str, notes: list[str]) -> str:
    """What a small model's "whole file" means (fragments.py): a Python fragment merged into the
    file, a fragment of another language refused, anything else as sent; refused when it
    changes nothing (the model then knows its change is in)."""
    merged = merge_python(old, new) if rel.endswith(".py") else None
    if (merged[0] if merged else new) == old:
        raise NothingToDo(f"Unchanged: {rel} already holds what you sent.")
    if merged is not None:
        text, done = merged
        notes.append(f"What you sent was part of {rel}; it was merged into the file: {'; '.join(done)}.")
        return text
    check_whole(rel, old, new)
    return new


def _lines(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"
