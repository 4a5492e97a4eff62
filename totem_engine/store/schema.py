"""The history database's tables (sessions, messages, parts, leases), its schema version and the
migration of an older database to it (run by sqlite_worker.SqliteWorker on first use)."""

from __future__ import annotations

# Bump with a migration when the schema changes; a database written by a newer Totem is refused
# rather than misread.
SCHEMA_VERSION = 3

SCHEMA = """
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
MIGRATIONS = {
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
