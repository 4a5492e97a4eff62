"""Between SQLite and the store's values (rows.py): a part's data and a session's meta encoded as
the JSON SQLite can store, rows read back as values (a stored tool part repaired on the way), a
session's row looked up or ``SessionNotFound``."""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from totem_engine.redaction import redacted, scrubbed
from totem_engine.store.errors import SessionNotFound
from totem_engine.store.rows import Lease, Session, StoredPart

# A lone surrogate ("A\udcffB" from a model's stream or a JSON escape) has no UTF-8 form, so
# SQLite cannot take it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` as SQLite can store it: each lone surrogate replaced by U+FFFD, nothing dropped."""
    return _SURROGATE.sub("\ufffd", text)


def encoded(value: dict[str, Any]) -> str:
    """``value`` as the JSON text a ``data`` or ``meta`` column holds, the known secrets scrubbed
    from it (redaction.py): every write of the store goes through here or ``stored_title``."""
    return storable(json.dumps(scrubbed(value), ensure_ascii=False, separators=(",", ":")))


def stored_title(title: str) -> str:
    """A session's title as the ``title`` column holds it, the known secrets scrubbed."""
    return storable(redacted(title))


def decoded(part_id: str, type: str, encoded: str) -> Any:
    """A part's data as a read gives it back (decoded from what was written, repaired)."""
    data = json.loads(encoded)
    return _repaired_call(data, part_id) if type == "tool" else data


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


def session_row(conn: sqlite3.Connection, session_id: str) -> sqlite3.Row:
    """The session's row, or ``SessionNotFound``."""
    row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFound(session_id)
    return row


def session_of(row: sqlite3.Row) -> Session:
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


def part_of(row: sqlite3.Row) -> StoredPart:
    return StoredPart(
        id=row["id"],
        message_id=row["message_id"],
        seq=row["seq"],
        type=row["type"],
        data=decoded(row["id"], row["type"], row["data"]),
        status=row["status"],
        discarded=bool(row["discarded"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def lease_of(row: sqlite3.Row) -> Lease:
    return Lease(
        row["session_id"], row["token"], row["pid"], row["host"], row["holder"], row["taken_at"], row["heartbeat"],
        bool(row["abort_requested"]),
    )
