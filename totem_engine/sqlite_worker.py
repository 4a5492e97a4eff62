"""One SQLite file, one connection, one call at a time in a worker thread.

Shared by the history database (totem_engine.store) and the snapshot index
(totem_engine.snapshots): both are opened the same way (WAL, ``synchronous=NORMAL``, foreign
keys, a versioned schema) and both run their sqlite work off the event loop, so neither blocks
on disk.

A call is ``run`` (the caller waits for its result) or ``submit``-ted (a write whose result the
caller does not need: it is queued on the loop side and costs no thread round trip). Calls keep
their order: each ``run`` first applies, in the worker thread and the same round trip, every
write submitted before it, so a read sees them all. A submitted write that fails is kept as a
``WriteFailed`` for its ``owner`` (later writes of that owner are then skipped, so what is
stored is a prefix of what was submitted) and raised by that owner's next waited call; an
error is never dropped: ``close()`` applies what is still queued and raises one no owner
claimed.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio

__all__ = ["SqliteWorker", "Transaction", "WriteFailed"]

_T = TypeVar("_T")

log = logging.getLogger(__name__)

# A queue of submitted writes is applied by the submitter itself once it holds this many, so it
# stays small whoever forgets to flush.
DRAIN_AT = 256


class WriteFailed(RuntimeError):
    """A write submitted without waiting failed in the worker: ``what`` it was (as its submitter
    named it), the ``error`` it raised (also the ``__cause__``), and how many later writes of the
    same owner were ``skipped`` because of it."""

    def __init__(self, what: str, error: BaseException) -> None:
        super().__init__(what, error)
        self.what, self.error, self.skipped = what, error, 0
        self.__cause__ = error

    def __str__(self) -> str:
        skipped = f"; {self.skipped} later write(s) of it not applied" if self.skipped else ""
        return f"{self.what} (stored without waiting) failed: {type(self.error).__name__}: {self.error}{skipped}"


@dataclass(frozen=True)
class _Submitted:
    order: int  # submissions counted from 0: a run applies those submitted before it
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    owner: Hashable
    what: str


class Transaction:
    """``with Transaction(conn):`` — one transaction, committed on exit, rolled back on error.

    Writes take the lock up front (``BEGIN IMMEDIATE``), so a read-then-write (next ``seq``)
    cannot race another process writing the same database. ``write=False`` gives several reads
    one consistent snapshot.
    """

    def __init__(self, conn: sqlite3.Connection, *, write: bool = True) -> None:
        self._conn = conn
        self._begin = "BEGIN IMMEDIATE" if write else "BEGIN"

    def __enter__(self) -> sqlite3.Connection:
        self._conn.execute(self._begin)
        return self._conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            try:
                self._conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        else:
            self._rollback()

    def _rollback(self) -> None:
        # After some errors (a full disk, an I/O error) SQLite has already rolled the transaction
        # back itself; a ROLLBACK then fails with "no transaction is active", and raising that
        # would hide the error that says what went wrong.
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")


class SqliteWorker:
    """The database at ``path``, with ``schema`` (statements separated by ``;``) at ``version``.

    The file, its directory and the schema are created on the first call (in the worker
    thread), so constructing one does no I/O. A database whose ``user_version`` is newer than
    ``version`` is refused rather than misread; an older one is brought up to it by
    ``migrations[n]`` (statements separated by ``;``) for each version ``n`` above its own, in
    one transaction, before the schema (whose ``IF NOT EXISTS`` statements then add what is new).
    ``closed_message`` is the error raised by a call after ``close()``.
    """

    def __init__(
        self, path: Path, *, schema: str, version: int, closed_message: str, migrations: dict[int, str] | None = None
    ) -> None:
        self.path = path
        self._schema = schema
        self._migrations = migrations or {}
        self._version = version
        self._closed_message = closed_message
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        # One token: calls run one at a time, so one connection is never used by two threads at
        # once and a call's transaction is never interleaved with another's.
        self._limiter = anyio.CapacityLimiter(1)
        # Appended on the event loop, taken from the front in the worker thread only (one call
        # at a time holds the limiter): deque's append and popleft are atomic.
        self._pending: deque[_Submitted] = deque()
        self._submitted = 0
        self._failed: dict[Hashable, WriteFailed] = {}  # touched in the worker thread only
        # Held to queue a write and to mark the worker closed, so none is queued after the close
        # applied the queue (and none lost).
        self._closing = threading.Lock()

    async def run(self, fn: Callable[..., _T], /, *args: Any, owner: Hashable | None = None) -> _T:
        """``fn(conn, *args)`` in the worker thread, after any call already running and every
        write submitted before this call. With ``owner``: raises instead the ``WriteFailed`` of
        that owner's submitted write that failed, if one did (once)."""
        # A cancelled caller still waits for the thread: a write is either committed or rolled
        # back, never left half-done on the shared connection. One cancelled before its thread
        # started leaves the writes submitted before it queued, for the next call.
        upto = self._submitted
        return await anyio.to_thread.run_sync(self._call, upto, owner, fn, *args, limiter=self._limiter)

    async def submit(self, fn: Callable[..., Any], /, *args: Any, owner: Hashable, what: str) -> None:
        """Queue the write ``fn(conn, *args)`` without waiting for it (its result is dropped);
        ``what`` names it in the ``WriteFailed`` raised, should it fail, by ``owner``'s next waited
        call. Returns at once, unless the queue is full (DRAIN_AT): then it is applied first.
        Raises ``RuntimeError`` after ``close()``."""
        with self._closing:
            if self._closed:
                raise RuntimeError(self._closed_message)
            self._pending.append(_Submitted(self._submitted, fn, args, owner, what))
            self._submitted += 1
        if len(self._pending) >= DRAIN_AT:
            await self.flush(owner=owner)

    @property
    def queued(self) -> bool:
        """Whether submitted writes wait for a call to apply them."""
        return bool(self._pending)

    async def flush(self, *, owner: Hashable | None = None) -> None:
        """Wait until every write submitted so far is applied (``run`` of nothing)."""
        await self.run(_nothing, owner=owner)

    async def close(self) -> None:
        """Apply the writes still queued and close the connection; later calls raise
        ``RuntimeError``. Raises a ``WriteFailed`` no owner's waited call raised yet (after
        closing). Safe to call twice."""
        # Shielded: a close cancelled before its thread started would drop the queued writes.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._close, limiter=self._limiter)

    def _call(self, upto: int, owner: Hashable | None, fn: Callable[..., _T], *args: Any) -> _T:
        if self._closed:
            raise RuntimeError(self._closed_message)
        if self._conn is None:
            self._conn = self._open()
        self._apply(self._conn, upto)
        if owner is not None and owner in self._failed:
            raise self._failed.pop(owner)
        return fn(self._conn, *args)

    def _apply(self, conn: sqlite3.Connection, upto: int) -> None:
        """The writes submitted before the ``upto``-th, in order, each committed or rolled back
        by its own function."""
        while self._pending and self._pending[0].order < upto:
            write = self._pending.popleft()
            failed = self._failed.get(write.owner)
            if failed is not None:
                failed.skipped += 1
                continue
            try:
                write.fn(conn, *write.args)
            except Exception as exc:
                self._failed[write.owner] = WriteFailed(write.what, exc)
                log.warning("%s (stored without waiting) failed", write.what, exc_info=exc)

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: no implicit transactions; single statements commit at once and
        # multi-statement writes use Transaction. timeout: wait for another process's write.
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10.0)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            # In WAL mode NORMAL still survives a process crash; only an OS crash or power loss
            # can drop the last commits.
            conn.execute("PRAGMA synchronous=NORMAL")
            # References hold, and ON DELETE CASCADE deletes what a deleted row owns.
            conn.execute("PRAGMA foreign_keys=ON")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        with Transaction(conn):
            found = conn.execute("PRAGMA user_version").fetchone()[0]
            if found > self._version:
                raise RuntimeError(f"{self.path} has schema version {found}; this Totem knows {self._version}")
            if found < self._version:
                steps = [self._migrations[n] for n in range(found + 1, self._version + 1)] if found else []
                for statement in ";".join([*steps, self._schema]).split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version={self._version}")

    def _close(self) -> None:
        with self._closing:  # from here no write is queued, so the queue is applied whole
            closing, self._closed = not self._closed, True
        if closing and self._pending:
            if self._conn is None:
                self._conn = self._open()
            self._apply(self._conn, self._submitted)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._failed:
            failed = next(iter(self._failed.values()))
            self._failed.clear()
            raise failed


def _nothing(conn: sqlite3.Connection) -> None:
    """A waited call that only applies the writes submitted before it."""
