"""What a command (``bash``, a job, a terminal) changed in the project, so undo can put it back.

A command is launched inside a ``CommandScope`` (``CommandChanges.scope``), which knows how to
launch it (``argv``) and, when asked (``take_in``), what it changed since the scope opened or
since the last take-in, as ``FileChange``s with the old and new bytes of each file. The tool round
(turn/calls.py) records them in the turn's change set (snapshots.py ``record_command_changes``)
and says which files changed. ``bash`` takes its changes in when the command ends; a job or a
terminal when it is read, waited for or stopped.

Without the sandbox a command writes the project directly, so the scope captures the working
tree before (``GitScope``, worktree_capture.py) and compares after; outside a git repository
nothing is kept and the change set says so (``UntrackedScope``: what the command changed is
"not restorable"). A file larger than ``max_file_bytes``, a symbolic link or a submodule is
recorded as not restorable too, by name.
"""

from __future__ import annotations

import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

import anyio

from totem_engine.worktree_capture import GitCapture, GitError, TreeChange

__all__ = ["CommandChanges", "CommandScope", "FileChange", "describe"]


@dataclass(frozen=True)
class FileChange:
    """One file a command changed: ``path`` project-relative ("/"), its bytes before and after
    (None: absent). ``unrestorable``: why undo cannot put it back (then the bytes are not kept);
    ``path`` is "" when the files themselves are not known (outside git)."""

    path: str
    before: bytes | None = None
    after: bytes | None = None
    unrestorable: str | None = None


class CommandScope(ABC):
    """Where one command (or one job, one terminal) runs, and what it changed."""

    def argv(self, argv: list[str]) -> list[str]:
        """How to launch ``argv`` in this scope (the sandbox wraps it)."""
        return argv

    @abstractmethod
    async def take_in(self) -> list[FileChange]:
        """What changed since the scope opened or since the last take-in, now in the project."""

    async def close(self) -> list[FileChange]:
        """The last take-in; the scope's resources released. Safe to call twice."""
        return await self.take_in()


class UntrackedScope(CommandScope):
    """Nothing kept (outside git, or the capture failed): the first take-in of a command that
    may change files says that what it changed cannot be put back."""

    def __init__(self, reason: str, may_change: bool):
        self.reason = reason
        self._said = not may_change

    async def take_in(self) -> list[FileChange]:
        if self._said:
            return []
        self._said = True
        return [FileChange("", unrestorable=self.reason)]


class GitScope(CommandScope):
    """The working tree captured as a git tree when it opens and at each take-in."""

    def __init__(self, capture: GitCapture, tree: str, *, max_file_bytes: int, command: str):
        self.capture = capture
        self.tree = tree
        self.max_file_bytes = max_file_bytes
        self.command = command

    async def take_in(self) -> list[FileChange]:
        return await self._compare(keep=True)

    async def close(self) -> list[FileChange]:
        return await self._compare(keep=False) if self.tree else []

    async def _compare(self, *, keep: bool) -> list[FileChange]:
        try:
            found, now = await self.capture.changed_since(self.tree, keep=keep)
            self.tree = now or ""  # "": closed, nothing more to compare
            return await file_changes(self.capture, found, self.max_file_bytes)
        except (GitError, OSError) as exc:
            self.tree = ""
            return [FileChange("", unrestorable=f"what `{_short(self.command)}` changed could not be captured: {exc}")]


async def file_changes(capture: GitCapture, found: list[TreeChange], max_file_bytes: int) -> list[FileChange]:
    """The tree changes as file changes with their bytes; symbolic links, submodules and files
    over ``max_file_bytes`` by name only, as not restorable."""
    blobs = [b for change in found for b in (change.before, change.after) if b is not None]
    sizes = await capture.sizes(blobs)
    changes: list[FileChange] = []
    kept: list[TreeChange] = []
    for change in found:
        if not change.regular:
            changes.append(FileChange(change.path, unrestorable="a symbolic link or a submodule: undo keeps regular files only"))
            continue
        size = max(sizes.get(change.before, 0) if change.before else 0, sizes.get(change.after, 0) if change.after else 0)
        if size > max_file_bytes:
            changes.append(FileChange(change.path, unrestorable=f"{size} bytes, over the {max_file_bytes}-byte limit of undo"
                                      " ([snapshots] max_file_bytes)"))
            continue
        kept.append(change)
    data = await capture.read([b for change in kept for b in (change.before, change.after) if b is not None])
    for change in kept:
        before = data[change.before] if change.before else None
        after = data[change.after] if change.after else None
        if before != after:  # a mode change alone is not a change of content
            changes.append(FileChange(change.path, before, after))
    return sorted(changes, key=lambda c: c.path)


class CommandChanges:
    """The command scopes of one project (``root``): one git capture for all its sessions, made
    at the first command (None outside git). ``max_file_bytes``: the largest file kept for undo."""

    def __init__(self, root: Path, *, max_file_bytes: int):
        self.root = root
        self.max_file_bytes = max_file_bytes
        self._capture: GitCapture | None = None
        self._looked = False
        self._lock = anyio.Lock()

    async def scope(self, session_id: str, *, command: str, may_change: bool, long_lived: bool = False) -> CommandScope:
        """A scope for ``command`` of ``session_id`` (``may_change``: it is not a read-only
        command; ``long_lived``: a job or a terminal, read while it runs), its before-state
        captured."""
        capture = await self._git()
        if capture is None:
            return UntrackedScope(
                f"the project is not a git repository, so what `{_short(command)}` changed was not kept", may_change,
            )
        try:
            tree = await capture.tree()
        except (GitError, OSError) as exc:
            return UntrackedScope(f"the project could not be captured before `{_short(command)}`: {exc}", may_change)
        return GitScope(capture, tree, max_file_bytes=self.max_file_bytes, command=command)

    async def _git(self) -> GitCapture | None:
        async with self._lock:
            if not self._looked:
                self._looked = True
                state = Path(tempfile.mkdtemp(prefix="totem-capture-"))
                self._capture = await GitCapture.open(self.root, state)
                if self._capture is None:
                    state.rmdir()
            return self._capture

    async def aclose(self) -> None:
        if self._capture is not None:
            await self._capture.aclose()


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


def _short(command: str, limit: int = 60) -> str:
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
