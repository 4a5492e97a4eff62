"""``EngineError``: every refusal the engine hands a front end carries a ``kind``, and each door
maps the kinds once to its wire (LSP and ACP error codes, MCP tool errors, CLI exit codes).

Light on purpose (no pydantic, no engine module): a fast start path catches these without
loading the engine (``config_error.py`` subclasses it).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from totem_engine.redaction import redacted

Kind = Literal["config", "not_found", "invalid", "busy", "unavailable"]
KINDS: tuple[Kind, ...] = ("config", "not_found", "invalid", "busy", "unavailable")


class EngineError(Exception):
    """A request the engine refuses, worded for the user. ``kind``:

    - ``config``: the configuration (a model spec, an agent's name, a provider) is wrong;
    - ``not_found``: no session, message or job of that id;
    - ``invalid``: the request does not fit the session as it stands (another project's session,
      a message not in the conversation, nothing to retry or redo);
    - ``busy``: a turn of the session runs, in this process or another (the message names it);
    - ``unavailable``: something the request needs cannot be had now (the local model's server).
    """

    kind: ClassVar[Kind] = "invalid"

    def __str__(self) -> str:
        # Every door shows a refusal through str(): the one place its text leaves the engine.
        return redacted(super().__str__())


class SessionBusy(EngineError):
    """A turn of the session is running in this process: one turn per session at a time."""

    kind = "busy"

    def __init__(self, session_id: str, what: str = "a turn is still running"):
        super().__init__(f"session {session_id} is busy: {what}; abort it or wait for it to end")
        self.session_id = session_id


class NothingToDo(EngineError):
    """A session action with nothing to act on (no session yet for ``/undo``, no message)."""

    kind = "invalid"
