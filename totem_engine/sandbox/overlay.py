"""A sandboxed command's overlay taken into the project: what it wrote, created and deleted.

A command run with the project overlaid (bwrap ``--overlay``) writes only into the upper folder:
a changed or new file is a copy there, a deleted one a whiteout (a character device 0:0, or a
file with a ``*.overlay.whiteout`` xattr), a folder deleted and made again is opaque (a
``*.overlay.opaque = y`` xattr: nothing of the project's folder shows through). Layout after the
kernel's overlayfs documentation (Documentation/filesystems/overlayfs.rst). ``take_in`` walks the
upper folder once and makes the project match it, reading each file's old bytes first, and
returns the changes for the turn's change set (command_changes.py ``FileChange``).

What lands in a protected folder (``permissions.PROTECTED``: a ``.totem`` or a ``.git``, at any
depth) is not taken in: those change only when the user is asked (the project's own are bound
read-only in the sandbox, bwrap.py; a nested one, or one the command made, is dropped here), and
the result says so. A file over ``max_file_bytes`` or a symbolic link is applied and recorded as
not restorable.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from totem_engine.file_changes import FileChange
from totem_engine.permissions import is_protected
from totem_engine.workspace.files import write_atomically

__all__ = ["is_opaque", "is_whiteout", "not_utf8", "take_in"]

_XATTR_PREFIXES = ("user.overlay.", "trusted.overlay.")


def take_in(upper: Path, root: Path, *, max_file_bytes: int) -> list[FileChange]:
    """Make ``root`` hold what the overlay's ``upper`` folder says; the changes, by path. Blocking."""
    changes: list[FileChange] = []
    _folder(upper, root, "", changes, max_file_bytes)
    return sorted((_named(c) for c in changes), key=lambda c: c.path)


def _named(change: FileChange) -> FileChange:
    """``change``, or for a name that is not UTF-8 a note with the name escaped."""
    shown = not_utf8(change.path)
    return change if shown is None else FileChange(shown, unrestorable="a name that is not UTF-8: undo cannot name it")


def not_utf8(name: str) -> str | None:
    """A name from the file system that is not UTF-8 (os.fsdecode keeps its bytes as surrogates,
    which no event, message or snapshot can hold), escaped for people; None for a UTF-8 one."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return None


def _folder(upper: Path, root: Path, rel: str, changes: list[FileChange], cap: int) -> None:
    with os.scandir(upper / rel if rel else upper) as entries:
        listed = sorted(entries, key=lambda e: e.name)
    for entry in listed:
        path = f"{rel}/{entry.name}" if rel else entry.name
        if is_protected(path):
            if not _empty_folder(entry):  # an empty one is the mount point of bwrap's read-only .totem
                changes.append(FileChange(path, unrestorable="not taken into the project: a protected folder (.totem, .git)"
                                          " changes only when you are asked; run it outside the sandbox for that"))
            continue
        target = root / path
        st = entry.stat(follow_symlinks=False)
        if is_whiteout(entry.path, st):
            _remove(root, path, changes, cap)
        elif stat.S_ISDIR(st.st_mode):
            if _is_file_like(target):
                _remove(root, path, changes, cap)
            if not target.is_dir():
                target.mkdir(parents=True)
            elif is_opaque(entry.path):
                shown = set(os.listdir(entry.path))
                for name in sorted(os.listdir(target)):
                    if name not in shown:
                        _remove(root, f"{path}/{name}", changes, cap)
            os.chmod(target, stat.S_IMODE(st.st_mode))
            _folder(upper, root, path, changes, cap)
        elif stat.S_ISLNK(st.st_mode):
            if target.is_dir() and not target.is_symlink():
                _remove(root, path, changes, cap)
            _replace_link(target, os.readlink(entry.path))
            changes.append(FileChange(path, unrestorable="a symbolic link: undo keeps regular files only"))
        elif stat.S_ISREG(st.st_mode):
            _file(Path(entry.path), st, root, path, changes, cap)


def _file(source: Path, st: os.stat_result, root: Path, path: str, changes: list[FileChange], cap: int) -> None:
    target = root / path
    if target.is_dir() and not target.is_symlink():
        _remove(root, path, changes, cap)
    old_size = target.stat().st_size if _is_file_like(target) and not target.is_symlink() else None
    if st.st_size > cap or (old_size or 0) > cap:
        shutil.copyfile(source, target, follow_symlinks=False)
        os.chmod(target, stat.S_IMODE(st.st_mode))
        size = max(st.st_size, old_size or 0)
        changes.append(FileChange(path, unrestorable=f"{size} bytes, over the {cap}-byte limit of undo ([snapshots] max_file_bytes)"))
        return
    new = source.read_bytes()
    old = target.read_bytes() if old_size is not None else None
    if target.is_symlink():
        target.unlink()
    if old != new:
        write_atomically(target, new)
        changes.append(FileChange(path, old, new))
    os.chmod(target, stat.S_IMODE(st.st_mode))


def _remove(root: Path, path: str, changes: list[FileChange], cap: int) -> None:
    """The project's ``path`` deleted, file or folder, each file's bytes kept first."""
    target = root / path
    if target.is_symlink() or target.is_file():
        changes.append(_deleted(target, path, cap))
        target.unlink()
    elif target.is_dir():
        for dirpath, _, filenames in os.walk(target):
            for name in filenames:
                full = Path(dirpath) / name
                changes.append(_deleted(full, full.relative_to(root).as_posix(), cap))
        shutil.rmtree(target)
    elif target.exists():  # a fifo, a socket
        target.unlink()


def _deleted(path: Path, rel: str, cap: int) -> FileChange:
    if path.is_symlink():
        return FileChange(rel, unrestorable="a symbolic link: undo keeps regular files only")
    size = path.stat().st_size
    if size > cap:
        return FileChange(rel, unrestorable=f"{size} bytes, over the {cap}-byte limit of undo ([snapshots] max_file_bytes)")
    return FileChange(rel, path.read_bytes(), None)


def _replace_link(target: Path, destination: str) -> None:
    temporary = target.with_name(f".{target.name}.totem-link")
    temporary.unlink(missing_ok=True)
    os.symlink(destination, temporary)
    os.replace(temporary, target)


def is_whiteout(path: str, st: os.stat_result) -> bool:
    """Whether the upper folder's entry at ``path`` (``st``: its lstat) says "deleted"."""
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
        return True
    return stat.S_ISREG(st.st_mode) and st.st_size == 0 and _xattr(path, "whiteout") is not None


def is_opaque(path: str) -> bool:
    """Whether the upper folder's folder at ``path`` hides the project's folder under it."""
    return _xattr(path, "opaque") == b"y"


def _xattr(path: str, name: str) -> bytes | None:
    for prefix in _XATTR_PREFIXES:
        try:
            return os.getxattr(path, prefix + name, follow_symlinks=False)
        except OSError:
            continue
    return None


def _is_file_like(path: Path) -> bool:
    return path.is_symlink() or (path.exists() and not path.is_dir())


def _empty_folder(entry: os.DirEntry) -> bool:
    return entry.is_dir(follow_symlinks=False) and not os.listdir(entry.path)
