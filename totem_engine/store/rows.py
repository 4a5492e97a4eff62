"""The store's values, one per table row: ``Session``, ``StoredMessage`` (with its ``StoredPart``s)
and ``Lease``; the roles and part types a message may have; the ids they are known by.

Frozen: a read returns these objects, and the cache (cache.py) hands the same object out again
for as long as its row is unchanged.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from dataclasses import dataclass, fields
from typing import Any

ROLES = frozenset({"user", "assistant"})
PART_TYPES = frozenset({"text", "reasoning", "tool", "step", "state", "error", "notice", "checkpoint", "context", "image"})

THIS_HOST = socket.gethostname()  # a lease's ``host`` when this machine's process holds it

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
