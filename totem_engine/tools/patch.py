"""patch: apply a unified diff over one or more files (modify, create, delete), all or nothing.

Each hunk is placed by its text (context and removed lines) through tools.matching, not by the
line numbers of its header, which only choose among several places the text fits. Every file is
read, matched and checked in prepare; apply writes nothing until all files are known to be as
prepare read them, and puts back what it wrote when a later write fails.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from pydantic import Field
from unidiff import PatchedFile, PatchSet, UnidiffParseError
from unidiff.patch import Hunk

from totem_engine.tools import matching
from totem_engine.tools.base import Action, ProposedFile, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.tools.edit import decode, encode, ensure_unchanged, missing_file_error
from totem_engine.tools.freshness import check_fresh, mark_seen
from totem_engine.vocab.accounts import first_line, short
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.diff import unified_diff
from totem_engine.workspace.paths import folder_glob, refuse_totem_file, project_path, resolve_in_project

DEV_NULL = "/dev/null"

EXPECTED_FORMAT = """--- a/src/app.py
+++ b/src/app.py
@@ -12,3 +12,4 @@
 an unchanged line
-a removed line
+an added line
+another added line
 an unchanged line
(create a file with "--- /dev/null", delete one with "+++ /dev/null")"""

_HEADER = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)")
_BARE_HEADER = re.compile(r"@@\s*(?:@@(.*))?")  # "@@" or "@@ @@": a hunk without line numbers


class PatchInput(ToolInput):
    patch: str = Field(
        description="A unified diff (as git diff prints it) over one or more files; "
        "--- /dev/null creates a file, +++ /dev/null deletes one."
    )


@dataclass
class FileChange:
    """One file of the patch: its bytes as prepare read them (None: absent) and to write (None: delete)."""

    rel: str
    target: Path
    before: bytes | None
    data: bytes | None
    report: str  # one line for the result, e.g. "modified src/a.py (2 hunks)"


@dataclass
class PatchAction(Action):
    changes: list[FileChange] = field(default_factory=list)

    async def apply(self, ctx: ToolContext) -> ToolResult:
        for change in self.changes:  # all checked before any is written
            await ensure_unchanged(ctx, change.target, change.rel, change.before)
        done: list[FileChange] = []
        for change in self.changes:
            try:
                await _write(ctx, change.target, change.data)
            except OSError as exc:
                await _restore(ctx, done)
                raise ToolError(f"Writing {change.rel} failed ({exc}); the files already written were put back. "
                                "Nothing was changed.") from None
            done.append(change)
        for change in self.changes:
            if change.data is not None:
                mark_seen(ctx, change.rel, change.data)
        count = len(self.changes)
        return ToolResult(
            output=f"Patched {count} file{'s' if count > 1 else ''}:\n" + "\n".join(c.report for c in self.changes),
            summary=f"patched {count} file{'s' if count > 1 else ''}",
            changed=[c.rel for c in self.changes],
        )


async def _write(ctx: ToolContext, target: Path, data: bytes | None) -> None:
    if data is None:
        await ctx.workspace.delete(target)
    else:
        await ctx.workspace.write_bytes(target, data)


async def _restore(ctx: ToolContext, done: list[FileChange]) -> None:
    """Put back the files already written, newest first, as prepare read them."""
    for change in reversed(done):
        with contextlib.suppress(OSError):  # keep restoring the others
            await _write(ctx, change.target, change.before)


class PatchTool(Tool):
    name = "patch"
    edits_files = True
    Input = PatchInput

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        """"patch: " and the result's first line (which files, or why not)."""
        return f"patch: {short(first_line(output), 120)}"

    async def prepare(self, args: PatchInput, ctx: ToolContext) -> Action:
        text, numbered = recount(args.patch)
        files = _parse(text)
        changes: list[FileChange] = []
        proposed: list[ProposedFile] = []
        hunks = iter(numbered)
        for patched in files:
            has_numbers = [next(hunks) for _ in patched]
            change, old, new = await _prepare_file(ctx, patched, has_numbers)
            if any(c.rel == change.rel for c in changes):
                raise ToolError(f"{change.rel} appears twice in the patch; put all its hunks under one header.")
            changes.append(change)
            proposed.append(ProposedFile(path=change.rel, new_text=new, old_text=old))
        rels = [c.rel for c in changes]
        return PatchAction(
            title=f"Patch {', '.join(rels)}",
            permission="edit",
            patterns=rels,
            always_pattern=common_glob(rels),
            diff="".join(unified_diff(p.path, p.old_text, p.new_text) for p in proposed),
            files=proposed,
            changes=changes,
        )


def common_glob(rels: list[str]) -> str:
    """What "allow always" stores: the files of the deepest folder holding them all (``src/*``)."""
    folders = [folder_glob(rel).removesuffix("*").rstrip("/").split("/") for rel in rels]
    common = []
    for parts in zip(*folders):
        if len(set(parts)) > 1 or not parts[0]:
            break
        common.append(parts[0])
    return f"{'/'.join(common)}/*" if common else "*"


# --- parsing ------------------------------------------------------------------------------


def recount(patch: str) -> tuple[str, list[bool]]:
    """``patch`` with each hunk header's line counts recomputed from the hunk's lines.

    Models miscount hunks, and unidiff silently drops the lines past a count that is too small.
    A blank line inside a hunk is read as a blank context line (a model often drops its space).
    Lines outside hunks (file names) lose a "\r" before their newline.
    Also returns, per hunk in order, whether its header gave line numbers ("@@" alone gives none).
    """
    lines = re.findall(r"[^\n]*\n|[^\n]+\Z", patch)
    out: list[str] = []
    numbered: list[bool] = []
    i = 0
    while i < len(lines):
        header = lines[i].rstrip("\r\n")
        full, bare = _HEADER.fullmatch(header), _BARE_HEADER.fullmatch(header)
        if not (full or bare):
            # unidiff keeps a "\r" in a file name; hunk lines keep theirs (matching reads CRLF as LF).
            out.append(header + "\n" if lines[i].endswith("\n") else lines[i])
            i += 1
            continue
        body, i = _hunk_body(lines, i + 1)
        old = sum(1 for line in body if line[0] in " -")
        new = sum(1 for line in body if line[0] in " +")
        old_start, new_start, section = (
            (int(full[1]), int(full[2]), full[3]) if full else (min(old, 1), min(new, 1), bare[1] or "")
        )
        numbered.append(full is not None)
        out.append(f"@@ -{old_start},{old} +{new_start},{new} @@{section}\n")
        out += body
    return "".join(out), numbered


def _hunk_body(lines: list[str], i: int) -> tuple[list[str], int]:
    """The lines of the hunk starting at ``lines[i]`` (blank ones as " "), and where the next part starts."""
    body: list[str] = []
    end = 0  # body length up to its last non-blank line
    while i < len(lines):
        line = lines[i]
        stripped = line.rstrip("\r\n")
        next_line = lines[i + 1] if i + 1 < len(lines) else ""
        if stripped.startswith(("@@", "diff ")) or (stripped.startswith("--- ") and next_line.startswith("+++ ")):
            break
        if stripped == "":
            body.append(" " + line)
        elif stripped[0] in " -+\\":
            body.append(line)
            end = len(body)
        else:
            break
        i += 1
    # Blank lines after the hunk's last line separate it from what follows; they are not context.
    trailing = len(body) - end
    return body[:end], i - trailing


def _parse(text: str) -> list[PatchedFile]:
    try:
        files = list(PatchSet(text))
    except UnidiffParseError as exc:
        reason = str(exc).strip()
        raise ToolError(f"The patch is not a valid unified diff ({reason}). Expected:\n{EXPECTED_FORMAT}") from None
    if not files:
        raise ToolError(f"The patch holds no file (no '--- a/path' and '+++ b/path' lines). Expected:\n{EXPECTED_FORMAT}")
    for patched in files:
        if patched.is_binary_file:
            raise ToolError(f"{patched.path}: binary patches are not supported.")
        if patched.source_file == DEV_NULL and patched.target_file == DEV_NULL:
            raise ToolError(f"A file's '---' and '+++' lines both name {DEV_NULL}: name the file on one of them. Expected:\n{EXPECTED_FORMAT}")
        if not len(patched):
            raise ToolError(f"{patched.path} has no hunk (no '@@' lines). Expected:\n{EXPECTED_FORMAT}")
        if any(not (hunk.source_length or hunk.target_length) for hunk in patched):
            raise ToolError(f"{patched.path} has a hunk without lines. Expected:\n{EXPECTED_FORMAT}")
    return files


def _paths(patched: PatchedFile) -> tuple[str | None, str | None]:
    """(source, target) paths without git's a/ and b/ prefixes; None for /dev/null."""
    source, target = patched.source_file, patched.target_file
    # Strip only when both sides carry git's prefixes, so a plain "a/x.py" path is kept whole.
    git_style = (source == DEV_NULL or source.startswith("a/")) and (target == DEV_NULL or target.startswith("b/"))
    strip = (lambda p: p[2:]) if git_style else (lambda p: p)
    return (None if source == DEV_NULL else strip(source)), (None if target == DEV_NULL else strip(target))


def _blocks(hunk: Hunk) -> tuple[str, str]:
    """The hunk's old text (context and removed lines) and new text (context and added lines)."""
    entries: list[list[str]] = []
    for line in hunk:
        if line.line_type == "\\":  # "\ No newline at end of file": the line before has no newline
            if entries:
                entries[-1][1] = entries[-1][1].rstrip("\r\n")
        elif line.line_type in (" ", "-", "+"):
            entries.append([line.line_type, line.value])
    old = "".join(value for kind, value in entries if kind in " -")
    new = "".join(value for kind, value in entries if kind in " +")
    return old, new


# --- one file -----------------------------------------------------------------------------


async def _prepare_file(
    ctx: ToolContext, patched: PatchedFile, has_numbers: list[bool]
) -> tuple[FileChange, str | None, str | None]:
    """The change to one file, with its old and new text (None: absent)."""
    source, target_path = _paths(patched)
    if source is not None and target_path is not None and source != target_path:
        raise ToolError(f"Renaming {source} to {target_path} is not supported by patch; "
                        "delete the old file and create the new one.")
    path = target_path or source
    assert path is not None  # _parse refused /dev/null on both sides
    target = await anyio.to_thread.run_sync(resolve_in_project, ctx.root, path, ctx.extra_roots)
    rel = project_path(ctx.root, target)
    if target_path is not None:  # deleting a stray .totem file is fine
        refuse_totem_file(target, rel)
    stat = await ctx.workspace.stat(target)
    if stat is not None and stat.is_dir:
        raise ToolError(f"{rel} is a directory.")
    blocks = [_blocks(hunk) for hunk in patched]
    if source is None:
        return _create(rel, target, stat is not None, blocks)
    if stat is None:
        raise await missing_file_error(ctx, rel)
    current = await ctx.workspace.read_bytes(target)
    old, bom = decode(current, rel)
    check_fresh(ctx, rel, current, whole_rewrite=False)
    if target_path is None:
        return _delete(rel, target, current, old, blocks)
    new, report = _modify(rel, old, patched, blocks, has_numbers)
    return FileChange(rel, target, current, encode(new, bom), report), old, new


def _create(rel: str, target: Path, exists: bool, blocks: list[tuple[str, str]]) -> tuple[FileChange, None, str]:
    if exists:
        raise ToolError(f"{rel} already exists, so it cannot be created (--- /dev/null). "
                        f"Use --- a/{rel} and context lines to change it.")
    if any(old for old, _ in blocks):
        raise ToolError(f"{rel} is created (--- /dev/null), so its hunks can only add lines.")
    new = "".join(added for _, added in blocks)
    lines = len(new.splitlines())
    return FileChange(rel, target, None, encode(new, False), f"created {rel} ({lines} lines)"), None, new


def _delete(rel: str, target: Path, current: bytes, old: str, blocks: list[tuple[str, str]]) -> tuple[FileChange, str, None]:
    if any(added for _, added in blocks):
        raise ToolError(f"{rel} is deleted (+++ /dev/null), so its hunks can only remove lines.")
    removed = "".join(text for text, _ in blocks)  # not empty: _parse refuses hunks without lines
    view = matching.FileText.of(old)
    if not any(f.start == 0 and f.end == len(view.norm) for f in matching.locate(view, removed)):
        raise ToolError(f"{rel} cannot be deleted: the patch's removed lines are not the file's whole current "
                        "content. Read it again. Nothing was changed.")
    return FileChange(rel, target, current, None, f"deleted {rel}"), old, None


def _modify(rel: str, old: str, patched: PatchedFile, blocks: list[tuple[str, str]],
            has_numbers: list[bool]) -> tuple[str, str]:
    """The new text of a modified file, and its report line."""
    view = matching.FileText.of(old)
    placed = [
        _place(view, rel, number, hunk, old_block, numbered)
        for number, (hunk, (old_block, _), numbered) in enumerate(zip(patched, blocks, has_numbers), start=1)
    ]
    order = sorted(range(len(placed)), key=lambda k: placed[k].start)
    for a, b in zip(order, order[1:]):
        if placed[b].start < placed[a].end:
            raise ToolError(f"Hunks {a + 1} and {b + 1} of {rel} overlap (at lines {placed[a].line} and "
                            f"{placed[b].line}); merge them into one hunk. Nothing was changed.")
    new = matching.splice(view, [(found, new_block) for found, (_, new_block) in zip(placed, blocks)])
    if new == old:
        raise ToolError(f"The patch leaves {rel} as it is; its hunks change nothing.")
    notes = []
    for number, (hunk, found, numbered) in enumerate(zip(patched, placed, has_numbers), start=1):
        shift = found.line - hunk.source_start
        if numbered and shift:
            notes.append(f"hunk {number} applied at line {found.line}, {abs(shift)} line{'s' if abs(shift) > 1 else ''} "
                         f"{'below' if shift > 0 else 'above'} its header's line {hunk.source_start}")
        if found.strategy != matching.EXACT:
            notes.append(f"hunk {number} matched with {found.strategy}")
    count = len(placed)
    details = "; ".join([f"{count} hunk{'s' if count > 1 else ''}", *notes])
    return new, f"modified {rel} ({details})"


def _place(view: matching.FileText, rel: str, number: int, hunk: Hunk, old_block: str,
           numbered: bool) -> matching.Found:
    """Where hunk ``number`` applies: its old text's match, the one nearest its header's line if several."""
    where = f"Hunk {number} of {rel} ({str(hunk).splitlines()[0]})"
    if not old_block:
        # Only line numbers could place it; that is trusted for an empty file alone.
        if view.norm:
            raise ToolError(f"{where} only adds lines and has no context lines to place it by. Include a few "
                            "unchanged lines around the addition. Nothing was changed.")
        return matching.Found(0, 0, 1, matching.EXACT)
    found = matching.locate(view, old_block, whole_lines=True)
    if not found:
        near = matching.closest(view, old_block)
        shown = f" The closest lines in the file are (line number, tab, text):\n{near}" if near else " Read the file again."
        raise ToolError(f"{where} does not match the file: its context and removed lines were not found."
                        f"{shown}\nNothing was changed.")
    if len(found) == 1:
        return found[0]
    distances = sorted(abs(f.line - hunk.source_start) for f in found)
    if not numbered or distances[0] == distances[1]:
        lines = matching.join_numbers(sorted({f.line for f in found}))
        raise ToolError(f"{where} matches {len(found)} places (lines {lines}); add context lines to make it unique. "
                        "Nothing was changed.")
    return min(found, key=lambda f: abs(f.line - hunk.source_start))
