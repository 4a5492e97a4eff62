"""read: numbered lines of a text file, the entries of a directory, or an image (PNG, JPEG, GIF,
WebP) as an attachment of the result, which a model that sees images gets once (images.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import anyio
from pydantic import Field

from totem_engine.images import AttachmentError, image_from_bytes, sniff
from totem_engine.tools import instructions
from totem_engine.tools.base import Action, Bounded, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.tools.freshness import content_hash, mark_seen
from totem_engine.vocab.accounts import first_line, short
from totem_engine.vocab.messages import size_text
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.paths import closest_paths, folder_glob, project_path, resolve_in_project

DEFAULT_LIMIT = 2000
MAX_LINE = 2000
LARGE_FILE = 8 * 1024 * 1024  # bytes: above this a file is read line by line, never whole
MAX_OUTPUT = 50_000  # characters, when the model's window is unknown (ToolContext.output_budget)


class ReadInput(ToolInput):
    path: str = Field(description="Path of a file or directory, relative to the project root.")
    offset: Annotated[int | None, Bounded(default=1, maximum=10**9)] = Field(
        None, description="First line to read, 1-based."
    )
    limit: Annotated[int | None, Bounded(default=DEFAULT_LIMIT, maximum=DEFAULT_LIMIT)] = Field(
        None, description=f"Number of lines to read (at most {DEFAULT_LIMIT})."
    )


def looks_binary(data: bytes) -> bool:
    if b"\x00" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as git and grep number them: cut at "\\n" only ("\\r\\n" too).

    ``str.splitlines`` also cuts at \\f, \\v, \\x1c-\\x1e, \\x85, \\u2028 and \\u2029, which would
    number lines differently from every other tool and drop those characters from the output.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def number_lines(text: str, offset: int, limit: int, budget: int = MAX_OUTPUT) -> tuple[str, list[str]]:
    """Lines ``offset``..``offset+limit-1`` as ``N\\tline``, with notes on what was cut."""
    lines = split_lines(text)
    start = offset - 1
    chosen = lines[start : start + limit]
    notes: list[str] = []
    out: list[str] = []
    size = 0
    for number, line in enumerate(chosen, start=offset):
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE] + f"... [line cut at {MAX_LINE} characters]"
        entry = f"{number}\t{line}"
        if size + len(entry) > budget:
            notes.append(f"Output cut at line {number - 1} ({budget} characters); read on with offset={number}.")
            break
        out.append(entry)
        size += len(entry) + 1
    else:
        last = start + len(chosen)
        if last < len(lines):
            notes.append(f"File has {len(lines)} lines; showed {offset}-{last}. Read on with offset={last + 1}.")
    if start >= len(lines) and lines:
        notes.append(f"offset {offset} is past the end: the file has {len(lines)} lines.")
    return "\n".join(out), notes


@dataclass
class ReadAction(Action):
    target: Path | None = None
    args: ReadInput | None = None
    rel: str = ""  # the target's project-relative path

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.target is not None and self.args is not None
        rel = self.rel
        stat = await ctx.workspace.stat(self.target)
        if stat is None:
            near = await anyio.to_thread.run_sync(closest_paths, ctx.root, rel)
            hint = f" Did you mean: {', '.join(near)}?" if near else ""
            raise ToolError(f"{rel} does not exist.{hint}")
        if stat.is_dir:
            entries = await ctx.workspace.list_dir(self.target)
            listing = "\n".join(f"{name}/" if is_dir else name for name, is_dir in entries)
            return ToolResult(output=listing or "(empty directory)", summary=f"{len(entries)} entries")
        if stat.size > LARGE_FILE:
            return await anyio.to_thread.run_sync(read_large, self.target, rel, self.args, ctx.output_budget, self.notes)
        data = await ctx.workspace.read_bytes(self.target)
        if sniff(data) is not None:
            return image_result(rel, data)
        if looks_binary(data):
            return ToolResult(
                output=f"{rel} is a binary file ({_kind(data)}, {len(data)} bytes); its bytes are not shown.",
                summary=f"binary, {len(data)} bytes",
            )
        if _shown_as_is(ctx, rel, data):
            return ToolResult(
                output=f"{rel} is shown above, with the request, and has not changed since: what is shown there is "
                "current, and reading it again shows nothing more.",
                summary="shown with the request, unchanged",
            )
        text = data.decode("utf-8").removeprefix("\ufeff")
        mark_seen(ctx, rel, data)
        body, notes = number_lines(text, self.args.offset or 1, self.args.limit or DEFAULT_LIMIT, ctx.output_budget)
        total = len(split_lines(text))
        parts = [body or ("(empty file)" if total == 0 else "(no lines shown)"), *(f"[{n}]" for n in self.notes + notes)]
        attached = await instructions.attach_for(ctx, self.target)
        if attached:
            parts.append(attached)
        return ToolResult(output="\n".join(parts), summary=f"{total} lines")


def image_result(rel: str, data: bytes) -> ToolResult:
    """An image file's result: a line saying so, with the image attached (its caption follows the
    line in every request, history.py); one too large to attach is only described."""
    try:
        image = image_from_bytes(data, rel)
    except AttachmentError as exc:
        return ToolResult(output=f"Image file {rel}, not attached: {exc}.", summary=f"image, {size_text(len(data))}, not attached")
    shape = f"{image.width}x{image.height}, " if image.width and image.height else ""
    return ToolResult(output=f"Image file {rel}.", summary=f"{image.format} image, {shape}{size_text(image.size)}", attachments=[image])


def _shown_as_is(ctx: ToolContext, rel: str, data: bytes) -> bool:
    """Whether ``rel`` was shown with this turn's request (mentions.py) and is still ``data``: a
    small model rereads such files round after round instead of acting on them."""
    return ctx.reads is not None and ctx.reads.shown.get(rel) == content_hash(data)


def read_large(path: Path, rel: str, args: ReadInput, budget: int, notes: list[str]) -> ToolResult:
    """A file too large to hold in memory, read line by line from the disk: only the lines asked
    for are kept. (It is never marked as seen: a whole-file rewrite of it stays refused.)"""
    offset, limit = args.offset or 1, args.limit or DEFAULT_LIMIT
    shown: list[str] = []
    size = 0
    total = 0
    cut_at: int | None = None
    with path.open("rb") as handle:
        head = handle.read(8192)
        # Judged up to the last full line, so a character cut at 8 KB is not taken for binary.
        if looks_binary(head[: max(head.rfind(b"\n"), 0) or len(head)]):
            return ToolResult(
                output=f"{rel} is a binary file ({_kind(head)}, {path.stat().st_size} bytes); its bytes are not shown.",
                summary="binary",
            )
        handle.seek(0)
        for number, raw in enumerate(handle, start=1):
            total = number
            if number < offset or len(shown) >= limit or cut_at is not None:
                continue
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if len(line) > MAX_LINE:
                line = line[:MAX_LINE] + f"... [line cut at {MAX_LINE} characters]"
            entry = f"{number}\t{line}"
            if size + len(entry) > budget:
                cut_at = number
                continue
            shown.append(entry)
            size += len(entry) + 1
    last = offset + len(shown) - 1
    found = [*notes, f"The file is large ({total} lines); showed {offset}-{last}. Read on with offset={last + 1}."]
    if cut_at is not None:
        found.append(f"Output cut at line {cut_at - 1} ({budget} characters).")
    return ToolResult(output="\n".join([*shown, *(f"[{n}]" for n in found)]), summary=f"{total} lines")


def _kind(data: bytes) -> str:
    if data.startswith(b"\x7fELF"):
        return "ELF executable"
    if data.startswith(b"\x89PNG"):
        return "PNG image"
    if data.startswith(b"%PDF"):
        return "PDF document"
    if data.startswith(b"PK\x03\x04"):
        return "zip archive"
    return "binary data"


class ReadTool(Tool):
    name = "read"
    hook_name = "Read"
    surface = "minimal"
    read_only = True
    Input = ReadInput

    async def prepare(self, args: ReadInput, ctx: ToolContext) -> Action:
        # The relative path in the same thread hop: ``relative`` resolves the root, on the disk.
        target, rel = await anyio.to_thread.run_sync(_resolved, ctx.root, args.path, ctx.extra_roots)
        return ReadAction(
            title=f"Read {rel}",
            permission="read",
            patterns=[rel],
            always_pattern=folder_glob(rel),
            notes=list(args.notes),
            target=target,
            args=args,
            rel=rel,
        )

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        """"read a.py (348 lines)", "read a.py lines 1-20 of 900", "listed src (12 entries)"."""
        path = str(args.get("path", "?"))
        if is_error:
            return f"read {path}: {short(first_line(output), 120)}"
        first, last = numbered_span(output)
        if first:
            total = _FILE_HAS.search(output[-1000:])
            if total:
                return f"read {path} lines {first}-{last} of {total.group(1)}"
            if first > 1:
                return f"read {path} lines {first}-{last}"
            return f"read {path} ({last} lines)"
        if "is a binary file" in output:
            return f"read {path} (binary file)"
        if output.startswith("Image file "):
            return f"read {path} ({summary or 'image'})"
        if output == "(empty file)":
            return f"read {path} (empty file)"
        return f"listed {path} ({len(output.splitlines())} entries)"

    def cut_note(self, args: dict[str, Any], kept: str, total_chars: int) -> str:
        last = numbered_span(kept)[1]
        offset = last + 1 if last else int(args.get("offset") or 1)
        return (
            f"[Cut to fit the context window: {len(kept)} of {total_chars} characters shown. "
            f"Read on with offset={offset} and a smaller limit.]"
        )


def _resolved(root: Path, path: str, extra_roots: tuple[Path, ...]) -> tuple[Path, str]:
    target = resolve_in_project(root, path, extra_roots)
    return target, project_path(root, target)


_NUMBERED = re.compile(r"^(\d+)\t", re.MULTILINE)
_FILE_HAS = re.compile(r"File has (\d+) lines")


def numbered_span(output: str) -> tuple[int, int]:
    """The first and last line numbers of a read's ``N\tline`` output; (0, 0) when it has none."""
    head = _NUMBERED.match(output)
    if head is None:
        return 0, 0
    end = len(output)
    while end > 0:
        start = output.rfind("\n", 0, end) + 1
        found = _NUMBERED.match(output, start, end)
        if found:
            return int(head.group(1)), int(found.group(1))
        end = start - 1
    return int(head.group(1)), int(head.group(1))
