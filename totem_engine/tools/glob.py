"""glob: the project's files whose paths match a glob pattern, newest first.

Two engines give the same answer: ripgrep (``rg --files --sortr modified``) when it can answer
for the project (workspace/ripgrep.py) and the folders the walk enters hold no symlink, a Python
walk (``walk_files``, which follows links that stay inside the project) otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from pydantic import Field

from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.vocab.accounts import short
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.paths import folder_glob, project_path, relative, resolve_in_project, root_of
from totem_engine.workspace.ripgrep import FLAGS, missing_note, ripgrep_for, run_ripgrep
from totem_engine.workspace.walk import glob_matcher, is_ignored, load_ignore, printable, start_rules, walk_files

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
    cut = _cut(root, start)
    found = []
    for rel in walk_files(root, start, follow_links=True):
        if matches(rel[cut:]):
            try:
                found.append((os.stat(root / rel).st_mtime, rel))
            except OSError:  # removed since the walk saw it
                continue
    return found


def _cut(root: Path, start: Path) -> int:
    """How much of a project-relative path is the search folder (the pattern matches the rest)."""
    start_rel = relative(root, start)
    return 0 if start_rel == "." else len(start_rel) + 1


async def newest_by_ripgrep(rg: str, root: Path, start: Path, pattern: str) -> list[str] | None:
    """The project-relative paths under ``start`` matching ``pattern``, newest first, as rg
    lists them; None when the tree holds a symlink (rg follows none; the walk follows those that
    stay in the project), which a scan of the folders run beside rg tells."""
    matches, cut, start_rel = glob_matcher(pattern), _cut(root, start), relative(root, start)
    listed: list[str] = []

    def take(line: bytes) -> None:
        rel = line.decode("utf-8", "surrogateescape").removeprefix("./")
        if matches(rel[cut:]):
            listed.append(rel)

    linked: list[bool] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _scan_for_links(root, start, linked))
        code, errors = await run_ripgrep([rg, "--files", *FLAGS, "--sortr", "modified", "--", start_rel], root, take)
    if linked[0]:
        return None
    if code == 2 and not listed:
        raise ToolError(f"ripgrep failed: {errors}")
    return listed


async def _scan_for_links(root: Path, start: Path, into: list[bool]) -> None:
    into.append(await anyio.to_thread.run_sync(_has_link, root, start, abandon_on_cancel=True))


def _has_link(root: Path, start: Path) -> bool:
    """Whether a folder under ``start`` that the walk enters (not hidden, not ignored) holds a
    symlink it would look at. Ignored folders are not entered: a pnpm project's ``node_modules``
    is all links, and the walk skips it anyway."""
    real_root = root.resolve()
    start_rel = relative(real_root, start)
    # The rules above the start folder and its own; below, a folder's .gitignore is read only
    # when its listing shows one (an open that fails for every folder costs more than the scan).
    rules, _ = start_rules(real_root, start)
    folders = [(str(start), "" if start_rel == "." else start_rel, rules)]
    while folders:
        folder, folder_rel, folder_rules = folders.pop()
        try:
            with os.scandir(folder) as scanned:
                entries = list(scanned)
        except OSError:
            continue
        if folder_rel != ("" if start_rel == "." else start_rel) and any(e.name == ".gitignore" for e in entries):
            folder_rules = folder_rules + load_ignore(Path(folder), folder_rel)
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = f"{folder_rel}/{entry.name}" if folder_rel else entry.name
            if entry.is_symlink():
                if not is_ignored(folder_rules, rel, entry.is_dir()):
                    return True
            elif entry.is_dir(follow_symlinks=False) and not is_ignored(folder_rules, rel, True):
                folders.append((entry.path, rel, folder_rules))
    return False


def newest_first(root: Path, listed: list[str], count: int) -> list[str]:
    """The first ``count`` of ``listed`` (newest first by rg) in the tool's order: newest first,
    then by path; files sharing the mtime at the cut are all looked at, so ties order alike."""
    head: list[tuple[float, str]] = []
    for rel in listed:
        try:
            mtime = os.stat(os.path.join(root, rel)).st_mtime
        except OSError:
            continue  # removed since rg listed it
        if len(head) >= count and mtime != head[-1][0]:
            break
        head.append((mtime, rel))
    head.sort(key=lambda item: (-item[0], item[1]))
    return [rel for _, rel in head[:count]]


@dataclass
class GlobAction(Action):
    target: Path | None = None
    pattern: str = ""

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.target is not None
        stat = await ctx.workspace.stat(self.target)
        rel = project_path(ctx.root, self.target)
        if stat is None:
            raise ToolError(f"{rel} does not exist.")
        if not stat.is_dir:
            raise ToolError(f"{rel} is a file; glob searches a folder (use read for one file).")
        root = root_of(ctx.root, self.target, ctx.extra_roots)  # an extra root's files: searched from it
        prefix = "" if root == ctx.root.resolve() else f"{root.as_posix()}/"  # and named by their absolute paths
        rg = await anyio.to_thread.run_sync(ripgrep_for, root, self.target)
        listed = await newest_by_ripgrep(rg, root, self.target, self.pattern) if rg else None
        if listed is not None:
            total, shown = len(listed), await anyio.to_thread.run_sync(newest_first, root, listed, MAX_RESULTS)
        else:
            found = await anyio.to_thread.run_sync(matching_files, root, self.target, self.pattern)
            found.sort(key=lambda item: (-item[0], item[1]))
            total, shown = len(found), [path for _, path in found[:MAX_RESULTS]]
        lines = [printable(prefix + path) for path in shown] or ["No files found"]
        if total > MAX_RESULTS:
            lines.append(
                f"[{total - MAX_RESULTS} more files match and are not shown; "
                f"these are the {MAX_RESULTS} newest. Narrow the pattern or path.]"
            )
        if not rg and (slower := missing_note()):
            lines.append(slower)
        engine = "ripgrep" if listed is not None else "python"
        return ToolResult(output="\n".join(lines), summary=f"{total} files", metadata={"engine": engine})


class GlobTool(Tool):
    name = "glob"
    hook_name = "Glob"
    surface = "minimal"
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
        target = await anyio.to_thread.run_sync(resolve_in_project, ctx.root, args.path or ".", ctx.extra_roots)
        rel = project_path(ctx.root, target)
        return GlobAction(
            title=f"Find {args.pattern} in {rel}",
            permission="read",
            patterns=[rel],
            always_pattern=folder_glob(rel),
            target=target,
            pattern=args.pattern,
        )
