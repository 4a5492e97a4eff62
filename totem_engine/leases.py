"""One process at a time runs a session: a lease in the store, its holder's pid and heartbeat.

A turn takes its session's lease before it stores anything (``Turn.run``) and keeps it until it
has ended: every ``HEARTBEAT`` seconds it renews the heartbeat and reads the abort flag another
process may have set (``request_abort``: the MCP server's ``abort_turn``), and aborts when the
flag is set. So do undo, redo and rewind, for as long as they move files. Another process that
wants the session while the lease is in force gets ``SessionInUse``, naming the holder.

A lease is in force while its heartbeat is younger than ``STALE_AFTER`` seconds and, on this
machine, its process is alive. A process killed without releasing leaves a lease that the next
taker finds dead and takes over at once; one whose pid was reused, or that is frozen, is taken
over once its heartbeat is stale. The holder that finds its lease taken over aborts its turn.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import anyio

from totem_engine.pids import alive
from totem_engine.store import THIS_HOST, Lease, SessionInUse, Store, new_id

__all__ = ["HEARTBEAT", "STALE_AFTER", "HeldLease", "holding", "in_force", "lease_in_force", "request_abort"]

HEARTBEAT = 1.0  # seconds between a holder's renewals, and so the most an abort asked through the store waits
STALE_AFTER = 30.0  # seconds without a renewal after which a lease is taken over, its holder alive or not

log = logging.getLogger(__name__)

_T = TypeVar("_T")


def in_force(lease: Lease, now: float | None = None) -> bool:
    """Whether ``lease``'s holder still runs the session: a fresh heartbeat and, on this machine,
    a live process (a pid on another machine cannot be looked at; its heartbeat decides)."""
    now = time.time() if now is None else now
    if now - lease.heartbeat > STALE_AFTER:
        return False
    return lease.host != THIS_HOST or alive(lease.pid)


class HeldLease:
    """The lease this process took; ``keep`` renews it while the work runs."""

    def __init__(self, store: Store, lease: Lease):
        self.store = store
        self.lease = lease

    async def keep(self, on_abort: Callable[[], None]) -> None:
        """Renew the heartbeat every ``HEARTBEAT`` seconds until cancelled; call ``on_abort``
        once when another process asks for an abort, or took the lease over. A store error is
        logged and tried again at the next beat: it must not end the work."""
        while True:
            await anyio.sleep(HEARTBEAT)
            try:
                now = await self.store.renew_lease(self.lease.session_id, self.lease.token, time.time())
            except Exception:
                log.warning("could not renew the lease of session %s", self.lease.session_id, exc_info=True)
                continue
            if now is None or now.abort_requested:
                if now is None:
                    log.warning("session %s: another process took the lease over; aborting the turn", self.lease.session_id)
                on_abort()
                return

    async def run(self, work: Callable[[], Awaitable[_T]], on_abort: Callable[[], None]) -> _T:
        """``await work()`` while the lease is kept (``keep``); what it raises is raised as it is."""
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self.keep, on_abort)
                try:
                    return await work()
                finally:
                    group.cancel_scope.cancel()
        except BaseExceptionGroup as caught:
            # ``keep`` never raises, so the group holds what ``work`` raised alone: raised as it
            # is, so callers catch SessionNotFound and the like, not an ExceptionGroup.
            if len(caught.exceptions) == 1:
                raise caught.exceptions[0] from None
            raise


@contextlib.asynccontextmanager
async def holding(store: Store, session_id: str, *, holder: str) -> AsyncIterator[HeldLease]:
    """The session's lease, taken for the block and released after it (shielded, so an abort
    cannot leave it behind). Raises ``SessionInUse`` when another lease is in force (this
    process's own included: one turn or undo of a session at a time), ``SessionNotFound``."""
    now = time.time()
    wanted = Lease(session_id, new_id("lse"), os.getpid(), THIS_HOST, holder, now, now)
    taken = await store.take_lease(wanted, in_force=in_force)
    if taken.token != wanted.token:
        raise SessionInUse(taken)
    try:
        yield HeldLease(store, taken)
    finally:
        with anyio.CancelScope(shield=True):
            await store.release_lease(session_id, taken.token)


async def lease_in_force(store: Store, session_id: str) -> Lease | None:
    """The lease in force on the session (a turn runs there), or None."""
    return next((lease for lease in await store.leases(session_id) if in_force(lease)), None)


async def request_abort(store: Store, session_id: str) -> Lease | None:
    """Ask the process running the session's turn to abort it, through the store (its next
    heartbeat reads the flag); the lease it was asked through, or None when no turn runs."""
    lease = await lease_in_force(store, session_id)
    if lease is None or not await store.request_abort(session_id, lease.token):
        return None
    return lease
