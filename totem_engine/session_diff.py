"""What a session changed in its project, as unified diffs, from its snapshots (snapshots.py).

Each file the session's turns changed (undone turns left out) is shown from its state before the
session's first change of it to its state after the last, as the snapshots recorded them, not
as the disk holds it now: ``changed_since`` says when the file no longer holds what the session
left there (the user or another tool changed it since).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from totem_engine.snapshots import Snapshots
from totem_engine.workspace.diff import unified_diff
from totem_engine.workspace.files import Workspace

__all__ = ["FileDiff", "session_diff"]


@dataclass(frozen=True)
class FileDiff:
    """One changed file: ``path`` project-relative with "/"; ``diff`` the unified diff in git's
    form ("" for a binary file, or one whose stored state was pruned: ``missing``)."""

    path: str
    change: Literal["added", "modified", "deleted"]
    diff: str
    binary: bool = False
    changed_since: bool = False
    missing: bool = False


async def session_diff(
    snapshots: Snapshots, workspace: Workspace, root: Path, session_id: str, *, turn_id: str | None = None
) -> list[FileDiff]:
    """The session's changes (one turn's with ``turn_id``), one ``FileDiff`` per file by path."""
    found: list[FileDiff] = []
    for path, before, after in await snapshots.session_changes(session_id=session_id, turn_id=turn_id):
        change: Literal["added", "modified", "deleted"] = "added" if before is None else "deleted" if after is None else "modified"
        try:
            old = None if before is None else await snapshots.blob(before)
            new = None if after is None else await snapshots.blob(after)
        except OSError:
            found.append(FileDiff(path, change, "", missing=True))
            continue
        changed_since = await _current(workspace, root / path) != new
        texts = [_text(data) for data in (old, new)]
        if any(data is not None and text is None for data, text in zip((old, new), texts)):
            found.append(FileDiff(path, change, "", binary=True, changed_since=changed_since))
            continue
        found.append(FileDiff(path, change, unified_diff(path, texts[0], texts[1]), changed_since=changed_since))
    return found


async def _current(workspace: Workspace, path: Path) -> bytes | None:
    st = await workspace.stat(path)
    if st is None or st.is_dir:
        return None
    return await workspace.read_bytes(path)


def _text(data: bytes | None) -> str | None:
    """The file's text (UTF-8), or None for none or bytes that are not text."""
    if data is None or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
