"""The ``Store``: the history database's async API (sessions, messages and parts; the leases
of leases.py; a session forked or exported), each call run on one connection in one worker thread.

The file, its directory and the schema are created on first use (in the worker thread), so
constructing a ``Store`` does no I/O. A session's messages are read once and then kept up to date
by the store's own writes (cache.py); the writes themselves are messages.py's.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import platformdirs

from totem_engine.sqlite_worker import SqliteWorker, Transaction
from totem_engine.store.cache import SessionCache, path_ids
from totem_engine.store.deferred import DeferredWrites
from totem_engine.store.encoding import encoded, session_of, session_row, stored_title
from totem_engine.store.errors import MessageNotFound, SessionNotFound
from totem_engine.store.leases import LeaseRows
from totem_engine.store.messages import MessageRows, stored_messages
from totem_engine.store.rows import PART_TYPES, ROLES, Session, StoredMessage, new_id
from totem_engine.store.schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION


def default_db_path() -> Path:
    """``<user data dir>/totem/totem.db``; honours ``XDG_DATA_HOME`` on Linux."""
    return Path(platformdirs.user_data_dir("totem")) / "totem.db"


class Store(LeaseRows):
    """The history database. ``path`` defaults to ``default_db_path()``.

    The file, its directory and the schema are created on first use (in the worker thread), so
    constructing a Store does no I/O. Use ``async with Store() as store`` or call ``close()``.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self._db = SqliteWorker(
            self.path, schema=SCHEMA, version=SCHEMA_VERSION, closed_message="store is closed", migrations=MIGRATIONS
        )
        self._cache = SessionCache()
        self._rows = MessageRows(self._cache)

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- sessions -------------------------------------------------------------------------

    async def create_session(
        self, *, cwd: str, model: str, mode: str = "build", title: str | None = None, session_id: str | None = None
    ) -> Session:
        """``session_id``: a given id (a sub-agent's thread is stored under its conversation's
        id in a store of its own); else a new one."""
        return await self._db.run(self._create_session, cwd, model, mode, title, session_id)

    def _create_session(
        self, conn: sqlite3.Connection, cwd: str, model: str, mode: str, title: str | None, session_id: str | None
    ) -> Session:
        now = time.time()
        title = stored_title(title) if title is not None else None
        session = Session(session_id or new_id("ses"), title, model, mode, cwd, None, None, {}, now, now)
        conn.execute(
            "INSERT INTO sessions (id, title, model, mode, cwd, meta, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, '{}', ?, ?)",
            (session.id, title, model, mode, cwd, now, now),
        )
        self._cache.check(conn)
        self._cache.fill(session.id, [], None)
        return session

    async def get_session(self, session_id: str) -> Session:
        """The session, or ``SessionNotFound``."""
        return await self._db.run(lambda conn: session_of(session_row(conn, session_id)))

    async def list_sessions(self, *, cwd: str | None = None) -> list[Session]:
        """All sessions (only those started in ``cwd`` when given), most recently updated first."""

        def query(conn: sqlite3.Connection) -> list[Session]:
            where, args = ("WHERE cwd = ?", (cwd,)) if cwd is not None else ("", ())
            rows = conn.execute(
                f"SELECT * FROM sessions {where} ORDER BY updated_at DESC, id DESC", args
            )
            return [session_of(row) for row in rows]

        return await self._db.run(query)

    async def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        model: str | None = None,
        mode: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Set the given fields (``meta`` is replaced whole; None leaves a field) and touch
        ``updated_at``. Raises ``SessionNotFound``."""

        def update(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(
                "UPDATE sessions SET title = COALESCE(?, title), model = COALESCE(?, model),"
                " mode = COALESCE(?, mode), meta = COALESCE(?, meta), updated_at = ?"
                " WHERE id = ?",
                (None if title is None else stored_title(title), model, mode,
                 None if meta is None else encoded(meta), time.time(), session_id),
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)

        await self._db.run(update)

    async def projects(self) -> list[tuple[str, int, float]]:
        """Every project (session ``cwd``) with sessions: ``(cwd, how many, when the newest was
        last updated)``, most recently updated first."""

        def query(conn: sqlite3.Connection) -> list[tuple[str, int, float]]:
            rows = conn.execute(
                "SELECT cwd, COUNT(*) AS count, MAX(updated_at) AS updated FROM sessions"
                " GROUP BY cwd ORDER BY updated DESC, cwd"
            )
            return [(row["cwd"], row["count"], row["updated"]) for row in rows]

        return await self._db.run(query)

    # -- messages and parts ---------------------------------------------------------------

    async def add_message(
        self,
        session_id: str,
        role: str,
        *,
        turn_id: str,
        step: int | None = None,
        model: str | None = None,
    ) -> str:
        """Append a message (next ``seq`` in the session), touch the session's ``updated_at``
        and return the new ``msg_…`` id. Raises ``SessionNotFound``, ``ValueError`` for a role
        outside ``ROLES``."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")
        return await self._db.run(self._rows.add_message, new_id("msg"), session_id, role, turn_id, step, model)

    async def add_part(
        self, message_id: str, type: str, data: dict[str, Any], *, status: str | None = None, part_id: str | None = None
    ) -> str:
        """Append a part (next ``seq`` in the message) and return its ``prt_…`` id: ``part_id``
        (from ``new_id("prt")``, for a caller that names the part before it is stored) or a new one.
        Raises ``MessageNotFound``, ``ValueError`` for a type outside ``PART_TYPES``."""
        if type not in PART_TYPES:
            raise ValueError(f"unknown part type {type!r}")
        return await self._db.run(self._rows.add_part, message_id, type, encoded(data), status, part_id or new_id("prt"))

    async def update_part(
        self, part_id: str, *, data: dict[str, Any] | None = None, status: str | None = None
    ) -> None:
        """Replace the part's ``data`` and/or ``status`` (None leaves it) and touch its
        ``updated_at``. Raises ``PartNotFound``."""
        await self._db.run(self._rows.update_part, part_id, None if data is None else encoded(data), status)

    async def discard_message_parts(self, message_id: str) -> None:
        """Mark every part of the message discarded (kept, hidden from ``messages()``).
        Raises ``MessageNotFound``."""
        await self._db.run(self._rows.discard_parts, message_id)

    async def messages(
        self, session_id: str, *, include_discarded: bool = False
    ) -> list[StoredMessage]:
        """The conversation as it stands (its head and the messages before it, parent by
        parent), in order, each with its parts in order: not the messages a rewind set aside or
        an answer's other variants (``tree`` has them).

        Without ``include_discarded``, discarded parts are left out, and so is a message whose
        parts were all discarded (a retried step's message); a message with no parts yet is
        kept. Raises ``SessionNotFound``.
        """
        return await self._db.run(self._rows.read, session_id, include_discarded)

    async def tree(self, session_id: str) -> tuple[list[StoredMessage], str | None]:
        """Every message of the session, of every branch, with every part, in order (``seq``),
        and the conversation's head (None: it has no message). Raises ``SessionNotFound``."""
        return await self._db.run(self._rows.tree, session_id)

    async def move_head(self, session_id: str, head: str | None, *, rewound: Iterable[str] = ()) -> None:
        """The conversation now ends at ``head`` (a message of the session; None: before its
        first), and the ``rewound`` messages are marked as set aside by a rewind. Nothing is
        deleted: the messages off the path stay, for ``tree`` and ``export``. Raises
        ``SessionNotFound``, ``MessageNotFound`` for a message of another session."""
        await self._db.run(self._rows.move_head, session_id, head, set(rewound))

    async def export(self, session_id: str) -> dict[str, Any]:
        """``{"session": Session.to_dict(), "messages": [StoredMessage.to_dict(), …]}`` with every
        message of every branch and every part, discarded ones included (``"discarded": true``);
        each message says whether it is on the conversation's path (``"active"``). Raises
        ``SessionNotFound``."""

        def read(conn: sqlite3.Connection) -> dict[str, Any]:
            with Transaction(conn, write=False):
                session = session_of(session_row(conn, session_id))
                messages = stored_messages(conn, session_id, include_discarded=True)
            path = path_ids(messages, session.head)
            return {"session": session.to_dict(), "messages": [{**m.to_dict(), "active": m.id in path} for m in messages]}

        return await self._db.run(read)

    async def delete_session(self, session_id: str) -> None:
        """The session gone whole: its messages, parts and lease (the one write that removes
        history: the user asked to delete the session). A session forked from it keeps its own
        copies, its ``parent_id`` cleared. Raises ``SessionNotFound``."""

        def delete(conn: sqlite3.Connection) -> None:
            with Transaction(conn):
                session_row(conn, session_id)
                for table in ("parts", "messages", "leases"):
                    conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
                conn.execute(
                    "UPDATE sessions SET parent_id = NULL, forked_from_message = NULL WHERE parent_id = ?", (session_id,)
                )
                conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            self._cache.check(conn)
            self._cache.forget(session_id)

        await self._db.run(delete)

    async def fork(self, session_id: str, at_message_id: str) -> Session:
        """A new session holding copies of ``at_message_id`` and the messages before it on its
        branch (the conversation as it stood at that message, whichever branch it is on).

        Copies get new ids but the same order, content and timestamps (discarded parts stay
        discarded; a checkpoint part's ``covers`` names the copy of the message it covered); the
        new session copies title, model, mode, cwd and meta, records ``parent_id`` and
        ``forked_from_message``, and its conversation ends at the copy of the message. Raises
        ``SessionNotFound``, or ``MessageNotFound`` when the message is not in that session.
        """
        return await self._db.run(self._fork, session_id, at_message_id)

    def _fork(self, conn: sqlite3.Connection, session_id: str, at_message_id: str) -> Session:
        now = time.time()
        with Transaction(conn):
            source = session_of(session_row(conn, session_id))
            rows = {row["id"]: row for row in conn.execute("SELECT * FROM messages WHERE session_id = ?", (session_id,))}
            if at_message_id not in rows:
                raise MessageNotFound(at_message_id)
            branch: list[sqlite3.Row] = []
            at: str | None = at_message_id
            while at is not None and at in rows:
                branch.append(rows[at])
                at = rows[at]["parent_id"]
            branch.reverse()
            new_message_ids = {row["id"]: new_id("msg") for row in branch}
            fork = Session(new_id("ses"), source.title, source.model, source.mode, source.cwd,
                           session_id, at_message_id, source.meta, now, now, new_message_ids[at_message_id])
            conn.execute(
                "INSERT INTO sessions (id, title, model, mode, cwd, parent_id,"
                " forked_from_message, meta, created_at, updated_at, head)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (fork.id, fork.title, fork.model, fork.mode, fork.cwd, fork.parent_id,
                 fork.forked_from_message, encoded(fork.meta), now, now, fork.head),
            )
            parent = None
            for row in branch:
                conn.execute(
                    "INSERT INTO messages (id, session_id, seq, role, turn_id, step, model,"
                    " created_at, parent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (new_message_ids[row["id"]], fork.id, row["seq"], row["role"],
                     row["turn_id"], row["step"], row["model"], row["created_at"], parent),
                )
                parent = new_message_ids[row["id"]]
            for row in conn.execute(
                "SELECT * FROM parts WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall():
                if row["message_id"] not in new_message_ids:
                    continue
                data = row["data"]
                if row["type"] == "checkpoint":
                    data = _covers_copied(data, new_message_ids)
                conn.execute(
                    "INSERT INTO parts (id, message_id, session_id, seq, type, data, status,"
                    " discarded, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (new_id("prt"), new_message_ids[row["message_id"]], fork.id, row["seq"],
                     row["type"], data, row["status"], row["discarded"],
                     row["created_at"], row["updated_at"]),
                )
        return fork

    def deferred(self, session_id: str) -> DeferredWrites:
        """The session's writes that need not wait for the disk (a turn's hot path)."""
        return DeferredWrites(self._db, self._rows, session_id)

    async def close(self) -> None:
        """Store what ``DeferredWrites`` left queued and close the connection; later calls raise
        ``RuntimeError``. Raises the ``WriteFailed`` of a queued write no flush raised yet.
        Safe to call twice."""
        await self._db.close()


def _covers_copied(data: str, new_ids: dict[str, str]) -> str:
    """A compaction checkpoint part (compaction/checkpoints.py) as a fork copies it: the message it
    ``covers`` named by its copy's id, or a fork would replay the whole history again."""
    try:
        value = json.loads(data)
    except ValueError:
        return data
    if isinstance(value, dict) and value.get("covers") in new_ids:
        value["covers"] = new_ids[value["covers"]]
        return encoded(value)
    return data
