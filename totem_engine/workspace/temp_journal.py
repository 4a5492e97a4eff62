"""The temporary files of atomic writes, journaled so a killed process's leftovers are swept.

``workspace.write_atomically`` writes beside its target (``.NAME.XXXXXXXX.totem-tmp``) and
renames; a process killed between the two (``kill -9`` during a large write) leaves the temporary
file behind. Each one is recorded, with the writer's process id, in one journal before it is
created (``record``); the next Totem to open a project removes the ones under it whose writer is
gone (``sweep``), so start-up reads one small file instead of walking the project.

The journal is ``temp-files.txt`` in the user's state folder, one ``PID<TAB>PATH`` line a file,
appended to and rewritten under an exclusive ``flock`` (several Totem processes share it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import platformdirs

from totem_engine.pids import alive


def journal_path() -> Path:
    return Path(platformdirs.user_state_dir("totem")) / "temp-files.txt"


@contextlib.contextmanager
def _locked(mode: str) -> Iterator[object]:
    path = journal_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, mode, encoding="utf-8", errors="surrogateescape") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield handle


def record(tmp: Path) -> None:
    """Journal ``tmp`` as written by this process, before it is created."""
    with _locked("a") as handle:
        handle.write(f"{os.getpid()}\t{tmp}\n")
        handle.flush()


def sweep(root: Path) -> list[str]:
    """Remove the journaled temporary files under ``root`` whose writer is no longer running;
    their paths relative to ``root``. Lines whose file is gone are dropped from the journal;
    files a live process may still be writing stay, with their lines."""
    if not journal_path().exists():
        return []
    root = root.resolve()
    removed: list[str] = []
    with _locked("r+") as handle:
        kept: list[str] = []
        for line in handle.read().splitlines():
            pid_text, _, name = line.partition("\t")
            if not pid_text.isdigit() or not name:
                continue  # a line cut short by a kill: nothing to find
            path = Path(name)
            if not path.exists():
                continue
            if root not in path.parents or alive(int(pid_text)):
                kept.append(line)
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            removed.append(path.relative_to(root).as_posix())
        handle.seek(0)
        handle.truncate()
        handle.write("".join(f"{line}\n" for line in kept))
    return removed
