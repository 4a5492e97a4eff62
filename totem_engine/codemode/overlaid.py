"""A script's command in the sandbox, over the project as the script left it, writing to its stage.

``StageScope`` is the command scope (command_changes.py) of one ``run()`` or ``tests()`` of a
script whose session has a sandbox: the command runs with the project overlaid, the overlay's
upper folder seeded with the staged files and the staged deletes removed inside the overlay
first, so it sees the script's edits; its close reads what the overlay then holds back into the
stage (sandbox/upper.py). Nothing reaches the project: what the command wrote is part of the
script's one change set, asked about, snapshotted and undone with the rest, and a script that
fails afterwards leaves the project as it was.

Each command gets a fresh overlay seeded from the stage, which is the one record of the script's
changes; what a stage does not hold (a folder left empty, a mode changed, a symbolic link, what
lands in ``.git`` or is ignored) does not reach the next command, nor the project; the result
names what was left out, but for the empty folders (tools leave them, pytest's ``.benchmarks``:
saying so would be noise).
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from totem_engine.codemode.staging import StagedWorkspace
from totem_engine.command_changes import OverlayScope
from totem_engine.file_changes import FileChange
from totem_engine.sandbox.session import SandboxSession
from totem_engine.sandbox.upper import DELETE_FIRST, read_back, seed
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.paths import relative, resolve_in_project

__all__ = ["StageScope"]


class StageScope(OverlayScope):
    """One command of a script in ``box``, the project ``root`` overlaid with ``stage``; ``open``
    before it runs. ``left_out``: after ``close``, what the command made that the stage did not
    take (a symbolic link, a file over ``max_file_bytes``, ``.git``, what the project ignores)."""

    def __init__(
        self, box: SandboxSession, stage: StagedWorkspace, root: Path, *, max_file_bytes: int, command: str,
        masked: tuple[Path, ...] = (),
    ):
        # The stage holds the project's files alone: the session's extra roots are shown read-only.
        super().__init__(box, root.resolve(), max_file_bytes=max_file_bytes, command=command, masked=masked,
                         extra_roots=False)
        self.stage = stage
        self.seeded: dict[str, bytes] = {}
        self.deletes: list[str] = []
        self.left_out: list[str] = []

    async def open(self) -> None:
        """The stage put into the overlay's upper folder, its deletes listed for the command's
        prelude; the overlay dropped if it cannot be."""
        for change in self.stage.changes():
            rel = relative(self.root, change.path)
            if change.after is None:
                self.deletes.append(rel)
            else:
                self.seeded[rel] = change.after
        try:
            await anyio.to_thread.run_sync(seed, self.upper, self.root, self.seeded)
            if self.deletes:
                await anyio.Path(self._delete_list).write_bytes(b"".join(os.fsencode(rel) + b"\0" for rel in self.deletes))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.drop()
            raise

    @property
    def _delete_list(self) -> Path:
        """In the session's /tmp, which the command sees as /tmp (the prelude removes it there)."""
        return self.box.tmp / f".totem-deletes-{self.upper.parent.name}"

    def argv(self, argv: list[str]) -> list[str]:
        if self.deletes:
            argv = ["/bin/sh", "-c", DELETE_FIRST, "sh", f"/tmp/{self._delete_list.name}", *argv]
        return super().argv(argv)

    async def take_in(self) -> list[FileChange]:
        """What the overlay holds, into the stage; nothing in the project changes."""
        found = await anyio.to_thread.run_sync(
            lambda: read_back(
                self.upper, self.root, seeded=set(self.seeded), deleted=set(self.deletes), max_file_bytes=self.max_file_bytes,
            )
        )
        outside = []
        for rel, data in found.written.items():
            target = self._in_project(rel)
            if target is None:
                outside.append(f"{rel} (its folder leads outside the project)")
            else:
                await self.stage.write_bytes(target, data)
        for rel in sorted(found.deleted):
            if await self.stage.stat(self.root / rel) is not None:
                await self.stage.delete(self.root / rel)
        self.left_out = sorted(found.left_out + outside)
        return []

    def _in_project(self, rel: str) -> Path | None:
        """Where writing ``rel`` lands: its folder's real path (a symbolic link in the project
        followed, as the write will follow it), its name as it is; None when that folder is
        outside the project (a command that put a folder of its own where the project links to
        one outside: the overlay's folder is not the link)."""
        parent, _, name = rel.rpartition("/")
        try:
            return (resolve_in_project(self.root, parent) if parent else self.root) / name
        except ToolError:
            return None

    def not_taken(self, exc: OSError) -> list[FileChange]:
        raise exc  # the stage is not what the command left: the script's call fails

    async def drop(self) -> None:
        self._delete_list.unlink(missing_ok=True)  # left when the command did not start
        await super().drop()
