"""The staged view of the project a script works on: its writes and deletes kept aside.

``StagedWorkspace`` is a Workspace (workspace/files.py) over the run's own one: reads see what
the script staged, else the project as the run's workspace shows it (the editor's unsaved
buffers included); writes, deletes and renames change only the stage. So the file tools run
unchanged against it (confinement, tolerant edit matching, binary refusal, the BOM), and when
the script ends well, ``changes`` is its change set, applied as one (tools/run_script.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from totem_engine.workspace.files import FileStat, Workspace


@dataclass(frozen=True)
class StagedChange:
    """One file of the change set: ``before`` as the project held it when first staged (None:
    absent), ``after`` as the script left it (None: deleted)."""

    path: Path
    before: bytes | None
    after: bytes | None


class StagedWorkspace:
    def __init__(self, base: Workspace):
        self.base = base
        self._staged: dict[Path, bytes | None] = {}  # absolute path -> bytes, or None: deleted
        self._before: dict[Path, bytes | None] = {}

    async def _remember(self, path: Path) -> None:
        if path not in self._before:
            stat = await self.base.stat(path)
            self._before[path] = None if stat is None or stat.is_dir else await self.base.read_bytes(path)

    async def read_bytes(self, path: Path) -> bytes:
        if path in self._staged:
            data = self._staged[path]
            if data is None:
                raise FileNotFoundError(2, "No such file or directory", str(path))
            return data
        return await self.base.read_bytes(path)

    async def write_bytes(self, path: Path, data: bytes) -> None:
        await self._remember(path)
        self._staged[path] = data

    async def delete(self, path: Path) -> None:
        if await self.stat(path) is None:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        await self._remember(path)
        self._staged[path] = None

    async def rename(self, source: Path, target: Path) -> None:
        data = await self.read_bytes(source)
        await self.delete(source)
        await self.write_bytes(target, data)

    async def stat(self, path: Path) -> FileStat | None:
        if path in self._staged:
            data = self._staged[path]
            return None if data is None else FileStat(is_dir=False, size=len(data), mtime=0.0)
        found = await self.base.stat(path)
        if found is None and any(path in p.parents for p, data in self._staged.items() if data is not None):
            return FileStat(is_dir=True, size=0, mtime=0.0)  # a folder only staged files are in
        return found

    async def list_dir(self, path: Path) -> list[tuple[str, bool]]:
        entries = dict(await self.base.list_dir(path)) if await self.base.stat(path) is not None else {}
        for staged, data in self._staged.items():
            if staged.parent == path:
                if data is None:
                    entries.pop(staged.name, None)
                else:
                    entries[staged.name] = False
            elif data is not None and path in staged.parents:
                entries[staged.relative_to(path).parts[0]] = True
        return sorted(entries.items())

    async def unsaved(self) -> list[Path]:
        return await self.base.unsaved()

    def clear(self) -> None:
        """Forget the stage (it was written to the project)."""
        self._staged.clear()
        self._before.clear()

    def changes(self) -> list[StagedChange]:
        """What the script changed, in the order it first touched each file; a file put back as
        it was (or created then deleted) is no change."""
        found = [StagedChange(path, self._before[path], after) for path, after in self._staged.items()]
        return [change for change in found if change.before != change.after]
