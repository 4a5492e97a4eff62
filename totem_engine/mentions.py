"""The files a request names, shown to a small model with the request (docs/decisions.md).

A small model on a laptop pays seconds for every round and often skips reading a file before
changing it, so the turn's first request carries what it needs: the project's file list and the
content of every file the user's message names ("fix calc.py", "in src/app.py"), as aider's
chat files and Claude Code's @-mentions do. A name counts when it is a project file's relative
path, or the base name of exactly one project file. The files go in within ``budget`` characters,
in the order they are named; the rest are listed as too large to show, to be read with a tool.
In a small project (``SMALL_PROJECT`` files at most) the other files of the same kinds follow
on the first turn, within ``others_budget``: the module a named file imports is then in view,
as the files a user adds to aider's chat are.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from totem_engine.tools.read import looks_binary
from totem_engine.tools.walk import walk_files
from totem_engine.written_history import file_block

LISTED_FILES = 60  # the file list stops here, saying how many more there are
SMALL_PROJECT = 20
_NAME = re.compile(r"[\w./-]*\w\.\w+")


@dataclass
class Mentions:
    """``text``: the block that follows the user's message; ``shown``: (path, bytes) of each file
    whose content is in it, for the read ledger (they count as read); ``named``: the files the
    message names."""

    text: str
    shown: list[tuple[str, bytes]] = field(default_factory=list)
    named: list[str] = field(default_factory=list)


def project_files(root: Path, limit: int = 5000) -> list[str]:
    """The project's files (ignore files respected), sorted, at most ``limit``."""
    found: list[str] = []
    for rel in walk_files(root, root, follow_links=False):
        found.append(rel)
        if len(found) >= limit:
            break
    return sorted(found)


def named_files(text: str, files: list[str]) -> list[str]:
    """The project files ``text`` names, in order of first mention."""
    by_base: dict[str, list[str]] = {}
    for rel in files:
        by_base.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
    known = set(files)
    named: list[str] = []
    for token in _NAME.findall(text):
        token = token.removeprefix("./").strip(".")
        rel = token if token in known else (by_base.get(token) or [None, None])
        if isinstance(rel, list):
            rel = rel[0] if len(rel) == 1 else None
        if rel and rel not in named:
            named.append(rel)
    return named


async def mentions(
    root: Path,
    text: str,
    *,
    budget: int,
    read: Callable[[Path], Awaitable[bytes]],
    files: list[str],
    listing: bool,
    others_budget: int = 0,
) -> Mentions | None:
    """The block for a message: the file list when ``listing``, then the files it names within
    ``budget`` characters, then (``listing`` in a small project) the other files of their kinds
    within ``others_budget``; None when there is nothing to add. ``read`` reads a file as the
    editor sees it (unsaved buffers included)."""
    lines = []
    if listing and files:
        lines.append(f"Files in the project ({len(files)}): " + ", ".join(files[:LISTED_FILES]))
        if len(files) > LISTED_FILES:
            lines[0] += f", and {len(files) - LISTED_FILES} more"
    result = Mentions("", named=named_files(text, files))
    for rel in result.named:
        shown = await _show(root, rel, read, budget)
        if shown is None:
            lines.append(f"{rel} is too large to show here; read it with the read tool.")
            continue
        budget -= len(shown[0])
        lines.append(shown[0])
        result.shown.append((rel, shown[1]))
    kinds = {_kind(rel) for rel in result.named}
    if listing and len(files) <= SMALL_PROJECT and kinds:
        for rel in files:
            if rel in result.named or _kind(rel) not in kinds:
                continue
            shown = await _show(root, rel, read, others_budget)
            if shown is not None:
                others_budget -= len(shown[0])
                lines.append(shown[0])
                result.shown.append((rel, shown[1]))
    if not lines:
        return None
    result.text = "\n\n".join(lines)
    return result


def _kind(rel: str) -> str:
    return rel.rsplit(".", 1)[-1] if "." in rel.rsplit("/", 1)[-1] else ""


async def _show(root: Path, rel: str, read: Callable[[Path], Awaitable[bytes]], budget: int) -> tuple[str, bytes] | None:
    """``rel`` as a path line and a fenced block, with its bytes; None when it cannot be read, is
    binary or is longer than ``budget`` characters."""
    try:
        data = await read(root / rel)
    except OSError:
        return None
    content = data.decode("utf-8", errors="replace")
    if looks_binary(data) or len(content) > budget:
        return None
    return file_block(rel, content), data
