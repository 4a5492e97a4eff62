"""glob: the project's files whose paths match a glob pattern, newest first."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from pydantic import Field

from totem_engine.tools.base import Action, Tool, ToolContext, ToolError, ToolInput, ToolResult, short
from totem_engine.tools.paths import folder_glob, relative, resolve_in_project
from totem_engine.tools.walk import glob_matcher, printable, walk_files

MAX_RESULTS = 100


class GlobInput(ToolInput):
    pattern: str = Field(
        min_length=1,
        description="Glob matched against paths under `path`, e.g. `**/*.py`, `src/**/*.ts`, `*.{md,txt}`. "
        "A pattern without `/` matches file names at any depth.",
    )
    path: str | None = Field(None, description="Folder to search, relative to the project root (default: the root).")


def check_pattern(pattern: str) -> None:
    """Refuse patterns that can never match a path below the search folder."""
    if pattern.startswith("/"):
        raise ToolError("The pattern is matched against paths relative to `path`; give the folder as `path`, not a leading /.")
    if ".." in pattern.split("/"):
        raise ToolError("The pattern cannot go up with `..`; give the folder to search as `path`.")


def matching_files(root: Path, start: Path, pattern: str) -> list[tuple[float, str]]:
    """``[(mtime, project-relative path)]`` of the files under ``start`` matching ``pattern``."""
    matches = glob_matcher(pattern)
    start_rel = relative(root, start)
    cut = 0 if start_rel == "." else len(start_rel) + 1
    found = []
    for rel in walk_files(root, start, follow_links=True):
        if matches(rel[cut:]):
            try:
                found.append((os.stat(root / rel).st_mtime, rel))
            except OSError:  # removed since the walk saw it
                continue
    return found


@dataclass
class GlobAction(Action):
    target: Path | None = None
    pattern: str = ""

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.target is not None
        stat = await ctx.workspace.stat(self.target)
        rel = relative(ctx.root, self.target)
        if stat is None:
            raise ToolError(f"{rel} does not exist.")
        if not stat.is_dir:
            raise ToolError(f"{rel} is a file; glob searches a folder (use read for one file).")
        found = await anyio.to_thread.run_sync(matching_files, ctx.root.resolve(), self.target, self.pattern)
        if not found:
            return ToolResult(output="No files found", summary="0 files")
        found.sort(key=lambda item: (-item[0], item[1]))
        lines = [printable(path) for _, path in found[:MAX_RESULTS]]
        if len(found) > MAX_RESULTS:
            lines.append(
                f"[{len(found) - MAX_RESULTS} more files match and are not shown; "
                f"these are the {MAX_RESULTS} newest. Narrow the pattern or path.]"
            )
        return ToolResult(output="\n".join(lines), summary=f"{len(found)} files")


class GlobTool(Tool):
    name = "glob"
    read_only = True
    Input = GlobInput

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        """"3 files matching '*.py'"."""
        pattern = short(args.get("pattern", "?"), 60)
        found = [line for line in output.splitlines() if line and not line.startswith("[")]
        count = 0 if output.startswith("No files found") else len(found)
        return f"{count} files matching '{pattern}'"

    async def prepare(self, args: GlobInput, ctx: ToolContext) -> Action:
        check_pattern(args.pattern)
        target = await anyio.to_thread.run_sync(resolve_in_project, ctx.root, args.path or ".")
        rel = relative(ctx.root, target)
        return GlobAction(
            title=f"Find {args.pattern} in {rel}",
            permission="read",
            patterns=[rel],
            always_pattern=folder_glob(rel),
            target=target,
            pattern=args.pattern,
        )
