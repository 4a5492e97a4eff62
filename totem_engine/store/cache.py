"""The messages of recently read sessions, kept in memory by the store and updated by its own
writes, so ``messages()`` reads the disk once per session.

A write replaces the one message it changes with a new object, so an unchanged message is the
same object on every read, which is what the derived history (totem_engine/compaction/derived.py)
keys its conversions by. A commit by any other connection (another process, another ``Store``)
changes SQLite's ``PRAGMA data_version``, and the cache is then dropped and read again.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from totem_engine.store.rows import StoredMessage, StoredPart


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


class SessionCache:
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
