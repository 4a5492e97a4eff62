"""Sessions, messages and parts in one SQLite database: the durable, append-only history.

Why one module of this size (over 500 lines): the schema and every query that touches it stay
together, so the append-only rule (nothing deleted, parts only marked discarded) is kept in one
place.

Layout: a session holds messages (ordered by ``seq``); a message holds parts (ordered by ``seq``).
A part is one unit the loop streams: ``text``, ``reasoning``, ``tool``, ``step``, ``error`` or
``notice``, with a JSON ``data`` object and an optional ``status``; an ``image`` part holds an
attached image (totem_engine/images.py: status ``fresh``, then ``captioned``); a ``checkpoint`` part
(totem_engine.compaction) holds a summary that later requests replay in place of the messages it
covers.

History is never rewritten. Parts are appended; a streaming part may have its ``data`` and
``status`` replaced while it grows; the parts of a retried step are marked ``discarded``, never
deleted. Every write commits before its call returns (a ``DeferredWrites`` write: by the next
call on the store, and within 0.25 s while its turn runs), so a process killed mid-turn leaves
everything written up to its last call (but the last fraction of a second of a step's writes),
and the database is in WAL mode so another process (``totem sessions show``) can read while a
turn writes.

The API is async: each call runs its sqlite work in a worker thread, one call at a time on one
connection, so the event loop never blocks on disk.

``messages()`` is read once per session and then kept up to date by this store's own writes (a
``_Sessions`` cache, touched only in the worker thread): a write replaces the one message it
changes with a new object, so an unchanged message is the same object on every read, which is
what the derived history (totem_engine/compaction/derived.py) keys its conversions by. A commit
by any other connection (another process, another ``Store``) changes SQLite's
``PRAGMA data_version``, and the cache is then dropped and read again.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import socket
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import anyio
import platformdirs

from totem_engine.api.errors import EngineError
from totem_engine.sqlite_worker import SqliteWorker, Transaction, WriteFailed

__all__ = [
    "DeferredWrites",
    "Lease",
    "MessageNotFound",
    "PartNotFound",
    "PART_TYPES",
    "ROLES",
    "Session",
    "SessionElsewhere",
    "SessionInUse",
    "SessionNotFound",
    "SessionUnavailable",
    "Store",
    "StoredMessage",
    "StoredPart",
    "WriteFailed",
    "default_db_path",
    "new_id",
]

log = logging.getLogger(__name__)

ROLES = frozenset({"user", "assistant"})
PART_TYPES = frozenset({"text", "reasoning", "tool", "step", "state", "error", "notice", "checkpoint", "context", "image"})

# Bump with a migration when the schema changes; a database written by a newer Totem is refused
# rather than misread.
SCHEMA_VERSION = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT,
    model TEXT NOT NULL,
    mode TEXT NOT NULL,
    cwd TEXT NOT NULL,
    parent_id TEXT REFERENCES sessions(id),
    forked_from_message TEXT REFERENCES messages(id),
    meta TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    head TEXT
);
CREATE INDEX IF NOT EXISTS sessions_by_cwd ON sessions(cwd, updated_at);
CREATE INDEX IF NOT EXISTS sessions_by_updated ON sessions(updated_at);

CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    step INTEGER,
    model TEXT,
    created_at REAL NOT NULL,
    parent_id TEXT,
    rewound INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, seq)
);

CREATE TABLE IF NOT EXISTS parts (
    id TEXT PRIMARY KEY,
    message_id TEXT NOT NULL REFERENCES messages(id),
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    status TEXT,
    discarded INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    UNIQUE (message_id, seq)
);
CREATE INDEX IF NOT EXISTS parts_by_session ON parts(session_id);

CREATE TABLE IF NOT EXISTS leases (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    token TEXT NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    holder TEXT NOT NULL,
    taken_at REAL NOT NULL,
    heartbeat REAL NOT NULL,
    abort_requested INTEGER NOT NULL DEFAULT 0
);
"""

# Version 2: the conversation is a tree (a rewind, a regenerated answer): each message names the
# one before it on its branch, the session the newest message of the branch it follows (its
# ``head``). Before, a session was one line, each message following the one before it in seq.
_MIGRATIONS = {
    2: """
ALTER TABLE sessions ADD COLUMN head TEXT;
ALTER TABLE messages ADD COLUMN parent_id TEXT;
ALTER TABLE messages ADD COLUMN rewound INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET parent_id = (SELECT p.id FROM messages AS p
    WHERE p.session_id = messages.session_id AND p.seq = messages.seq - 1);
UPDATE sessions SET head = (SELECT m.id FROM messages AS m WHERE m.session_id = sessions.id
    ORDER BY m.seq DESC LIMIT 1)
""",
    # Version 3: the ``leases`` table (one process runs a session's turns at a time,
    # totem_engine/leases.py), added by the schema's CREATE TABLE IF NOT EXISTS. Bumped all the
    # same, so a Totem that would not respect a lease refuses the database.
    3: "",
}


class SessionNotFound(EngineError, LookupError):
    kind = "not_found"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class SessionUnavailable(EngineError, LookupError):
    """A session that exists but cannot be used here and now (its subclasses say why)."""

    def __init__(self, message: str, session_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id


class SessionElsewhere(SessionUnavailable):
    """A session asked for in another project than its own."""

    def __init__(self, session_id: str, cwd: str, root: Path):
        super().__init__(
            f"session {session_id} belongs to the project {cwd}, not {root}; run from there (or --cwd {cwd})", session_id
        )


class SessionInUse(SessionUnavailable):
    """A session whose lease a live process holds: it is running a turn (or an undo) there.
    ``lease`` is that process's (``Lease``)."""

    kind = "busy"

    def __init__(self, lease: Lease):
        super().__init__(
            f"session {lease.session_id} is running a turn in {lease.holder} (pid {lease.pid}"
            f"{'' if lease.host == THIS_HOST else ' on ' + lease.host}); wait for it to end, or abort it there",
            lease.session_id,
        )
        self.lease = lease


class MessageNotFound(EngineError, LookupError):
    kind = "not_found"

    def __init__(self, message_id: str) -> None:
        super().__init__(f"no message {message_id!r}")
        self.message_id = message_id


class PartNotFound(LookupError):
    def __init__(self, part_id: str) -> None:
        super().__init__(f"no part {part_id!r}")
        self.part_id = part_id


_id_lock = threading.Lock()
_last_id_ns = 0


def new_id(prefix: str) -> str:
    """A fresh id ``<prefix>_<16 hex digits of ns timestamp><12 random hex>``, e.g. ``prt_…``.

    Ids made by one process sort in creation order (the timestamp is forced to increase);
    across processes they sort by wall-clock time.
    """
    global _last_id_ns
    with _id_lock:
        _last_id_ns = max(time.time_ns(), _last_id_ns + 1)
        stamp = _last_id_ns
    return f"{prefix}_{stamp:016x}{secrets.token_hex(6)}"


def default_db_path() -> Path:
    """``<user data dir>/totem/totem.db``; honours ``XDG_DATA_HOME`` on Linux."""
    return Path(platformdirs.user_data_dir("totem")) / "totem.db"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


class _Row:
    def to_dict(self) -> dict[str, Any]:
        """The row as a JSON-able dict with camelCase keys (``data``/``meta`` left as stored)."""
        return {
            _camel(f.name): getattr(self, f.name)
            for f in fields(self)  # type: ignore[arg-type]
        }


@dataclass(frozen=True)
class Session(_Row):
    id: str
    title: str | None
    model: str
    mode: str
    cwd: str
    parent_id: str | None
    forked_from_message: str | None
    meta: dict[str, Any]
    created_at: float
    updated_at: float
    head: str | None = None  # the newest message of the conversation as it stands (None: none yet)


@dataclass(frozen=True)
class StoredPart(_Row):
    id: str
    message_id: str
    seq: int
    type: str
    data: dict[str, Any]
    status: str | None
    discarded: bool
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class StoredMessage(_Row):
    id: str
    session_id: str
    seq: int
    role: str
    turn_id: str
    step: int | None
    model: str | None
    created_at: float
    parts: list[StoredPart]
    parent_id: str | None = None  # the message before it on its branch (None: the first)
    rewound: bool = False  # set aside by a rewind (kept, never again in the conversation)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "parts": [part.to_dict() for part in self.parts]}


@dataclass(frozen=True)
class Lease(_Row):
    """Who runs a session's turns now (totem_engine/leases.py): the process ``pid`` on ``host``,
    a front end named ``holder`` ("totem run", "totem lsp" ...), the ``token`` of that one
    taking, when it was taken and last renewed (``heartbeat``, seconds since the epoch), and
    whether another process asked it to abort its turn."""

    session_id: str
    token: str
    pid: int
    host: str
    holder: str
    taken_at: float
    heartbeat: float
    abort_requested: bool = False


THIS_HOST = socket.gethostname()  # a lease's ``host`` when this machine's process holds it


def _lease(row: sqlite3.Row) -> Lease:
    return Lease(
        row["session_id"], row["token"], row["pid"], row["host"], row["holder"], row["taken_at"], row["heartbeat"],
        bool(row["abort_requested"]),
    )


def _session(row: sqlite3.Row) -> Session:
    return Session(
        id=row["id"],
        title=row["title"],
        model=row["model"],
        mode=row["mode"],
        cwd=row["cwd"],
        parent_id=row["parent_id"],
        forked_from_message=row["forked_from_message"],
        meta=json.loads(row["meta"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        head=row["head"],
    )


def _part(row: sqlite3.Row) -> StoredPart:
    data = json.loads(row["data"])
    return StoredPart(
        id=row["id"],
        message_id=row["message_id"],
        seq=row["seq"],
        type=row["type"],
        data=_repaired_call(data, row["id"]) if row["type"] == "tool" else data,
        status=row["status"],
        discarded=bool(row["discarded"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


# A lone surrogate ("A\udcffB" from a model's stream or a JSON escape) has no UTF-8 form, so
# SQLite cannot take it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` as SQLite can store it: each lone surrogate replaced by U+FFFD, nothing dropped."""
    return _SURROGATE.sub("\ufffd", text)


def _repaired_call(data: Any, part_id: str) -> Any:
    """A stored tool part as every later turn can send it back: a ``callId``, ``tool`` or
    ``arguments`` it holds that is not a string is made one (a number keeps its string form, an
    id that is no number is made from the part's own id, the same on every load). A part stored
    before ids were normalised at the wire (an integer ``callId``) failed every later turn."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    if "callId" in data and not (isinstance(data["callId"], str) and data["callId"]):
        call_id = data["callId"]
        number = isinstance(call_id, int | float) and not isinstance(call_id, bool)
        data["callId"] = str(call_id) if number else f"call_{part_id}"
    if "tool" in data and not isinstance(data["tool"], str):
        data["tool"] = str(data["tool"])
    if "arguments" in data and not isinstance(data["arguments"], str):
        data["arguments"] = json.dumps(data["arguments"])
    return data


def _dumps(value: dict[str, Any]) -> str:
    return storable(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _decoded(part_id: str, type: str, encoded: str) -> Any:
    """A part's data as a read gives it back (decoded from what was written, repaired)."""
    data = json.loads(encoded)
    return _repaired_call(data, part_id) if type == "tool" else data


def _shown(message: StoredMessage) -> StoredMessage | None:
    """The message as ``messages()`` shows it: without its discarded parts; None when every part
    was discarded (a message with no parts yet is shown)."""
    parts = [p for p in message.parts if not p.discarded]
    if len(parts) == len(message.parts):
        return message
    return replace(message, parts=parts) if parts else None


CACHED_SESSIONS = 8  # sessions whose messages a store keeps in memory, the most recently read


def path_ids(messages: list[StoredMessage], head: str | None) -> set[str]:
    """The ids of the conversation as it stands: ``head`` and the messages before it, parent by
    parent (every branch's messages are in ``messages``)."""
    parents = {m.id: m.parent_id for m in messages}
    found: set[str] = set()
    at = head
    while at is not None and at not in found:
        found.add(at)
        at = parents.get(at)
    return found


class _Sessions:
    """The messages of recently read sessions, every branch and every part included, as a read
    would return them. Kept up to date by the store's writes; only the worker thread touches it."""

    def __init__(self) -> None:
        self.messages: OrderedDict[str, list[StoredMessage]] = OrderedDict()
        self.heads: dict[str, str | None] = {}
        self.where: dict[str, tuple[str, int]] = {}  # message id -> (session id, index)
        self.part_message: dict[str, str] = {}  # part id -> message id
        # Per session, aligned with ``messages``: each as ``messages()`` shows it (None: hidden,
        # all its parts discarded or not on the conversation's path).
        self.shown: dict[str, list[StoredMessage | None]] = {}
        self.path: dict[str, set[str]] = {}  # the ids on the conversation's path
        self.data_version: int | None = None

    def check(self, conn: sqlite3.Connection) -> None:
        """Drop everything when another connection has committed since the last check."""
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self.data_version:
            self.clear()
            self.data_version = version

    def clear(self) -> None:
        self.messages.clear()
        self.heads.clear()
        self.where.clear()
        self.part_message.clear()
        self.shown.clear()
        self.path.clear()

    def fill(self, session_id: str, messages: list[StoredMessage], head: str | None) -> None:
        self.messages[session_id] = messages
        self.heads[session_id] = head
        self._reshow(session_id)
        for index, message in enumerate(messages):
            self.where[message.id] = (session_id, index)
            for part in message.parts:
                self.part_message[part.id] = message.id
        while len(self.messages) > CACHED_SESSIONS:
            self.forget(next(iter(self.messages)))

    def _reshow(self, session_id: str) -> None:
        messages = self.messages[session_id]
        path = self.path[session_id] = path_ids(messages, self.heads[session_id])
        self.shown[session_id] = [_shown(m) if m.id in path else None for m in messages]

    def forget(self, session_id: str) -> None:
        self.shown.pop(session_id, None)
        self.path.pop(session_id, None)
        self.heads.pop(session_id, None)
        for message in self.messages.pop(session_id, []):
            self.where.pop(message.id, None)
            for part in message.parts:
                self.part_message.pop(part.id, None)

    def read(self, session_id: str, include_discarded: bool) -> list[StoredMessage] | None:
        full = self.messages.get(session_id)
        if full is None:
            return None
        self.messages.move_to_end(session_id)
        if include_discarded:
            path = self.path[session_id]
            return [m for m in full if m.id in path]
        return [m for m in self.shown[session_id] if m is not None]

    def tree(self, session_id: str) -> tuple[list[StoredMessage], str | None] | None:
        full = self.messages.get(session_id)
        return None if full is None else (list(full), self.heads[session_id])

    def add_message(self, message: StoredMessage) -> None:
        messages = self.messages.get(message.session_id)
        if messages is not None:
            self.where[message.id] = (message.session_id, len(messages))
            messages.append(message)
            self.heads[message.session_id] = message.id
            self.path[message.session_id].add(message.id)
            self.shown[message.session_id].append(message)

    def move_head(self, session_id: str, head: str | None, rewound: set[str], now: float) -> None:
        """The conversation now ends at ``head``; the ``rewound`` messages are marked so."""
        if session_id not in self.messages:
            return
        for message_id in rewound:
            self.change(message_id, lambda m: replace(m, rewound=True))
        self.heads[session_id] = head
        self._reshow(session_id)

    def change(self, message_id: str, change: Any) -> None:
        """Replace the message by ``change(message)`` (a new object), when it is cached."""
        at = self.where.get(message_id)
        if at is None:
            return
        messages = self.messages[at[0]]
        messages[at[1]] = change(messages[at[1]])
        if message_id in self.path[at[0]]:
            self.shown[at[0]][at[1]] = _shown(messages[at[1]])

    def add_part(self, part: StoredPart) -> None:
        if part.message_id in self.where:
            self.part_message[part.id] = part.message_id
            self.change(part.message_id, lambda m: replace(m, parts=[*m.parts, part]))

    def update_part(self, part_id: str, data: Any, status: str | None, updated_at: float) -> None:
        message_id = self.part_message.get(part_id)
        if message_id is None:
            return

        def updated(message: StoredMessage) -> StoredMessage:
            parts = [replace(p, data=data, status=status, updated_at=updated_at) if p.id == part_id else p for p in message.parts]
            return replace(message, parts=parts)

        self.change(message_id, updated)

    def discard(self, message_id: str, now: float) -> None:
        self.change(
            message_id,
            lambda m: replace(m, parts=[replace(p, discarded=True, updated_at=now) for p in m.parts]),
        )


class Store:
    """The history database. ``path`` defaults to ``default_db_path()``.

    The file, its directory and the schema are created on first use (in the worker thread), so
    constructing a Store does no I/O. Use ``async with Store() as store`` or call ``close()``.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self._db = SqliteWorker(
            self.path, schema=_SCHEMA, version=SCHEMA_VERSION, closed_message="store is closed", migrations=_MIGRATIONS
        )
        self._cache = _Sessions()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- plumbing -------------------------------------------------------------------------

    @staticmethod
    def _session_row(conn: sqlite3.Connection, session_id: str) -> sqlite3.Row:
        row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return row

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
        title = storable(title) if title is not None else None
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
        return await self._db.run(lambda conn: _session(self._session_row(conn, session_id)))

    async def list_sessions(self, *, cwd: str | None = None) -> list[Session]:
        """All sessions (only those started in ``cwd`` when given), most recently updated first."""

        def query(conn: sqlite3.Connection) -> list[Session]:
            where, args = ("WHERE cwd = ?", (cwd,)) if cwd is not None else ("", ())
            rows = conn.execute(
                f"SELECT * FROM sessions {where} ORDER BY updated_at DESC, id DESC", args
            )
            return [_session(row) for row in rows]

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
                (None if title is None else storable(title), model, mode,
                 None if meta is None else _dumps(meta), time.time(), session_id),
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

    # -- leases (totem_engine/leases.py decides who holds one) ----------------------------

    async def take_lease(self, lease: Lease, *, in_force: Callable[[Lease], bool]) -> Lease:
        """Record ``lease`` as its session's, unless the lease recorded for the session is
        another one that is still ``in_force`` (its holder alive); returns the lease in force
        after the call: ``lease`` when it was taken. One transaction, so of two processes taking
        at once one wins. Raises ``SessionNotFound``."""

        def take(conn: sqlite3.Connection) -> Lease:
            with Transaction(conn):
                self._session_row(conn, lease.session_id)
                row = conn.execute("SELECT * FROM leases WHERE session_id = ?", (lease.session_id,)).fetchone()
                if row is not None:
                    current = _lease(row)
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
            return _lease(rows[0]) if rows else None

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
            return [_lease(row) for row in conn.execute(f"SELECT * FROM leases {where}", args)]

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
        return await self._db.run(self._add_message, new_id("msg"), session_id, role, turn_id, step, model)

    def _add_message(
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
            parent = self._session_row(conn, session_id)["head"]  # it follows the conversation as it stands
            seq = conn.execute(
                "INSERT INTO messages (id, session_id, seq, role, turn_id, step, model, created_at, parent_id)"
                " VALUES (?, ?, (SELECT COALESCE(MAX(seq), -1) + 1 FROM messages"
                " WHERE session_id = ?), ?, ?, ?, ?, ?, ?) RETURNING seq",
                (message_id, session_id, session_id, role, turn_id, step, model, now, parent),
            ).fetchall()[0][0]
            conn.execute("UPDATE sessions SET updated_at = ?, head = ? WHERE id = ?", (now, message_id, session_id))
        self._cache.add_message(StoredMessage(message_id, session_id, seq, role, turn_id, step, model, now, [], parent))
        return message_id

    async def add_part(
        self, message_id: str, type: str, data: dict[str, Any], *, status: str | None = None, part_id: str | None = None
    ) -> str:
        """Append a part (next ``seq`` in the message) and return its ``prt_…`` id: ``part_id``
        (from ``new_id("prt")``, for a caller that names the part before it is stored) or a new one.
        Raises ``MessageNotFound``, ``ValueError`` for a type outside ``PART_TYPES``."""
        if type not in PART_TYPES:
            raise ValueError(f"unknown part type {type!r}")
        return await self._db.run(self._add_part, message_id, type, _dumps(data), status, part_id or new_id("prt"))

    def _add_part(
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
        self._cache.add_part(
            StoredPart(part_id, message_id, seq, type, _decoded(part_id, type, encoded), status, False, now, now)
        )
        return part_id

    async def update_part(
        self, part_id: str, *, data: dict[str, Any] | None = None, status: str | None = None
    ) -> None:
        """Replace the part's ``data`` and/or ``status`` (None leaves it) and touch its
        ``updated_at``. Raises ``PartNotFound``."""
        await self._db.run(self._update_part, part_id, None if data is None else _dumps(data), status)

    def _update_part(self, conn: sqlite3.Connection, part_id: str, encoded: str | None, status: str | None) -> None:
        now = time.time()
        row = conn.execute(
            "UPDATE parts SET data = COALESCE(?, data), status = COALESCE(?, status),"
            " updated_at = ? WHERE id = ? RETURNING type, data, status",
            (encoded, status, now, part_id),
        ).fetchall()
        if not row:
            raise PartNotFound(part_id)
        row = row[0]
        self._cache.update_part(part_id, _decoded(part_id, row["type"], row["data"]), row["status"], now)

    async def discard_message_parts(self, message_id: str) -> None:
        """Mark every part of the message discarded (kept, hidden from ``messages()``).
        Raises ``MessageNotFound``."""

        def discard(conn: sqlite3.Connection) -> None:
            with Transaction(conn):
                found = conn.execute("SELECT 1 FROM messages WHERE id = ?", (message_id,))
                if found.fetchone() is None:
                    raise MessageNotFound(message_id)
                now = time.time()
                conn.execute(
                    "UPDATE parts SET discarded = 1, updated_at = ? WHERE message_id = ?",
                    (now, message_id),
                )
            self._cache.discard(message_id, now)

        await self._db.run(discard)

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

        return await self._db.run(self._read, session_id, include_discarded)

    def _read(self, conn: sqlite3.Connection, session_id: str, include_discarded: bool) -> list[StoredMessage]:
        with Transaction(conn, write=False):
            self._load(conn, session_id)
        return self._cache.read(session_id, include_discarded) or []

    async def tree(self, session_id: str) -> tuple[list[StoredMessage], str | None]:
        """Every message of the session, of every branch, with every part, in order (``seq``),
        and the conversation's head (None: it has no message). Raises ``SessionNotFound``."""

        def read(conn: sqlite3.Connection) -> tuple[list[StoredMessage], str | None]:
            with Transaction(conn, write=False):
                self._load(conn, session_id)
            found = self._cache.tree(session_id)
            assert found is not None
            return found

        return await self._db.run(read)

    def _load(self, conn: sqlite3.Connection, session_id: str) -> None:
        """The session's messages in the cache (read when they are not), inside a read transaction."""
        self._cache.check(conn)
        if self._cache.tree(session_id) is None:
            head = self._session_row(conn, session_id)["head"]
            self._cache.fill(session_id, self._messages(conn, session_id, include_discarded=True), head)

    async def move_head(self, session_id: str, head: str | None, *, rewound: Iterable[str] = ()) -> None:
        """The conversation now ends at ``head`` (a message of the session; None: before its
        first), and the ``rewound`` messages are marked as set aside by a rewind. Nothing is
        deleted: the messages off the path stay, for ``tree`` and ``export``. Raises
        ``SessionNotFound``, ``MessageNotFound`` for a message of another session."""
        marked = set(rewound)

        def move(conn: sqlite3.Connection) -> None:
            now = time.time()
            with Transaction(conn):
                self._session_row(conn, session_id)
                for message_id in ([head] if head is not None else []) + sorted(marked):
                    found = conn.execute("SELECT 1 FROM messages WHERE id = ? AND session_id = ?", (message_id, session_id))
                    if found.fetchone() is None:
                        raise MessageNotFound(message_id)
                conn.executemany("UPDATE messages SET rewound = 1 WHERE id = ?", [(m,) for m in sorted(marked)])
                conn.execute("UPDATE sessions SET head = ?, updated_at = ? WHERE id = ?", (head, now, session_id))
            self._cache.move_head(session_id, head, marked, now)

        await self._db.run(move)

    def _messages(
        self, conn: sqlite3.Connection, session_id: str, include_discarded: bool
    ) -> list[StoredMessage]:
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
                parts[row["message_id"]].append(_part(row))
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

    async def export(self, session_id: str) -> dict[str, Any]:
        """``{"session": Session.to_dict(), "messages": [StoredMessage.to_dict(), …]}`` with every
        message of every branch and every part, discarded ones included (``"discarded": true``);
        each message says whether it is on the conversation's path (``"active"``). Raises
        ``SessionNotFound``."""

        def read(conn: sqlite3.Connection) -> dict[str, Any]:
            with Transaction(conn, write=False):
                session = _session(self._session_row(conn, session_id))
                messages = self._messages(conn, session_id, include_discarded=True)
            path = path_ids(messages, session.head)
            return {"session": session.to_dict(), "messages": [{**m.to_dict(), "active": m.id in path} for m in messages]}

        return await self._db.run(read)

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
            source = _session(self._session_row(conn, session_id))
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
                 fork.forked_from_message, _dumps(fork.meta), now, now, fork.head),
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
        return DeferredWrites(self, session_id)

    async def close(self) -> None:
        """Store what ``DeferredWrites`` left queued and close the connection; later calls raise
        ``RuntimeError``. Raises the ``WriteFailed`` of a queued write no flush raised yet.
        Safe to call twice."""
        await self._db.close()


class DeferredWrites:
    """One session's appends and updates, each queued in the store's worker without waiting for
    the thread round trip (about 0.14 ms a write, a dozen writes a step): for a turn's steps,
    which need no write's result (ids are made here).

    The queue keeps the order of every call on the store: any later call (``Store.messages``
    included) applies it first, so it reads what was queued; ``commit_every`` stores it while a
    turn runs. Errors come later: a queued write
    that fails (``MessageNotFound``, a full disk ...) raises, as a ``WriteFailed`` naming it, at
    this session's next ``flush`` or ``messages`` here (or the store's ``close``), and the
    session's writes queued after it are not applied. ``ValueError`` for an unknown role or
    part type is raised at once.
    """

    def __init__(self, store: Store, session_id: str) -> None:
        self._store, self._db, self.session_id = store, store._db, session_id

    async def add_message(self, role: str, *, turn_id: str, step: int | None = None, model: str | None = None) -> str:
        """As ``Store.add_message`` into this session, queued; the new message's id."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")
        message_id = new_id("msg")
        await self._submit(
            f"add_message({role} {message_id})", self._store._add_message, message_id, self.session_id, role, turn_id, step, model
        )
        return message_id

    async def add_part(
        self, message_id: str, type: str, data: dict[str, Any], *, status: str | None = None, part_id: str | None = None
    ) -> str:
        """As ``Store.add_part``, queued; the part's id (``part_id`` or a new one)."""
        if type not in PART_TYPES:
            raise ValueError(f"unknown part type {type!r}")
        part_id = part_id or new_id("prt")
        # Encoded now: the caller may change ``data`` before the worker gets to it.
        await self._submit(
            f"add_part({type} {part_id} to {message_id})", self._store._add_part, message_id, type, _dumps(data), status, part_id
        )
        return part_id

    async def update_part(self, part_id: str, *, data: dict[str, Any] | None = None, status: str | None = None) -> None:
        """As ``Store.update_part``, queued."""
        encoded = None if data is None else _dumps(data)
        await self._submit(f"update_part({part_id})", self._store._update_part, part_id, encoded, status)

    async def flush(self) -> None:
        """Wait until every write queued so far is stored; raises a ``WriteFailed`` of this
        session's."""
        await self._db.flush(owner=self.session_id)

    async def commit(self) -> None:
        """Store what is queued, when anything is; a failed write is left for ``flush`` to raise."""
        if self._db.queued:
            await self._db.flush()

    async def commit_every(self, seconds: float) -> None:
        """``commit`` every ``seconds``, until cancelled: while a turn runs, so a step that waits
        (a long tool, a stalled stream) still has its writes on the disk for another process."""
        while True:
            await anyio.sleep(seconds)
            try:
                await self.commit()
            except Exception:  # the store itself failing (closed, unreadable): the turn's own next call raises it
                log.warning("committing the queued writes of %s failed", self.session_id, exc_info=True)
                return

    async def messages(self) -> list[StoredMessage]:
        """``Store.messages`` of the session and a ``flush`` in one round trip."""
        return await self._db.run(self._store._read, self.session_id, False, owner=self.session_id)

    async def _submit(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        await self._db.submit(fn, *args, owner=self.session_id, what=what)

def _covers_copied(data: str, new_ids: dict[str, str]) -> str:
    """A compaction checkpoint part (compaction/checkpoints.py) as a fork copies it: the message it
    ``covers`` named by its copy's id, or a fork would replay the whole history again."""
    try:
        value = json.loads(data)
    except ValueError:
        return data
    if isinstance(value, dict) and value.get("covers") in new_ids:
        value["covers"] = new_ids[value["covers"]]
        return _dumps(value)
    return data
