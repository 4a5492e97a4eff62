"""The ``leases`` table: which process runs each session's turns now, recorded so that every
process sharing the database sees it. Part of ``Store`` (history.py); totem_engine/leases.py
decides who may hold a lease and keeps one alive."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace

from totem_engine.sqlite_worker import SqliteWorker, Transaction
from totem_engine.store.encoding import lease_of, session_row
from totem_engine.store.rows import Lease


class LeaseRows:
    """The lease queries of ``Store``, on its worker ``_db``."""

    _db: SqliteWorker

    async def take_lease(self, lease: Lease, *, in_force: Callable[[Lease], bool]) -> Lease:
        """Record ``lease`` as its session's, unless the lease recorded for the session is
        another one that is still ``in_force`` (its holder alive); returns the lease in force
        after the call: ``lease`` when it was taken. One transaction, so of two processes taking
        at once one wins. Raises ``SessionNotFound``."""

        def take(conn: sqlite3.Connection) -> Lease:
            with Transaction(conn):
                session_row(conn, lease.session_id)
                row = conn.execute("SELECT * FROM leases WHERE session_id = ?", (lease.session_id,)).fetchone()
                if row is not None:
                    current = lease_of(row)
                    if current.token != lease.token and in_force(current):
                        return current
                conn.execute(
                    "INSERT OR REPLACE INTO leases (session_id, token, pid, host, holder, taken_at, heartbeat, abort_requested)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
                    (lease.session_id, lease.token, lease.pid, lease.host, lease.holder, lease.taken_at, lease.heartbeat),
                )
            return replace(lease, abort_requested=False)

        return await self._db.run(take)

    async def renew_lease(self, session_id: str, token: str, heartbeat: float) -> Lease | None:
        """The lease ``token`` of the session with its heartbeat set to ``heartbeat``, as it now
        stands (``abort_requested`` included); None when it is no longer recorded (released, or
        taken over by another process that found it stale)."""

        def renew(conn: sqlite3.Connection) -> Lease | None:
            rows = conn.execute(
                "UPDATE leases SET heartbeat = ? WHERE session_id = ? AND token = ? RETURNING *",
                (heartbeat, session_id, token),
            ).fetchall()
            return lease_of(rows[0]) if rows else None

        return await self._db.run(renew)

    async def release_lease(self, session_id: str, token: str) -> None:
        """Forget the lease ``token`` of the session (nothing when another one is recorded)."""
        await self._db.run(
            lambda conn: conn.execute("DELETE FROM leases WHERE session_id = ? AND token = ?", (session_id, token))
        )

    async def leases(self, session_id: str | None = None) -> list[Lease]:
        """The recorded leases (of ``session_id`` alone when given), live or not."""

        def query(conn: sqlite3.Connection) -> list[Lease]:
            where, args = ("WHERE session_id = ?", (session_id,)) if session_id is not None else ("", ())
            return [lease_of(row) for row in conn.execute(f"SELECT * FROM leases {where}", args)]

        return await self._db.run(query)

    async def request_abort(self, session_id: str, token: str) -> bool:
        """Ask the holder of the lease ``token`` to abort its turn (it reads the flag at its next
        heartbeat); False when that lease is no longer recorded."""

        def flag(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "UPDATE leases SET abort_requested = 1 WHERE session_id = ? AND token = ?", (session_id, token)
            )
            return cursor.rowcount > 0

        return await self._db.run(flag)
