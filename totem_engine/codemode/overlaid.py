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
names what was left out, but for the empty folders and the modes.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from totem_engine.codemode.staging import StagedWorkspace
from totem_engine.command_changes import CommandScope
from totem_engine.file_changes import FileChange
from totem_engine.sandbox.session import SandboxSession
from totem_engine.sandbox.upper import DELETE_FIRST, read_back, seed
from totem_engine.tools.paths import relative

__all__ = ["StageScope"]


class StageScope(CommandScope):
    """One command of a script in ``box``, the project ``root`` overlaid with ``stage``; ``open``
    before it runs. ``left_out``: after ``close``, what the command made that the stage did not
    take (a symbolic link, a file over ``max_file_bytes``, ``.git``, what the project ignores)."""

    def __init__(self, box: SandboxSession, stage: StagedWorkspace, root: Path, *, max_file_bytes: int):
        self.box = box
        self.stage = stage
        self.root = root.resolve()
        self.max_file_bytes = max_file_bytes
        self.upper, self.work = box.new_overlay()
        self.seeded: dict[str, bytes] = {}
        self.deletes: list[str] = []
        self.left_out: list[str] = []
        self._closed = False

    async def open(self) -> None:
        """The stage put into the overlay's upper folder; the overlay dropped if it cannot be."""
        for change in self.stage.changes():
            rel = relative(self.root, change.path)
            if change.after is None:
                self.deletes.append(rel)
            else:
                self.seeded[rel] = change.after
        try:
            await anyio.to_thread.run_sync(seed, self.upper, self.root, self.seeded)
        except BaseException:
            self._closed = True
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.box.drop_overlay, self.upper)
            raise

    def argv(self, argv: list[str]) -> list[str]:
        if self.deletes:
            argv = ["/bin/sh", "-c", DELETE_FIRST, "sh", str(len(self.deletes)), *self.deletes, *argv]
        return self.box.wrap(argv, overlay=(self.upper, self.work))

    async def take_in(self) -> list[FileChange]:
        """What the overlay holds, into the stage; nothing in the project changes."""
        found = await anyio.to_thread.run_sync(
            lambda: read_back(self.upper, self.root, seeded=set(self.seeded), max_file_bytes=self.max_file_bytes)
        )
        for rel, data in found.written.items():
            await self.stage.write_bytes(self.root / rel, data)
        for rel in sorted(found.deleted):
            if await self.stage.stat(self.root / rel) is not None:
                await self.stage.delete(self.root / rel)
        self.left_out = found.left_out
        return []

    async def close(self) -> list[FileChange]:
        if self._closed:
            return []
        self._closed = True
        try:
            return await self.take_in()
        finally:
            await anyio.to_thread.run_sync(self.box.drop_overlay, self.upper)
