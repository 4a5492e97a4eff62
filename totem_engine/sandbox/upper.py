"""An overlay's upper folder seeded with files kept aside, and read back after a command.

A code-mode script's commands run with the project overlaid (codemode/overlaid.py): the upper
folder first holds the script's staged files, so the command sees them over the project, and
afterwards it is read back into the stage instead of being taken into the project (overlay.py
does that for ``bash``). Staged deletes cannot be seeded: a whiteout is a character device 0:0,
which an unprivileged user cannot make, and bwrap's overlay ignores ``user.overlay.whiteout``
(bubblewrap 0.11); removing the file inside the mounted overlay makes the kernel write one
(``DELETE_FIRST``, the paths listed in a file of the session's /tmp). Layout after the kernel's
overlayfs documentation (Documentation/filesystems/overlayfs.rst).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from totem_engine.sandbox.overlay import is_opaque, is_whiteout, not_utf8
from totem_engine.workspace.walk import IgnoreFile, is_ignored, load_ignore

__all__ = ["DELETE_FIRST", "ReadBack", "read_back", "seed"]

# Run in the overlay before the command: `sh -c DELETE_FIRST sh LIST argv..` removes the paths
# LIST holds (each ended by a NUL, so any name will do), then LIST, then runs argv. A file, not
# arguments: hundreds of long paths would pass the 2 MB one command line may hold.
DELETE_FIRST = 'xargs -0 -r rm -f -- < "$1"; rm -f -- "$1"; shift; exec "$@"'


def seed(upper: Path, root: Path, files: dict[str, bytes]) -> None:
    """Each project-relative file of ``files`` written into ``upper`` with the mode its project
    copy has (an edited script stays executable). Blocking."""
    for rel, data in files.items():
        target = upper / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        try:
            mode = stat.S_IMODE((root / rel).stat().st_mode)
        except OSError:
            mode = 0o644
        target.chmod(mode)


@dataclass
class ReadBack:
    """What the overlay holds after the command, against the project: ``written`` (relative path
    -> bytes: new or changed files, and every seeded file still there; a file copied up unchanged,
    by a ``touch`` or a ``chmod``, is not), ``deleted`` (relative paths of files gone from the
    overlay's view), ``left_out`` (what a stage does not hold, with why: a symbolic link, or a
    file in place of one, a file over the cap the script did not stage, anything in ``.git``,
    what is ignored, a mode changed). A folder left empty is not said: tools leave them (pytest's
    ``.benchmarks``)."""

    written: dict[str, bytes] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    left_out: list[str] = field(default_factory=list)


def read_back(upper: Path, root: Path, *, seeded: set[str], deleted: set[str] = frozenset(), max_file_bytes: int) -> ReadBack:
    """The overlay's ``upper`` read against the project ``root``; ``seeded``: the files ``seed``
    put there (one the command removed is deleted, though the project never had it);
    ``deleted``: the staged deletes (one the command made again is written, even with the
    project's bytes, since the stage still has it deleted). What the
    project's ``.gitignore`` files ignore (an install's ``node_modules``, a build folder) and
    bytecode caches are left out: they are no change of the project's, and could be large.
    Blocking."""
    found = ReadBack()
    kept = seeded | deleted
    # The folders holding a file the script staged: never ignored (what it wrote, it keeps).
    kept_folders = {parent.as_posix() for rel in kept for parent in PurePosixPath(rel).parents}
    _folder(upper, root, "", found, kept, kept_folders, max_file_bytes, _ignore_rules(upper, root, "", []))
    found.deleted |= {rel for rel in seeded if rel not in found.written and not (upper / rel).is_symlink()}
    found.left_out.sort()
    return found


def _folder(
    upper: Path, root: Path, rel: str, found: ReadBack, seeded: set[str], seeded_folders: set[str], cap: int,
    rules: list[IgnoreFile],
) -> None:
    with os.scandir(upper / rel if rel else upper) as entries:
        listed = sorted(entries, key=lambda e: e.name)
    for entry in listed:
        path = f"{rel}/{entry.name}" if rel else entry.name
        st = entry.stat(follow_symlinks=False)
        is_dir = stat.S_ISDIR(st.st_mode) or (root / path).is_dir()  # a whiteout hides a folder too
        if not_utf8(entry.name) is not None:  # no path of a change set, message or event can hold it
            found.left_out.append(f"{not_utf8(path)}{'/' if is_dir else ''} (a name that is not UTF-8)")
        elif entry.name == ".git":  # the project's, or a repository inside it
            found.left_out.append(f"{path} (what a command does to a repository is not staged)")
        elif path not in seeded and path not in seeded_folders and (
            entry.name == "__pycache__" or is_ignored(rules, path, is_dir)
        ):
            found.left_out.append(f"{path}{'/' if is_dir else ''} (ignored)")
        elif is_whiteout(entry.path, st) and (root / path).is_symlink():
            found.left_out.append(f"{path} (a symbolic link, removed)")
        elif is_whiteout(entry.path, st):
            found.deleted |= _project_files(root, path)
        elif stat.S_ISDIR(st.st_mode):
            if is_opaque(entry.path):  # made again: nothing of the project's folder shows through
                found.deleted |= {f for f in _project_files(root, path) if not (upper / f).is_file()}
            elif _is_file_or_link(root / path):
                found.deleted.add(path)
            _folder(upper, root, path, found, seeded, seeded_folders, cap, _ignore_rules(upper, root, path, rules))
        elif stat.S_ISLNK(st.st_mode):
            found.left_out.append(f"{path} (a symbolic link)")
        elif stat.S_ISREG(st.st_mode):
            if (root / path).is_symlink() and path not in seeded:  # undo would put back a copy, not the link
                found.left_out.append(f"{path} (a file in place of a symbolic link)")
                continue
            if st.st_size > cap and path not in seeded:  # what the script staged, it keeps
                found.left_out.append(f"{path} ({st.st_size} bytes, over the {cap}-byte limit of undo)")
                continue
            data = Path(entry.path).read_bytes()
            if path in seeded or not _holds(root / path, data):
                found.written[path] = data
            if _mode_lost(root / path, stat.S_IMODE(st.st_mode)):
                found.left_out.append(f"{path} (mode {stat.S_IMODE(st.st_mode):o}: a change set keeps the project's modes)")


def _mode_lost(path: Path, mode: int) -> bool:
    """Whether the change set would not give the file ``mode``: it keeps the project's file's
    mode, and a new file gets the default one (not executable)."""
    try:
        return not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) != mode
    except OSError:
        return bool(mode & 0o111)


def _ignore_rules(upper: Path, root: Path, rel: str, rules: list[IgnoreFile]) -> list[IgnoreFile]:
    """``rules`` and the folder's own ``.gitignore``, as the overlay shows it (the command's or
    the stage's copy over the project's)."""
    folder = upper / rel if rel else upper
    if not (folder / ".gitignore").is_file():
        folder = root / rel if rel else root
    return rules + load_ignore(folder, rel)


def _project_files(root: Path, rel: str) -> set[str]:
    """The files at or under ``rel`` in the project."""
    target = root / rel
    if _is_file_or_link(target):
        return {rel}
    files = set()
    for dirpath, _, filenames in os.walk(target):
        files |= {(Path(dirpath) / name).relative_to(root).as_posix() for name in filenames}
    return files


def _holds(path: Path, data: bytes) -> bool:
    """Whether the project's file at ``path`` (not a link) has these bytes."""
    try:
        return not path.is_symlink() and path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def _is_file_or_link(path: Path) -> bool:
    return path.is_symlink() or path.is_file()
