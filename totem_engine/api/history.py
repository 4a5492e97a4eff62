"""The user's stored sessions, read without opening a project: ``History`` lists, reads, exports
and forks them (``totem sessions``, ACP ``session/list``, the MCP server's ``list_sessions``), and
gives the conversation as a tree (``totem/session``).

Light on purpose: the store and the branch tree only, no config, no pydantic, no runtime, so
``totem sessions show`` starts fast (tests/unit/test_cli_startup.py). An ``Engine`` has one over
its own store (``engine.history``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from totem_engine.api.errors import NothingToDo
from totem_engine.branches import Tree
from totem_engine.leases import in_force, lease_in_force, request_abort
from totem_engine.store import Lease, Session, SessionInUse, Store, StoredMessage, StoredPart

__all__ = ["Conversation", "History", "Session", "StoredMessage", "StoredPart"]


@dataclass(frozen=True)
class Conversation:
    """A session's messages with their branches: ``shown`` (the conversation as it stands,
    rewound messages marked discarded; with ``every``, every message of every branch) and the
    ``tree`` to ask which variant a message is, whether it is on the path (branches.Tree)."""

    session: Session
    shown: list[StoredMessage]
    tree: Tree


class History:
    """Stored sessions over ``store`` (the user's database when None; closed with the history
    only when it opened it)."""

    def __init__(self, store: Store | None = None):
        self._own = store is None
        self.store = store or Store()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._own:
            await self.store.close()

    async def sessions(self, cwd: Path | None = None) -> list[Session]:
        """Newest first; of the project at ``cwd`` only when given."""
        return await self.store.list_sessions(cwd=None if cwd is None else str(cwd))

    async def session(self, session_id: str) -> Session:
        """The session (``SessionNotFound``)."""
        return await self.store.get_session(session_id)

    async def messages(self, session_id: str, *, include_discarded: bool = False) -> list[StoredMessage]:
        """The conversation as it stands, oldest first (``include_discarded``: with what a rewind
        or a failed step set aside, marked)."""
        return await self.store.messages(session_id, include_discarded=include_discarded)

    async def conversation(self, session_id: str, *, every: bool = False) -> Conversation:
        session = await self.store.get_session(session_id)
        messages, head = await self.store.tree(session_id)
        shown = messages if every else await self.store.messages(session_id, include_discarded=True)
        return Conversation(session=session, shown=shown, tree=Tree(messages, head))

    async def export(self, session_id: str) -> dict[str, Any]:
        """The session as JSON-ready data (``Store.export``)."""
        return await self.store.export(session_id)

    async def newest(self, cwd: Path) -> Session | None:
        """The project's newest session, None when it has none."""
        sessions = await self.sessions(cwd)
        return sessions[0] if sessions else None

    # --- who runs a session now (leases.py), for a door that lists or stops turns of any process
    # (the MCP server's list_projects, list_sessions and abort_turn) ---------------------------

    async def projects(self) -> list[tuple[str, int, float]]:
        """Every project root with sessions: ``(root, how many, when its newest last changed)``,
        most recently used first."""
        return await self.store.projects()

    async def leases(self) -> dict[str, Lease]:
        """The sessions a turn (or an undo, a rewind) runs in now, in this process or another, by
        id: the lease in force of each, naming its ``holder`` and ``pid``."""
        return {lease.session_id: lease for lease in await self.store.leases() if in_force(lease)}

    async def lease(self, session_id: str) -> Lease | None:
        """The lease in force on the session (something runs in it, here or elsewhere), or None."""
        return await lease_in_force(self.store, session_id)

    async def request_abort(self, session_id: str) -> Lease | None:
        """Ask the process running the session's turn to abort it, through the store: its next
        heartbeat reads the flag (this process's own turns: ``Engine.abort``). The lease it was
        asked through (released once that turn has ended), or None when nothing runs."""
        return await request_abort(self.store, session_id)

    # --- for the ACP door's replay ------------------------------------------------------------

    async def todos(self, session_id: str) -> list[dict[str, Any]]:
        """The session's task list as the ``todo`` tool left it (``content``, ``status`` each)."""
        from totem_engine.session_state import SessionState  # not at the top: History stays light

        return SessionState.from_meta((await self.store.get_session(session_id)).meta).todos

    # --- for the command line (totem sessions fork) -----------------------------------------

    async def fork(self, session_id: str, message_id: str | None = None) -> Session:
        """A new session holding a copy of this one up to ``message_id`` (default: the
        conversation as it stands, as ``/fork`` copies it); ``NothingToDo`` when it has none."""
        if message_id is None:
            message_id = (await self.store.get_session(session_id)).head
            if message_id is None:
                raise NothingToDo(f"session {session_id} has no messages to fork")
        return await self.store.fork(session_id, message_id)

    # --- for ACP's session/delete -------------------------------------------------------------

    async def delete(self, session_id: str) -> None:
        """The stored session deleted whole (``SessionNotFound``); ``SessionInUse`` while a turn
        (or an undo) runs in it, in this process or another."""
        lease = await self.lease(session_id)
        if lease is not None:
            raise SessionInUse(lease)
        await self.store.delete_session(session_id)
