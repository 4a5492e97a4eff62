"""The project's secret files (the ``read`` tool's rule, permissions.py ``is_secret``), kept current.

A sandboxed command the user did not allow (one the read-only default let run) gets each of
them replaced by an empty file (bwrap.py ``Mounts.masked``), so no argument shape of ``grep``,
``diff`` or anything else reaches their contents. The list must hold every such file, the
ignored ones too (``.env`` is in most ``.gitignore`` files), so the walk honours no ignore rule;
it skips only ``.git``.

Walking a large project on every command would cost (125,000 entries: about 1.9 s here), so the
first walk lists every folder and remembers its modification time, and each later ``refresh``
only stats the folders (13,000 of them: about 80 ms) and lists again those whose time moved:
creating, deleting or renaming a file changes its folder's time. A folder listed within
``_RACY`` seconds of its last change is listed again next time, since a change in the same tick
of the file system's clock would leave its time as it was (git's "racy" rule). Symbolic links
to folders are not followed (a folder outside the project is not the project's). Blocking: call
it in a worker thread, one call at a time.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from totem_engine.permissions import is_secret

__all__ = ["SecretFiles"]

_RACY = 2_000_000_000  # ns: a file system with two-second times (FAT) is the coarsest one


@dataclass(frozen=True)
class _Listed:
    """One folder as its last listing found it."""

    mtime: int
    listed_at: int
    secrets: tuple[str, ...]
    folders: tuple[str, ...]


class SecretFiles:
    """The secret files under ``root`` (a real path)."""

    def __init__(self, root: Path):
        self.root = root
        self._folders: dict[str, _Listed] = {}

    def refresh(self) -> list[Path]:
        """Every secret file under the root now, by absolute path."""
        seen: dict[str, _Listed] = {}
        found: list[Path] = []
        stack = [str(self.root)]
        while stack:
            folder = stack.pop()
            listed = self._current(folder)
            if listed is None:
                continue
            seen[folder] = listed
            found += [Path(folder, name) for name in listed.secrets]
            stack += [os.path.join(folder, name) for name in listed.folders]
        self._folders = seen
        return sorted(found)

    def _current(self, folder: str) -> _Listed | None:
        try:
            mtime = os.lstat(folder).st_mtime_ns
        except OSError:
            return None
        known = self._folders.get(folder)
        if known is not None and known.mtime == mtime and known.listed_at - mtime > _RACY:
            return known
        return _list(folder, mtime)


def _list(folder: str, mtime: int) -> _Listed | None:
    listed_at = time.time_ns()
    secrets, folders = [], []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != ".git":
                            folders.append(entry.name)
                    elif is_secret(entry.name) and entry.is_file():  # a link to a folder is not masked by a file
                        secrets.append(entry.name)
                except OSError:
                    continue
    except OSError:
        return None
    return _Listed(mtime, listed_at, tuple(secrets), tuple(folders))
