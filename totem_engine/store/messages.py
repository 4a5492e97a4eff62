"""Messages and parts on the store's connection, in its worker thread: each write's statements and
the cache update that follows them (cache.py), each read through the cache.

``Store`` (history.py) runs these one at a time on its worker; ``DeferredWrites`` (deferred.py)
queues the same writes without waiting. Nothing here is deleted: a message set aside by a rewind
is marked ``rewound``, a retried step's parts ``discarded``.
"""

from __future__ import annotations

import sqlite3
import time

from totem_engine.sqlite_worker import Transaction
from totem_engine.store.cache import SessionCache
from totem_engine.store.encoding import decoded, part_of, session_row
from totem_engine.store.errors import MessageNotFound, PartNotFound
from totem_engine.store.rows import StoredMessage, StoredPart


class MessageRows:
    """The ``messages`` and ``parts`` tables, read and written on a connection; ``cache`` kept
    up to date with every write. Only the worker thread calls it."""

    def __init__(self, cache: SessionCache) -> None:
        self.cache = cache

    def add_message(
        self,
        conn: sqlite3.Connection,
        message_id: str,
        session_id: str,
        role: str,
        turn_id: str,
        step: int | None,
        model: str | None,
    ) -> str:
        now = time.time()
        with Transaction(conn):
            parent = session_row(conn, session_id)["head"]  # it follows the conversation as it stands
            seq = conn.execute(
                "INSERT INTO messages (id, session_id, seq, role, turn_id, step, model, created_at, parent_id)"
                " VALUES (?, ?, (SELECT COALESCE(MAX(seq), -1) + 1 FROM messages"
                " WHERE session_id = ?), ?, ?, ?, ?, ?, ?) RETURNING seq",
                (message_id, session_id, session_id, role, turn_id, step, model, now, parent),
            ).fetchall()[0][0]
            conn.execute("UPDATE sessions SET updated_at = ?, head = ? WHERE id = ?", (now, message_id, session_id))
        self.cache.add_message(StoredMessage(message_id, session_id, seq, role, turn_id, step, model, now, [], parent))
        return message_id

    def add_part(
        self,
        conn: sqlite3.Connection,
        message_id: str,
        type: str,
        encoded: str,
        status: str | None,
        part_id: str,
    ) -> str:
        now = time.time()
        with Transaction(conn):
            row = conn.execute(
                "SELECT session_id FROM messages WHERE id = ?", (message_id,)
            ).fetchone()
            if row is None:
                raise MessageNotFound(message_id)
            seq = conn.execute(
                "INSERT INTO parts (id, message_id, session_id, seq, type, data, status,"
                " discarded, created_at, updated_at) VALUES (?, ?, ?, (SELECT COALESCE(MAX(seq),"
                " -1) + 1 FROM parts WHERE message_id = ?), ?, ?, ?, 0, ?, ?) RETURNING seq",
                (part_id, message_id, row["session_id"], message_id, type, encoded, status,
                 now, now),
            ).fetchall()[0][0]
        self.cache.add_part(
            StoredPart(part_id, message_id, seq, type, decoded(part_id, type, encoded), status, False, now, now)
        )
        return part_id

    def update_part(self, conn: sqlite3.Connection, part_id: str, encoded: str | None, status: str | None) -> None:
        now = time.time()
        row = conn.execute(
            "UPDATE parts SET data = COALESCE(?, data), status = COALESCE(?, status),"
            " updated_at = ? WHERE id = ? RETURNING type, data, status",
            (encoded, status, now, part_id),
        ).fetchall()
        if not row:
            raise PartNotFound(part_id)
        row = row[0]
        self.cache.update_part(part_id, decoded(part_id, row["type"], row["data"]), row["status"], now)

    def discard_parts(self, conn: sqlite3.Connection, message_id: str) -> None:
        with Transaction(conn):
            found = conn.execute("SELECT 1 FROM messages WHERE id = ?", (message_id,))
            if found.fetchone() is None:
                raise MessageNotFound(message_id)
            now = time.time()
            conn.execute(
                "UPDATE parts SET discarded = 1, updated_at = ? WHERE message_id = ?",
                (now, message_id),
            )
        self.cache.discard(message_id, now)

    def move_head(self, conn: sqlite3.Connection, session_id: str, head: str | None, marked: set[str]) -> None:
        now = time.time()
        with Transaction(conn):
            session_row(conn, session_id)
            for message_id in ([head] if head is not None else []) + sorted(marked):
                found = conn.execute("SELECT 1 FROM messages WHERE id = ? AND session_id = ?", (message_id, session_id))
                if found.fetchone() is None:
                    raise MessageNotFound(message_id)
            conn.executemany("UPDATE messages SET rewound = 1 WHERE id = ?", [(m,) for m in sorted(marked)])
            conn.execute("UPDATE sessions SET head = ?, updated_at = ? WHERE id = ?", (head, now, session_id))
        self.cache.move_head(session_id, head, marked, now)

    def read(self, conn: sqlite3.Connection, session_id: str, include_discarded: bool) -> list[StoredMessage]:
        with Transaction(conn, write=False):
            self._load(conn, session_id)
        return self.cache.read(session_id, include_discarded) or []

    def tree(self, conn: sqlite3.Connection, session_id: str) -> tuple[list[StoredMessage], str | None]:
        with Transaction(conn, write=False):
            self._load(conn, session_id)
        found = self.cache.tree(session_id)
        assert found is not None
        return found

    def _load(self, conn: sqlite3.Connection, session_id: str) -> None:
        """The session's messages in the cache (read when they are not), inside a read transaction."""
        self.cache.check(conn)
        if self.cache.tree(session_id) is None:
            head = session_row(conn, session_id)["head"]
            self.cache.fill(session_id, stored_messages(conn, session_id, include_discarded=True), head)


def stored_messages(conn: sqlite3.Connection, session_id: str, include_discarded: bool) -> list[StoredMessage]:
    """Every message of the session, of every branch, in order, each with its parts (without the
    discarded ones unless ``include_discarded``; a message whose parts were all discarded is then
    left out, one with no parts yet kept)."""
    # Callers hold a read transaction, so a concurrent writer cannot land between the two
    # queries and leave a part whose message is missing.
    message_rows = conn.execute(
        "SELECT * FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
    ).fetchall()
    part_rows = conn.execute(
        "SELECT * FROM parts WHERE session_id = ? ORDER BY seq", (session_id,)
    ).fetchall()
    parts: dict[str, list[StoredPart]] = {row["id"]: [] for row in message_rows}
    any_parts: set[str] = set()
    for row in part_rows:
        any_parts.add(row["message_id"])
        if include_discarded or not row["discarded"]:
            parts[row["message_id"]].append(part_of(row))
    return [
        StoredMessage(
            id=row["id"],
            session_id=row["session_id"],
            seq=row["seq"],
            role=row["role"],
            turn_id=row["turn_id"],
            step=row["step"],
            model=row["model"],
            created_at=row["created_at"],
            parts=parts[row["id"]],
            parent_id=row["parent_id"],
            rewound=bool(row["rewound"]),
        )
        for row in message_rows
        if parts[row["id"]] or row["id"] not in any_parts
    ]
