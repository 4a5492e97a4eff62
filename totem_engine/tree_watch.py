"""A watch of the project's folders (Linux inotify) that proves nothing in them changed between two
moments, so the git capture can skip a pass over 100,000 files' dates (worktree_capture.py).

It answers two questions. At a ``barrier``: how many changes it has counted so far. Two barriers
returning the same count mean that no file or folder of the tree was created, written, deleted,
moved or had its attributes changed between them (any such event counts one). And which paths
changed between two barriers (``paths_between``), so the capture reads only those: a file, a
folder made, removed or whose ``.gitignore`` changed (read whole), or "cannot say" (None: events
lost, a folder moved, a ``.gitignore`` above the project, too many paths). The barrier is
exact without waiting: the kernel queues an inotify event inside the system call that made the
change, so once a ``write`` has returned its event is in the queue. A barrier changes the times of
a sentinel file of Totem's own (outside the project, watched by the same inotify instance, whose
events form one queue in the order they happened) and reads the queue until it is empty: every
change finished before the barrier is read by then, and the sentinel's event marks where the
barrier stood among them. A barrier that does not find its sentinel's event says the watch no
longer works.

What it does not see (docs/decisions.md): writes through a shared writable ``mmap`` (no event;
closing the file raises ``IN_CLOSE_WRITE``, which counts, but a mapping kept open and written
later does not), a file changed through a hard link outside the project, remote writes on a
network file system (so the watch starts only on local file systems: ext2/3/4, xfs, btrfs,
tmpfs, zfs, f2fs, bcachefs, overlayfs), and a repository nested in the project (whose commits
change the capture without touching the project's folders: the watch does not start, or stops,
when a folder below the project holds ``.git``). A full event queue (``IN_Q_OVERFLOW``) or a
moved folder (its watched paths are stale) counts as a change and the watch is set up again;
running out of watches (``fs.inotify.max_user_watches``, of which it takes at most a quarter)
stops it. Stopped, the capture reads every file's dates as without it.

Everything here blocks (system calls, a walk of the folders): the capture calls it in a worker
thread, one call at a time.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
import threading
from pathlib import Path

__all__ = ["TreeWatch"]

_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_UNMOUNT = 0x2000
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
# Every way a folder's entries or their content can change (reads and opens are left out: the
# editor and Totem read files all the time).
_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE
         | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR | _IN_DONT_FOLLOW)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name, NUL-padded
# statfs f_type of the local file systems, whose every change goes through this kernel.
_LOCAL = {0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0x2FC12FC1, 0xF2F52010, 0xCA451A4E, 0x794C7630}
_KEPT = 4096  # changes remembered by path: beyond, the oldest are forgotten (the capture reads all)
_MOST_PATHS = 1000  # more changed paths than this: reading every file's dates costs no more


class TreeWatch:
    """A watch of every folder under ``root`` (symbolic links not followed, the project's own
    ``.git`` left out) and of the ``.gitignore`` files of the folders from the repository's top
    down to it (``ancestors``), which decide what the capture sees. Build one with ``start``."""

    def __init__(self, libc: ctypes.CDLL, root: Path, ancestors: list[Path], sentinel: Path, limit: int):
        self._libc = libc
        self.root = root
        self.ancestors = ancestors
        self.sentinel = sentinel
        self._limit = limit  # most folders it may watch
        self._device = root.stat().st_dev
        self._lock = threading.Lock()  # close may come from another thread than a barrier
        self._fd = -1
        self._folders: dict[int, Path] = {}  # watch descriptor -> folder under root
        self._upper: set[int] = set()  # watch descriptors of the ancestors
        self._sentinel_wd = -1
        # Each change counted, by path from the root ("" the root itself; None: cannot say),
        # the first ``_base`` of them forgotten: the count is ``_base + len(_log)``.
        self._log: list[str | None] = []
        self._base = 0
        self._broken = False  # something it cannot follow: it stops
        self._rebuild = False  # events lost or paths stale: it sets itself up again

    @classmethod
    def start(cls, root: Path, ancestors: list[Path], sentinel: Path) -> TreeWatch | None:
        """The watch set up, or None where it cannot tell every change (not Linux, not a local
        file system, a nested repository, too many folders, no inotify)."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols: libc's among them
            if not _local(libc, root):
                return None
            limit = int(Path("/proc/sys/fs/inotify/max_user_watches").read_text()) // 4
            sentinel.touch()
            watch = cls(libc, root, ancestors, sentinel, limit)
        except (OSError, ValueError, AttributeError):
            return None
        if not watch._arm():
            watch.close()
            return None
        return watch

    def barrier(self) -> int | None:
        """The number of changes counted until now: every change finished before this call is
        counted. None: the watch stopped (it cannot tell any more); it is closed."""
        with self._lock:
            for _ in range(3):  # a rebuild, and one more should events overflow again at once
                if self._fd < 0:
                    return None
                count = self._drain()
                if self._broken:
                    self._close()
                    return None
                if not self._rebuild:
                    if count is None:  # its own event missing: the queue is not what it seems
                        self._close()
                    return count
                self._note(None)
                if not self._arm():
                    self._close()
                    return None
            self._close()
            return None

    def paths_between(self, since: int, until: int) -> list[str] | None:
        """The paths (from the root, "/") changed between the barriers that returned ``since``
        and ``until``, each a file or a folder to read whole; None when it cannot say."""
        with self._lock:
            if since < self._base:
                return None
            paths = self._log[since - self._base : until - self._base]
            found = set(paths)
            if not found or None in found or "" in found or len(found) > _MOST_PATHS:
                return None
            return sorted(found)  # type: ignore[arg-type]

    def close(self) -> None:
        with self._lock:
            self._close()

    # -- inotify --------------------------------------------------------------------------------

    def _arm(self) -> bool:
        """A new inotify instance watching the sentinel, the ancestors and every folder."""
        self._close()
        self._rebuild = False
        self._fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self._fd < 0:
            return False
        self._sentinel_wd = self._add(self.sentinel, _IN_ATTRIB)
        if self._sentinel_wd < 0:
            return False
        for folder in self.ancestors:
            wd = self._add(folder, _MASK)
            if wd < 0:
                return False
            self._upper.add(wd)
        return self._walk(self.root)

    def _close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1
        self._folders.clear()
        self._upper.clear()

    def _add(self, path: Path, mask: int) -> int:
        return self._libc.inotify_add_watch(self._fd, os.fsencode(path), mask)

    def _walk(self, top: Path) -> bool:
        """Watch ``top`` and every folder under it, each before its entries are listed, so a
        folder made meanwhile is either listed or raises an event. False: it cannot."""
        stack = [top]
        while stack:
            folder = stack.pop()
            wd = self._add(folder, _MASK)
            if wd < 0:
                if ctypes.get_errno() in (errno.ENOENT, errno.ENOTDIR):
                    continue  # gone already: its parent's event counted that
                return False
            if wd in self._folders:
                continue  # watched and listed already (a folder mounted twice, or walked before)
            self._folders[wd] = folder
            if len(self._folders) > self._limit:
                return False
            try:
                with os.scandir(folder) as entries:
                    listed = list(entries)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:
                return False
            for entry in listed:
                if entry.name == ".git":
                    if folder != self.root:
                        return False  # a nested repository
                    continue
                try:
                    if not entry.is_dir(follow_symlinks=False):
                        continue
                    device = entry.stat(follow_symlinks=False).st_dev
                except FileNotFoundError:
                    continue  # gone: the event of its folder, watched already, counted that
                except OSError:
                    return False
                if device != self._device:
                    return False  # another file system mounted inside
                stack.append(Path(entry.path))
        return True

    def _drain(self) -> int | None:
        """Touch the sentinel and read every queued event; the count where the sentinel's event
        stood (None when it was not read)."""
        try:
            os.utime(self.sentinel)
        except OSError:
            self._broken = True
            return None
        at_sentinel = None
        while True:
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                return at_sentinel
            except OSError:
                self._broken = True
                return None
            at = 0
            while at < len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, at)
                name = data[at + _EVENT.size : at + _EVENT.size + size].rstrip(b"\0")
                at += _EVENT.size + size
                if wd == self._sentinel_wd and not mask & _IN_IGNORED:
                    at_sentinel = self._base + len(self._log)
                else:
                    self._event(wd, mask, os.fsdecode(name))

    def _event(self, wd: int, mask: int, name: str) -> None:
        if mask & _IN_Q_OVERFLOW:
            self._rebuild = True
        elif wd in self._upper:
            if mask & (_IN_DELETE_SELF | _IN_MOVE_SELF | _IN_UNMOUNT):
                self._broken = True  # the project moved or went away
            elif name == ".gitignore":
                self._note(None)  # it decides what is ignored anywhere in the project
        elif wd in self._folders:
            self._folder_event(wd, mask, name)
        elif wd == self._sentinel_wd:
            self._broken = True  # the sentinel's watch went away

    def _folder_event(self, wd: int, mask: int, name: str) -> None:
        folder = self._folders[wd]
        if mask & _IN_IGNORED:
            del self._folders[wd]  # the folder is gone (its removal counted)
            return
        if mask & _IN_UNMOUNT or (mask & (_IN_DELETE_SELF | _IN_MOVE_SELF) and folder == self.root):
            self._broken = True
            return
        if name == ".git":
            if folder != self.root and mask & (_IN_CREATE | _IN_MOVED_TO):
                self._broken = True  # a repository made inside the project
            return  # the project's own git directory is not part of the capture
        # A .gitignore decides for its whole folder: the folder is read again.
        path = folder if name in ("", ".gitignore") else folder / name
        self._note("" if path == self.root else path.relative_to(self.root).as_posix())
        if mask & _IN_ISDIR and mask & _IN_MOVED_FROM:
            self._rebuild = True  # the paths of everything under it are stale
        elif mask & _IN_ISDIR and mask & (_IN_CREATE | _IN_MOVED_TO) and not self._walk(folder / name):
            self._broken = True

    def _note(self, path: str | None) -> None:
        self._log.append(path)
        if len(self._log) > _KEPT:
            dropped = len(self._log) - _KEPT // 2
            del self._log[:dropped]
            self._base += dropped


def _local(libc: ctypes.CDLL, root: Path) -> bool:
    """Whether ``root`` is on a local file system (statfs's f_type, the first field)."""
    buffer = ctypes.create_string_buffer(512)
    if libc.statfs(os.fsencode(root), buffer) != 0:
        return False
    return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF in _LOCAL

