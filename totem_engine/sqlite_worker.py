"""One SQLite file, one connection, one call at a time in a worker thread.

Shared by the history database (totem_engine.store) and the snapshot index
(totem_engine.snapshots): both are opened the same way (WAL, ``synchronous=NORMAL``, foreign
keys, a versioned schema) and both run their sqlite work off the event loop, so neither blocks
on disk.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

__all__ = ["SqliteWorker", "Transaction"]

_T = TypeVar("_T")


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

    async def run(self, fn: Callable[..., _T], /, *args: Any) -> _T:
        """``fn(conn, *args)`` in the worker thread, after any call already running."""
        # A cancelled caller still waits for the thread: a write is either committed or rolled
        # back, never left half-done on the shared connection.
        return await anyio.to_thread.run_sync(self._call, fn, *args, limiter=self._limiter)

    async def close(self) -> None:
        """Close the connection; later calls raise ``RuntimeError``. Safe to call twice."""
        await anyio.to_thread.run_sync(self._close, limiter=self._limiter)

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self._closed:
            raise RuntimeError(self._closed_message)
        if self._conn is None:
            self._conn = self._open()
        return fn(self._conn, *args)

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
        self._closed = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None
