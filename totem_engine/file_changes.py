"""What a command changed in the project, one file at a time, and how a result says it.

Made by the command scopes (command_changes.py: a git capture; sandbox/overlay.py: an overlay
taken in), recorded by the snapshots (``Snapshots.record_command_changes``) and named in the
tool's result by the tool round (turn/calls.py).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FileChange", "describe"]


@dataclass(frozen=True)
class FileChange:
    """One file a command changed: ``path`` project-relative ("/"), its bytes before and after
    (None: absent). ``unrestorable``: why undo cannot put it back (then the bytes are not kept);
    ``path`` is "" when the files themselves are not known (outside git)."""

    path: str
    before: bytes | None = None
    after: bytes | None = None
    unrestorable: str | None = None


def describe(changes: list[FileChange]) -> list[str]:
    """The lines a result adds: ``Changed by the command: a.txt, new.txt (new), old.txt
    (deleted)`` and ``Not restorable by undo: big.bin (…)``."""
    kept = [c for c in changes if not c.unrestorable]
    lines = []
    if kept:
        names = [c.path + (" (new)" if c.before is None else " (deleted)" if c.after is None else "") for c in kept]
        lines.append("Changed by the command: " + ", ".join(names))
    for change in changes:
        if change.unrestorable:
            lines.append(f"Not restorable by undo: {change.path + ' ' if change.path else ''}({change.unrestorable})")
    return lines
