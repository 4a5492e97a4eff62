"""edit: replace one exact piece of a file (or every copy of it), tolerant of whitespace drift.

The matching is tools.matching's; this module adds the file around it: confinement, reading
through the workspace, binary refusal, the BOM, the stale-read rule and the two phases.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from pydantic import Field

from totem_engine.tools import matching
from totem_engine.tools.base import Action, ProposedFile, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.tools.freshness import check_fresh, mark_seen
from totem_engine.tools.read import looks_binary
from totem_engine.vocab.accounts import first_line, short
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.diff import unified_diff
from totem_engine.workspace.paths import closest_paths, folder_glob, refuse_totem_file, project_path, resolve_in_project

BOM = b"\xef\xbb\xbf"


class EditInput(ToolInput):
    path: str = Field(description="Path of the file, relative to the project root.")
    old_string: str = Field(
        description="The exact text to replace, copied from the file with enough lines around it to be unique. "
        "Empty only to create a new file."
    )
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(False, description="Replace every occurrence of old_string instead of exactly one.")


def decode(data: bytes, rel: str) -> tuple[str, bool]:
    """A text file's bytes as (text without BOM, had a UTF-8 BOM); ToolError for a binary file."""
    if looks_binary(data):
        raise ToolError(f"{rel} is a binary file (or not UTF-8 text); it cannot be edited as text.")
    bom = data.startswith(BOM)
    return data[len(BOM) if bom else 0 :].decode("utf-8"), bom


def encode(text: str, bom: bool) -> bytes:
    return (BOM if bom else b"") + text.encode("utf-8")


async def missing_file_error(ctx: ToolContext, rel: str, hint: str = "") -> ToolError:
    """'<rel> does not exist', with the closest existing paths."""
    near = await anyio.to_thread.run_sync(closest_paths, ctx.root, rel)
    suggestion = f" Did you mean: {', '.join(near)}?" if near else ""
    return ToolError(f"{rel} does not exist.{suggestion}{hint}")


@dataclass
class EditAction(Action):
    """``data``: the file's new bytes; ``before``: its bytes as prepare read them (None: new file)."""

    target: Path | None = None
    data: bytes = b""
    before: bytes | None = None
    strategy: str = matching.EXACT
    lines: tuple[int, ...] = ()

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.target is not None
        rel = project_path(ctx.root, self.target)
        await ensure_unchanged(ctx, self.target, rel, self.before)
        await ctx.workspace.write_bytes(self.target, self.data)
        mark_seen(ctx, rel, self.data)
        if self.before is None:
            lines = len(self.files[0].new_text.splitlines()) if self.files[0].new_text else 0
            return ToolResult(output=f"Created {rel} ({lines} lines).", summary=f"created {lines} lines", changed=[rel])
        count = len(self.lines)
        where = f"at line {self.lines[0]}" if count == 1 else f"{count} places, at lines {matching.join_numbers(list(self.lines))}"
        output = f"Edited {rel}: replaced {where}."
        if self.strategy != matching.EXACT:
            output += f"\n[old_string did not match exactly; it matched with {self.strategy}. Check the result.]"
        return ToolResult(
            output=output,
            summary=f"edited {count} place{'s' if count > 1 else ''}",
            changed=[rel],
            metadata={"strategy": self.strategy, "lines": list(self.lines)},
        )


async def ensure_unchanged(ctx: ToolContext, target: Path, rel: str, before: bytes | None) -> None:
    """Refuse to write when the file changed between prepare and apply (e.g. while permission was asked)."""
    stat = await ctx.workspace.stat(target)
    now = None if stat is None else await ctx.workspace.read_bytes(target)
    if now != before:
        raise ToolError(f"{rel} changed while the change waited for permission; nothing was written. Read it again.")


class EditTool(Tool):
    name = "edit"
    hook_name = "Edit"
    surface = "minimal"
    edits_files = True
    Input = EditInput

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        """"edited a.py", "created a.py", "edit of a.py failed: …"."""
        path = str(args.get("path", "?"))
        if is_error:
            return f"edit of {path} failed: {short(first_line(output), 120)}"
        return f"{'created' if first_line(output).startswith('Created') else 'edited'} {path}"

    async def prepare(self, args: EditInput, ctx: ToolContext) -> Action:
        if args.old_string == args.new_string:
            raise ToolError("old_string and new_string are the same; the edit would change nothing.")
        target = await anyio.to_thread.run_sync(resolve_in_project, ctx.root, args.path, ctx.extra_roots)
        rel = project_path(ctx.root, target)
        refuse_totem_file(target, rel)
        stat = await ctx.workspace.stat(target)
        if stat is not None and stat.is_dir:
            raise ToolError(f"{rel} is a directory.")
        if stat is None:
            if args.old_string:
                raise await missing_file_error(ctx, rel, " To create a file, give an empty old_string.")
            return self._action(rel, target, None, args.new_string, encode(args.new_string, False), None)
        if not args.old_string:
            raise ToolError(f"old_string is empty, which only creates a new file, and {rel} already exists. "
                            "Give the text to replace (or use write to replace the whole file).")
        current = await ctx.workspace.read_bytes(target)
        text, bom = decode(current, rel)
        check_fresh(ctx, rel, current, whole_rewrite=False)
        replaced = _replace(rel, text, args)
        return self._action(rel, target, text, replaced.text, encode(replaced.text, bom), current, replaced)

    @staticmethod
    def _action(rel: str, target: Path, old: str | None, new: str, data: bytes, before: bytes | None,
                replaced: matching.Replaced | None = None) -> EditAction:
        return EditAction(
            title=f"{'Create' if old is None else 'Edit'} {rel}",
            permission="edit",
            patterns=[rel],
            always_pattern=folder_glob(rel),
            diff=unified_diff(rel, old, new),
            files=[ProposedFile(path=rel, new_text=new, old_text=old)],
            target=target,
            data=data,
            before=before,
            strategy=replaced.strategy if replaced else matching.EXACT,
            lines=tuple(replaced.lines) if replaced else (),
        )


def _replace(rel: str, text: str, args: EditInput) -> matching.Replaced:
    """The matching engine's result, its failures worded for the model."""
    try:
        replaced = matching.replace(text, args.old_string, args.new_string, args.replace_all)
    except matching.AmbiguousMatch as exc:
        raise ToolError(f"old_string is not unique in {rel}: {exc} ({exc.strategy}). Include more surrounding "
                        "lines to pick one, or set replace_all to change every one. Nothing was changed.") from None
    except matching.NoMatch as exc:
        shown = (f" The closest lines in the file are (line number, tab, text):\n{exc.closest}\n"
                 "Copy the text exactly from the file, without the line numbers."
                 if exc.closest else " Nothing in the file resembles it; read the file again.")
        raise ToolError(f"old_string was not found in {rel} (also not with whitespace or punctuation "
                        f"differences ignored).{shown}") from None
    if replaced.text == text:
        raise ToolError(f"The edit leaves {rel} as it is; nothing to change.")
    return replaced
