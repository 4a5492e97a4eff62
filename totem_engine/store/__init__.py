"""Sessions, messages and parts in one SQLite database: the durable, append-only history.

Layout: a session holds messages (ordered by ``seq``); a message holds parts (ordered by ``seq``).
A part is one unit the loop streams: ``text``, ``reasoning``, ``tool``, ``step``, ``error`` or
``notice``, with a JSON ``data`` object and an optional ``status``; an ``image`` part holds an
attached image (totem_engine/images.py: status ``fresh``, then ``captioned``); a ``checkpoint`` part
(totem_engine.compaction) holds a summary that later requests replay in place of the messages it
covers.

History is never rewritten. Parts are appended; a streaming part may have its ``data`` and
``status`` replaced while it grows; the parts of a retried step are marked ``discarded``, never
deleted (a session is removed whole only when the user deletes it:
``delete_session``). Every write commits before its call returns (a ``DeferredWrites`` write: by the next
call on the store, and within 0.25 s while its turn runs), so a process killed mid-turn leaves
everything written up to its last call (but the last fraction of a second of a step's writes),
and the database is in WAL mode so another process (``totem sessions show``) can read while a
turn writes.

The API is async: each call runs its sqlite work in a worker thread, one call at a time on one
connection, so the event loop never blocks on disk.

The modules, by job: ``history`` the ``Store`` itself; ``schema`` the tables and migrations;
``rows`` the values a read returns; ``encoding`` those values to and from SQLite; ``errors`` what
the store refuses; ``messages`` the message and part statements and ``cache`` the sessions kept in
memory; ``leases`` the lease table's queries; ``deferred`` the write queue of a turn.
"""

from totem_engine.sqlite_worker import WriteFailed
from totem_engine.store.cache import CACHED_SESSIONS, path_ids
from totem_engine.store.deferred import DeferredWrites
from totem_engine.store.encoding import storable
from totem_engine.store.errors import (
    MessageNotFound,
    PartNotFound,
    SessionElsewhere,
    SessionInUse,
    SessionNotFound,
    SessionUnavailable,
)
from totem_engine.store.history import Store, default_db_path
from totem_engine.store.rows import (
    PART_TYPES,
    ROLES,
    THIS_HOST,
    Lease,
    Session,
    StoredMessage,
    StoredPart,
    new_id,
)

__all__ = [
    "CACHED_SESSIONS",
    "PART_TYPES",
    "ROLES",
    "THIS_HOST",
    "DeferredWrites",
    "Lease",
    "MessageNotFound",
    "PartNotFound",
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
    "path_ids",
    "storable",
]
