"""The files a request names, shown to a small model with the request (docs/decisions.md).

A small model on a laptop pays seconds for every round and often skips reading a file before
changing it, so the turn's first request carries what it needs: the project's file list and the
content of every file the user's message names ("fix calc.py", "in src/app.py"), as aider's
chat files and Claude Code's @-mentions do. A name counts when it is a project file's relative
path, or the base name of exactly one project file. The files go in within ``budget`` characters,
in the order they are named; the rest are listed as too large to show, to be read with a tool.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from totem_engine.tools.read import looks_binary
from totem_engine.tools.walk import walk_files

LISTED_FILES = 60  # the file list stops here, saying how many more there are
_NAME = re.compile(r"[\w./-]*\w\.\w+")


@dataclass
class Mentions:
    """``text``: the block that follows the user's message; ``shown``: (path, bytes) of each file
    whose content is in it, for the read ledger (they count as read)."""

    text: str
    shown: list[tuple[str, bytes]] = field(default_factory=list)


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
) -> Mentions | None:
    """The block for a message: the file list when ``listing``, then the files it names within
    ``budget`` characters; None when there is nothing to add. ``read`` reads a file as the editor
    sees it (unsaved buffers included)."""
    lines = []
    if listing and files:
        lines.append(f"Files in the project ({len(files)}): " + ", ".join(files[:LISTED_FILES]))
        if len(files) > LISTED_FILES:
            lines[0] += f", and {len(files) - LISTED_FILES} more"
    result = Mentions("")
    for rel in named_files(text, files):
        try:
            data = await read(root / rel)
        except OSError:
            continue
        content = data.decode("utf-8", errors="replace")
        if looks_binary(data) or len(content) > budget:
            lines.append(f"{rel} is too large to show here; read it with the read tool.")
            continue
        budget -= len(content)
        fence = "````" if "```" in content else "```"
        lines.append(f"{rel}\n{fence}\n{content.rstrip()}\n{fence}")
        result.shown.append((rel, data))
    if not lines:
        return None
    result.text = "\n\n".join(lines)
    return result
