"""Undo and redo of the files a turn changed: a content-addressed blob store and a change index.

Why one module of this size (over 500 lines): undo, redo, rewind and a fresh attempt move files
through the same index and blob store, with the same conflict rules; split, each would repeat them.

Before a file tool changes files, the loop calls ``before_change``: each file's bytes as the
Workspace shows them are stored as a blob (``<data dir>/blobs/<sha256[:2]>/<sha256>``, written
atomically, identical content stored once), or its absence is noted. After the change,
``after_change`` records the new state the same way. A turn's change set is one row per file::

    turns:   seq (order), turn_id, session_id, undone (0/1), created_at
    changes: turn_seq, path (project-relative, "/"; a file in an extra root: absolute), before_hash,
             after_hash  (NULL = absent)
    command_changes: turn_seq, path, reason   (what a command changed: reason NULL = restorable,
                     on disk; else why undo cannot put it back, path "" when the files are unknown)

``before_change`` seeds ``after_hash`` with ``before_hash``, so a file whose change never happened
(the apply failed and ``after_change`` was not called) counts as unchanged, never as deleted.

``undo`` takes the session's newest turn that changed something and is not undone, and puts each
of its files back through the Workspace; ``redo`` re-applies the oldest undone turn, which is
the one undone last (undone turns are always newer than the others: a new turn that changes files
forgets them, the usual redo-stack rule). A file that no longer holds what the turn (or the undo)
left there is reported as a conflict and left alone. ``restore_turn`` puts a running turn's files
back to their before-state and records them unchanged, all of them or none.

What a command changed (``record_command_changes``, command_changes.py) was written to the disk,
not through the editor, so undo puts it back on the disk, and an open buffer that shows another
content follows (a buffer with changes of the user's own is a conflict). A change recorded as not
restorable (a file over the size cap, outside git) is reported as such and left alone.

The index is its own SQLite file (``snapshots.db`` beside ``totem.db``), not a table in the
history database: its schema and migrations stay independent of the history's, and pruning it
(deleting rows, at start-up) never contends with a turn writing history. It is opened like the
Store, through totem_engine.sqlite_worker: WAL, one connection, calls one at a time in a worker
thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio

from totem_engine.sqlite_worker import SqliteWorker, Transaction
from totem_engine.store import default_db_path
from totem_engine.workspace.files import DiskWorkspace, Workspace, write_atomically
from totem_engine.workspace.paths import project_path

if TYPE_CHECKING:
    from totem_engine.file_changes import FileChange

__all__ = ["FileOutcome", "Snapshots"]

SCHEMA_VERSION = 2  # 2: command_changes

_SCHEMA = """
CREATE TABLE IF NOT EXISTS turns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    turn_id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    undone INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_by_session ON turns(session_id, undone, seq);
CREATE INDEX IF NOT EXISTS turns_by_age ON turns(created_at);

CREATE TABLE IF NOT EXISTS changes (
    turn_seq INTEGER NOT NULL REFERENCES turns(seq) ON DELETE CASCADE,
    path TEXT NOT NULL,
    before_hash TEXT,
    after_hash TEXT,
    PRIMARY KEY (turn_seq, path)
);

CREATE TABLE IF NOT EXISTS command_changes (
    turn_seq INTEGER NOT NULL REFERENCES turns(seq) ON DELETE CASCADE,
    path TEXT NOT NULL,
    reason TEXT,
    PRIMARY KEY (turn_seq, path)
);
"""

# An unreferenced blob this young is left alone: another Totem process sharing the data dir may
# be between writing it (or reusing it, which refreshes its mtime) and recording it.
_BLOB_GRACE = 3600.0

_DAY = 86400.0


@dataclass(frozen=True)
class _Change:
    """One changed file of a turn: its hashes (None = absent); ``on_disk``: a command changed it."""

    path: str
    before: str | None
    after: str | None
    on_disk: bool = False


@dataclass(frozen=True)
class _TurnChanges:
    """A turn's changed files, and what it changed that cannot be put back (path -> reason)."""

    files: list[_Change]
    unrestorable: dict[str, str]


@dataclass(frozen=True)
class FileOutcome:
    """What undo or redo did to one file. ``path`` is project-relative with forward slashes;
    ``reason`` says why for a conflict, and for ``unrestorable`` (what a command changed that
    was not kept: left as it is)."""

    path: str  # "" for an unrestorable change whose files are not known
    action: Literal["restored", "deleted", "conflict", "unrestorable"]
    reason: str | None = None


class Snapshots:
    """The snapshot store in ``store_dir`` (default: the directory of ``totem.db``).

    Nothing touches the disk until the first call. ``clock`` gives the time in seconds; it dates
    turns and ages blobs, and tests pass a fake one. Use ``async with`` or call ``close()``.
    """

    def __init__(
        self,
        store_dir: Path | None = None,
        *,
        max_bytes: int,
        max_age_days: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store_dir = Path(store_dir) if store_dir is not None else default_db_path().parent
        self.blob_dir = self.store_dir / "blobs"
        self.max_bytes = max_bytes
        self.max_age_days = max_age_days
        self._clock = clock
        self._disk = DiskWorkspace()  # what commands changed is put back here
        self._db = SqliteWorker(
            self.store_dir / "snapshots.db", schema=_SCHEMA, version=SCHEMA_VERSION,
            closed_message="snapshots are closed",
        )

    async def __aenter__(self) -> Snapshots:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- recording ------------------------------------------------------------------------

    async def before_change(
        self, workspace: Workspace, *, session_id: str, turn_id: str, root: Path, paths: list[Path]
    ) -> None:
        """Store each path's current bytes (or absence) as the turn's before-state.

        ``paths`` are absolute or relative to ``root``. A path the turn already recorded keeps
        its first before-state. The first call of a turn makes the session's undone turns
        impossible to redo. Raises OSError when a file cannot be read (then nothing is stored
        for it, and the change should not be applied).
        """
        rels = _relative_paths(root, paths)
        seq, fresh = await self._db.run(self._open_turn, session_id, turn_id, rels)
        states = [(rel, await self._snapshot(workspace, root / rel)) for rel in fresh]
        await self._db.run(self._record_before, seq, states)

    async def after_change(
        self, workspace: Workspace, *, session_id: str, turn_id: str, root: Path, paths: list[Path]
    ) -> None:
        """Store each path's current bytes (or absence) as the turn's after-state; a later call
        for the same path replaces it. Paths ``before_change`` did not record are ignored."""
        rels = _relative_paths(root, paths)
        states = [(rel, await self._snapshot(workspace, root / rel)) for rel in rels]
        await self._db.run(self._record_after, session_id, turn_id, states)

    async def record_command_changes(self, *, session_id: str, turn_id: str, changes: list[FileChange]) -> None:
        """What a command changed (command_changes.py) joins the turn's change set: each file's
        bytes before (kept when the turn recorded the file already) and after, marked as changed
        on disk; a change that cannot be put back with its reason."""
        if not changes:
            return
        kept = [c for c in changes if not c.unrestorable]
        states = [
            (c.path, await self._put(c.before), await self._put(c.after)) for c in kept
        ]
        notes = [(c.path, c.unrestorable) for c in changes if c.unrestorable]
        await self._db.run(self._record_command, session_id, turn_id, states, notes)

    async def _put(self, data: bytes | None) -> str | None:
        return None if data is None else await anyio.to_thread.run_sync(self._put_blob, data)

    def _record_command(
        self, conn: sqlite3.Connection, session_id: str, turn_id: str,
        states: list[tuple[str, str | None, str | None]], notes: list[tuple[str, str]],
    ) -> None:
        seq, _ = self._open_turn(conn, session_id, turn_id, [])
        with Transaction(conn):
            conn.executemany(
                "INSERT OR IGNORE INTO changes (turn_seq, path, before_hash, after_hash) VALUES (?, ?, ?, ?)",
                [(seq, rel, before, before) for rel, before, _ in states],
            )
            conn.executemany(
                "UPDATE changes SET after_hash = ? WHERE turn_seq = ? AND path = ?",
                [(after, seq, rel) for rel, _, after in states],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO command_changes (turn_seq, path, reason) VALUES (?, ?, NULL)",
                [(seq, rel) for rel, _, _ in states],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO command_changes (turn_seq, path, reason) VALUES (?, ?, ?)",
                [(seq, rel, reason) for rel, reason in notes],
            )

    async def _snapshot(self, workspace: Workspace, path: Path) -> str | None:
        """The hash of the file's bytes, now stored as a blob; None when there is no file (a
        folder in its place: a command's ``mkdir``, or a rewind putting the folder back)."""
        found = await workspace.stat(path)
        if found is None or found.is_dir:
            return None
        data = await workspace.read_bytes(path)
        return await anyio.to_thread.run_sync(self._put_blob, data)

    def _open_turn(
        self, conn: sqlite3.Connection, session_id: str, turn_id: str, rels: list[str]
    ) -> tuple[int, list[str]]:
        """The turn's seq (created when new) and the paths of ``rels`` it has not recorded."""
        with Transaction(conn):
            row = conn.execute("SELECT seq FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()
            if row is None:
                # A new turn changes files: what was undone can no longer be redone.
                conn.execute("DELETE FROM turns WHERE session_id = ? AND undone = 1", (session_id,))
                seq = conn.execute(
                    "INSERT INTO turns (turn_id, session_id, created_at) VALUES (?, ?, ?)",
                    (turn_id, session_id, self._clock()),
                ).lastrowid
            else:
                seq = row["seq"]
            recorded = {r["path"] for r in conn.execute(
                "SELECT path FROM changes WHERE turn_seq = ?", (seq,)
            )}
        assert seq is not None
        return seq, [rel for rel in rels if rel not in recorded]

    @staticmethod
    def _record_before(
        conn: sqlite3.Connection, seq: int, states: list[tuple[str, str | None]]
    ) -> None:
        # OR IGNORE: of two calls racing on one path, the first recorded before-state wins.
        conn.executemany(
            "INSERT OR IGNORE INTO changes (turn_seq, path, before_hash, after_hash)"
            " VALUES (?, ?, ?, ?)",
            [(seq, rel, digest, digest) for rel, digest in states],
        )

    @staticmethod
    def _record_after(
        conn: sqlite3.Connection, session_id: str, turn_id: str,
        states: list[tuple[str, str | None]],
    ) -> None:
        conn.executemany(
            "UPDATE changes SET after_hash = ? WHERE path = ? AND turn_seq ="
            " (SELECT seq FROM turns WHERE turn_id = ? AND session_id = ?)",
            [(digest, rel, turn_id, session_id) for rel, digest in states],
        )

    # -- undo and redo --------------------------------------------------------------------

    async def undo(self, workspace: Workspace, *, session_id: str, root: Path) -> list[FileOutcome]:
        """Put back the files of the session's newest changing turn not yet undone.

        Returns one outcome per changed file, sorted by path; ``[]`` when there is nothing to
        undo. A file that no longer holds the turn's after-state is a conflict and left alone; what
        a command changed that was not kept is ``unrestorable`` and left alone.
        """
        claimed = await self._db.run(self._claim, session_id, True)
        return await self._move_all(workspace, root, claimed, undo=True, conflict="changed since the turn; left as it is")

    async def redo(self, workspace: Workspace, *, session_id: str, root: Path) -> list[FileOutcome]:
        """Re-apply the session's most recently undone turn; ``[]`` when there is none.

        A file that no longer holds the turn's before-state is a conflict and left alone.
        """
        claimed = await self._db.run(self._claim, session_id, False)
        return await self._move_all(workspace, root, claimed, undo=False, conflict="changed since the undo; left as it is")

    async def _move_all(
        self, workspace: Workspace, root: Path, claimed: _TurnChanges, *, undo: bool, conflict: str,
    ) -> list[FileOutcome]:
        outcomes = [
            FileOutcome(path, "unrestorable", f"{reason}; left as it is") for path, reason in claimed.unrestorable.items()
        ]
        # Removals first, the deepest first: a folder that took a file's place (a command's
        # `mkdir`) is emptied, then removed, before the file goes back where it was; a file that
        # took a folder's place is removed before the folder's files go back.
        emptied: set[Path] = set()  # folders this undo removed files from
        for change in _removals_first(claimed.files, lambda c: c.before if undo else c.after):
            if change.path in claimed.unrestorable:
                continue
            expect, target = (change.after, change.before) if undo else (change.before, change.after)
            path = root / change.path
            if target is not None and path in emptied:
                with contextlib.suppress(OSError):  # still holding something: a conflict below
                    await anyio.to_thread.run_sync(path.rmdir)
            done = await self._move(workspace, path, change, expect=expect, target=target, conflict=conflict)
            if target is None and done.action != "conflict":
                emptied |= set(path.parents)
            outcomes.append(done)
        return sorted(outcomes, key=lambda o: o.path)

    async def restore_turn(
        self, workspace: Workspace, *, session_id: str, turn_id: str, root: Path
    ) -> list[FileOutcome]:
        """Put back the files the running turn ``turn_id`` has changed so far, and record them as
        unchanged, so the turn can start over (a small model's fresh attempt, turn/small.py).

        All or nothing: when any file no longer holds what the turn left there (the user changed
        it meanwhile), nothing is touched and the outcomes list those conflicts alone.
        """
        claimed = await self._db.run(self._turn_changes, session_id, turn_id)
        changes = [c for c in claimed.files if c.path not in claimed.unrestorable]
        conflicts = [
            FileOutcome(change.path, "conflict", "changed since the turn changed it")
            for change in changes
            if await self._current_hash(self._disk if change.on_disk else workspace, root / change.path) != change.after
        ]
        if conflicts:
            return conflicts
        outcomes = [
            await self._move(workspace, root / change.path, change, expect=change.after, target=change.before,
                             conflict="changed since the turn changed it")
            for change in changes
        ]
        restored = [(c.path, c.before) for c, done in zip(changes, outcomes) if done.action != "conflict"]
        await self._db.run(self._record_after, session_id, turn_id, restored)
        return outcomes

    async def rewind(
        self, workspace: Workspace, *, session_id: str, since: Iterable[str], root: Path, turn_id: str,
        overwrite: Callable[[str], bool] = lambda path: False, dry_run: bool = False,
    ) -> list[FileOutcome]:
        """Put the files back as they were before the first of the session's turns ``since``
        changed them: what those turns changed, and every change of the session after the first
        of them that is not undone (a rewind's own), taken back at once. Recorded as the change
        set ``turn_id``, so ``undo`` takes the rewind back.

        A file that no longer holds what the last of those changes left (the user changed it
        since) is a conflict and left alone, unless ``overwrite(path)``. ``dry_run``: the
        outcomes only, nothing touched. One outcome per file, sorted by path.
        """
        plan = await self._db.run(self._changes_since, session_id, list(since))
        # Folders the turns' files are removed from: one standing where a file goes back was
        # made by those turns, and is no conflict (it is removed first, below).
        emptied_by_plan = {parent for path, target, _ in plan if target is None for parent in Path(path).parents}
        outcomes: dict[str, FileOutcome] = {}
        moves: list[tuple[str, str | None]] = []
        for path, target, expect in plan:
            current = await self._current_hash(workspace, root / path)
            if current == _DIRECTORY and expect is None and Path(path) in emptied_by_plan:
                current = None
            done = FileOutcome(path, "deleted" if target is None else "restored")
            if current != target and current != expect and not overwrite(path):
                done = FileOutcome(path, "conflict", "changed since; left as it is")
            elif current != target:
                moves.append((path, target))
            outcomes[path] = done
        if dry_run or not moves:
            return list(outcomes.values())
        where = {"session_id": session_id, "turn_id": turn_id, "root": root, "paths": [root / p for p, _ in moves]}
        await self.before_change(workspace, **where)
        emptied: set[Path] = set()  # folders this rewind removed files from
        try:
            # Removals first, the deepest first, as undo does (_move_all): a file goes back where
            # a folder of the turns' stood once that folder is empty.
            for path, target in sorted(moves, key=lambda move: _removal_order(move[0], move[1] is None)):
                full = root / path
                try:
                    if target is None:
                        await workspace.delete(full)
                        emptied |= set(full.parents)
                    else:
                        if full in emptied:
                            with contextlib.suppress(OSError):  # still holding something: fails below
                                await anyio.to_thread.run_sync(full.rmdir)
                        await workspace.write_bytes(full, await anyio.to_thread.run_sync(self._blob_path(target).read_bytes))
                except OSError as exc:
                    outcomes[path] = FileOutcome(path, "conflict", f"could not be changed: {exc.strerror or exc}")
        finally:
            with anyio.CancelScope(shield=True):  # what was written must be recorded, for undo
                await self.after_change(workspace, **where)
        return list(outcomes.values())

    @staticmethod
    def _changes_since(conn: sqlite3.Connection, session_id: str, turn_ids: list[str]) -> list[tuple[str, str | None, str | None]]:
        """(path, its before-state at the first change, its after-state at the last) of every
        file changed by the session's turns not undone from the first of ``turn_ids`` on."""
        marks = ",".join("?" * len(turn_ids))
        first = conn.execute(
            f"SELECT MIN(seq) FROM turns WHERE session_id = ? AND turn_id IN ({marks})", (session_id, *turn_ids)
        ).fetchone()[0] if turn_ids else None
        if first is None:
            return []
        span: dict[str, list[str | None]] = {}
        for row in conn.execute(
            "SELECT path, before_hash, after_hash FROM changes JOIN turns ON turns.seq = changes.turn_seq"
            " WHERE turns.session_id = ? AND turns.undone = 0 AND turns.seq >= ? AND before_hash IS NOT after_hash"
            " ORDER BY turns.seq",
            (session_id, first),
        ):
            span.setdefault(row["path"], [row["before_hash"], None])[1] = row["after_hash"]
        return [(path, before, after) for path, (before, after) in sorted(span.items()) if before != after]

    async def session_changes(
        self, *, session_id: str, turn_id: str | None = None
    ) -> list[tuple[str, str | None, str | None]]:
        """``(path, before, after)`` hashes (None: absent) of each file the session changed: its
        state before the session's first change of it and after its last, over the turns not
        undone; with ``turn_id``, that turn's changes alone. A file put back as it was is left
        out, and so is what a command changed that was not kept (unrestorable). Sorted by path;
        read the states with ``blob``."""

        def read(conn: sqlite3.Connection) -> list[tuple[str, str | None, str | None]]:
            if turn_id is not None:
                return [(c.path, c.before, c.after) for c in self._turn_changes(conn, session_id, turn_id).files]
            turns = [row[0] for row in conn.execute("SELECT turn_id FROM turns WHERE session_id = ?", (session_id,))]
            return self._changes_since(conn, session_id, turns)

        return await self._db.run(read)

    async def blob(self, digest: str) -> bytes:
        """The bytes stored under ``digest`` (a hash ``session_changes`` gave). Raises OSError
        when it is gone (pruned)."""
        return await anyio.to_thread.run_sync(self._blob_path(digest).read_bytes)

    async def turn_paths(self, *, session_id: str, turn_id: str) -> list[str]:
        """The project-relative paths the turn ``turn_id`` has changed so far, sorted."""
        return [change.path for change in (await self._db.run(self._turn_changes, session_id, turn_id)).files]

    @staticmethod
    def _turn_changes(conn: sqlite3.Connection, session_id: str, turn_id: str) -> _TurnChanges:
        row = conn.execute(
            "SELECT seq FROM turns WHERE turn_id = ? AND session_id = ?", (turn_id, session_id)
        ).fetchone()
        return _changes_of(conn, row["seq"]) if row is not None else _TurnChanges([], {})

    @staticmethod
    def _claim(conn: sqlite3.Connection, session_id: str, undo: bool) -> _TurnChanges:
        """Mark the turn to undo (or redo) as such and return its changed files by path.

        Marked before the files are touched, so two undos at once never take the same turn; an
        undo cut short is finished by redo-then-undo (files already in place count as done).
        """
        # Undone turns are always newer than the others, so the one undone last is the oldest.
        query = (
            "SELECT seq FROM turns t WHERE session_id = ? AND undone = 0 AND (EXISTS (SELECT 1"
            " FROM changes c WHERE c.turn_seq = t.seq AND c.before_hash IS NOT c.after_hash) OR EXISTS"
            " (SELECT 1 FROM command_changes n WHERE n.turn_seq = t.seq AND n.reason IS NOT NULL))"
            " ORDER BY seq DESC LIMIT 1"
            if undo else
            "SELECT seq FROM turns WHERE session_id = ? AND undone = 1 ORDER BY seq LIMIT 1"
        )
        with Transaction(conn):
            row = conn.execute(query, (session_id,)).fetchone()
            if row is None:
                return _TurnChanges([], {})
            conn.execute("UPDATE turns SET undone = ? WHERE seq = ?", (int(undo), row["seq"]))
            return _changes_of(conn, row["seq"])

    async def _move(
        self, workspace: Workspace, path: Path, change: _Change, *,
        expect: str | None, target: str | None, conflict: str,
    ) -> FileOutcome:
        """Bring the file from state ``expect`` to state ``target`` (hashes; None = absent)."""
        done = FileOutcome(change.path, "deleted" if target is None else "restored")
        try:
            if change.on_disk:
                return await self._move_on_disk(workspace, path, done, expect=expect, target=target, conflict=conflict)
            current = await self._current_hash(workspace, path)
            if current == target:
                return done
            if current != expect:
                return FileOutcome(change.path, "conflict", conflict)
            await self._put_state(workspace, path, target)
        except OSError as exc:
            return FileOutcome(change.path, "conflict", f"could not be changed: {exc.strerror or exc}")
        return done

    async def _move_on_disk(
        self, workspace: Workspace, path: Path, done: FileOutcome, *,
        expect: str | None, target: str | None, conflict: str,
    ) -> FileOutcome:
        """A command's change moved on the disk; an open buffer showing the other state (or the
        stale one from before the command) follows; one with changes of its own is a conflict."""
        on_disk = await self._current_hash(self._disk, path)
        shown = await self._current_hash(workspace, path)
        if on_disk not in (expect, target) or shown not in (expect, target, on_disk):
            return FileOutcome(done.path, "conflict", conflict)
        if on_disk != target:
            await self._put_state(self._disk, path, target)
        if target is not None and await self._current_hash(workspace, path) != target:
            await self._put_state(workspace, path, target)
        return done

    async def _put_state(self, workspace: Workspace, path: Path, target: str | None) -> None:
        if target is None:
            await workspace.delete(path)
        else:
            data = await anyio.to_thread.run_sync(self._blob_path(target).read_bytes)
            await workspace.write_bytes(path, data)

    @staticmethod
    async def _current_hash(workspace: Workspace, path: Path) -> str | None:
        """The hash of the file's bytes; None when absent; a non-hash for a directory."""
        st = await workspace.stat(path)
        if st is None or st.is_dir:
            return None if st is None else _DIRECTORY
        data = await workspace.read_bytes(path)
        return await anyio.to_thread.run_sync(_sha256, data)

    # -- pruning --------------------------------------------------------------------------

    async def prune(self) -> None:
        """Forget turns older than ``max_age_days``, delete blobs no turn refers to, then forget
        the oldest turns until the blobs fit in ``max_bytes``.

        Cost when there is nothing to do: one indexed delete, one query and a listing of the
        blob directory.
        """
        now = self._clock()
        referenced = await self._db.run(self._drop_old_turns, now - self.max_age_days * _DAY)
        sizes = await anyio.to_thread.run_sync(self._sweep, referenced, now - _BLOB_GRACE)
        excess = sum(sizes.values()) - self.max_bytes
        if excess > 0:
            freed = await self._db.run(self._drop_oldest_turns, sizes, excess)
            await anyio.to_thread.run_sync(self._delete_blobs, freed, now - _BLOB_GRACE)

    @staticmethod
    def _drop_old_turns(conn: sqlite3.Connection, cutoff: float) -> set[str]:
        """Delete turns created before ``cutoff``; the hashes the others refer to."""
        with Transaction(conn):
            conn.execute("DELETE FROM turns WHERE created_at < ?", (cutoff,))
            rows = conn.execute(
                "SELECT before_hash FROM changes UNION SELECT after_hash FROM changes"
            ).fetchall()
        return {row[0] for row in rows if row[0] is not None}

    @staticmethod
    def _drop_oldest_turns(
        conn: sqlite3.Connection, sizes: dict[str, int], excess: int
    ) -> set[str]:
        """Delete the oldest turns until the blobs only they refer to add up to ``excess``
        bytes (or no turn is left); the hashes no remaining turn refers to."""
        with Transaction(conn):
            hashes_by_turn: dict[int, list[str]] = {}
            for row in conn.execute(
                "SELECT turn_seq, before_hash, after_hash FROM changes ORDER BY turn_seq"
            ):
                hashes = hashes_by_turn.setdefault(row["turn_seq"], [])
                hashes.extend(h for h in (row["before_hash"], row["after_hash"]) if h is not None)
            refs = Counter(h for hashes in hashes_by_turn.values() for h in hashes)
            dropped: list[int] = []
            freed: set[str] = set()
            released = 0
            for seq, hashes in hashes_by_turn.items():  # oldest first
                if released >= excess:
                    break
                dropped.append(seq)
                refs.subtract(hashes)
                for digest in set(hashes):
                    if refs[digest] == 0:
                        freed.add(digest)
                        released += sizes.get(digest, 0)
            conn.executemany("DELETE FROM turns WHERE seq = ?", [(seq,) for seq in dropped])
        return freed

    def _sweep(self, referenced: set[str], grace_cutoff: float) -> dict[str, int]:
        """Delete unreferenced blobs (and stray temporary files) older than ``grace_cutoff``;
        ``{hash: size}`` of the blobs left."""
        sizes: dict[str, int] = {}
        for entry in _blob_entries(self.blob_dir):
            st = entry.stat()
            if entry.name not in referenced and st.st_mtime < grace_cutoff:
                Path(entry.path).unlink(missing_ok=True)
            else:
                sizes[entry.name] = st.st_size
        return sizes

    def _delete_blobs(self, digests: Iterable[str], grace_cutoff: float) -> None:
        for digest in digests:
            path = self._blob_path(digest)
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime < grace_cutoff:
                    path.unlink(missing_ok=True)

    # -- blobs ----------------------------------------------------------------------------

    def _blob_path(self, digest: str) -> Path:
        return self.blob_dir / digest[:2] / digest

    def _put_blob(self, data: bytes) -> str:
        """Store ``data`` once under its sha256 and return the hex digest."""
        digest = _sha256(data)
        path = self._blob_path(digest)
        try:
            # Already stored: refresh its mtime so a concurrent prune's grace period covers it.
            os.utime(path)
        except FileNotFoundError:
            write_atomically(path, data)
        return digest

    # -- plumbing -------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the index; later calls raise ``RuntimeError``. Safe to call twice."""
        await self._db.close()


def _changes_of(conn: sqlite3.Connection, seq: int) -> _TurnChanges:
    """The turn's changed files by path, and its unrestorable changes."""
    notes = conn.execute("SELECT path, reason FROM command_changes WHERE turn_seq = ?", (seq,)).fetchall()
    on_disk = {r["path"] for r in notes if r["reason"] is None}
    rows = conn.execute(
        "SELECT path, before_hash, after_hash FROM changes WHERE turn_seq = ?"
        " AND before_hash IS NOT after_hash ORDER BY path",
        (seq,),
    ).fetchall()
    return _TurnChanges(
        files=[_Change(r["path"], r["before_hash"], r["after_hash"], r["path"] in on_disk) for r in rows],
        unrestorable={r["path"]: r["reason"] for r in notes if r["reason"] is not None},
    )


def _relative_paths(root: Path, paths: Iterable[Path]) -> list[str]:
    """Project-relative, "/"-separated, without duplicates, in the order given."""
    return list(dict.fromkeys(project_path(root, root / path) for path in paths))


_DIRECTORY = "<directory>"  # _current_hash of a folder: never a file's hash


def _removals_first(changes: list[_Change], target: Callable[[_Change], str | None]) -> list[_Change]:
    """``changes`` with those whose ``target`` state is absent first, the deepest paths first."""
    return sorted(changes, key=lambda c: _removal_order(c.path, target(c) is None))


def _removal_order(path: str, removal: bool) -> tuple[bool, int]:
    """Sort key: removals first, the deepest first; the rest as they were (a stable sort)."""
    return (not removal, -path.count("/") if removal else 0)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _blob_entries(blob_dir: Path) -> list[os.DirEntry[str]]:
    """Every file in the blob directory's two-character folders; [] when there is none."""
    try:
        folders = [e for e in os.scandir(blob_dir) if e.is_dir()]
    except FileNotFoundError:
        return []
    return [e for folder in folders for e in os.scandir(folder.path) if e.is_file()]
