"""What the store refuses: no such session, message or part; a session that cannot be used here
and now (another project's, or one a live process is running).

Light on purpose (the engine's error base and the store's row values, nothing more): a fast start
path (``totem sessions show``, a door's error mapping) catches these without loading the engine.
"""

from __future__ import annotations

from pathlib import Path

from totem_engine.api.errors import EngineError
from totem_engine.store.rows import THIS_HOST, Lease


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
