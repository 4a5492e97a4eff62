"""The write queue: one session's appends and updates queued in the store's worker without waiting
(a turn's hot path), stored by the next call on the store or by ``commit_every`` while the turn
runs; a failed write raised later, as a ``WriteFailed`` naming it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio

from totem_engine.sqlite_worker import SqliteWorker
from totem_engine.store.encoding import encoded
from totem_engine.store.messages import MessageRows
from totem_engine.store.rows import PART_TYPES, ROLES, StoredMessage, new_id

log = logging.getLogger(__name__)


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

    def __init__(self, db: SqliteWorker, rows: MessageRows, session_id: str) -> None:
        self._db, self._rows, self.session_id = db, rows, session_id

    async def add_message(self, role: str, *, turn_id: str, step: int | None = None, model: str | None = None) -> str:
        """As ``Store.add_message`` into this session, queued; the new message's id."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")
        message_id = new_id("msg")
        await self._submit(
            f"add_message({role} {message_id})", self._rows.add_message, message_id, self.session_id, role, turn_id, step, model
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
            f"add_part({type} {part_id} to {message_id})", self._rows.add_part, message_id, type, encoded(data), status, part_id
        )
        return part_id

    async def update_part(self, part_id: str, *, data: dict[str, Any] | None = None, status: str | None = None) -> None:
        """As ``Store.update_part``, queued."""
        data_text = None if data is None else encoded(data)
        await self._submit(f"update_part({part_id})", self._rows.update_part, part_id, data_text, status)

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
        return await self._db.run(self._rows.read, self.session_id, False, owner=self.session_id)

    async def _submit(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        await self._db.submit(fn, *args, owner=self.session_id, what=what)
