"""The one interface through which the engine talks to whoever runs it (CLI, language server).

The engine sends its events and asks its questions here; it never imports a front end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from totem_engine.api.events import Event, RuleRef
from totem_engine.tools.base import PermissionChoice, ProposedFile

Outcome = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
# The pseudo tool a permission request names when it asks to start an MCP server (mcp/start.py):
# no model called it, and only a person may allow a remote one (``needs_person``).
MCP_START = "mcp-start"


@dataclass(frozen=True)
class PermissionRequest:
    """A prepared call waiting for the user's word.

    ``rule`` is the rule that asked (None when a default did); ``always_pattern`` is what an
    "allow always" answer stores; ``diff`` is the unified diff of the whole change and
    ``proposed`` the whole new text of each changed file. ``needs_person``: only a person may
    answer it, not ``--yes`` (starting an MCP server whose URL leaves this machine).
    ``choices``: more answers to offer beside the four, each an allow once with something more
    (a job's ports forwarded to this machine's loopback); a door offers each as it offers the
    four, by its ``label``, and answers with its ``id`` (``PermissionReply.choice``).
    """

    session_id: str
    call_id: str
    tool: str
    title: str
    input: dict[str, Any]
    rule: RuleRef | None
    permission: str
    always_pattern: str
    paths: list[str]
    diff: str | None = None
    proposed: list[ProposedFile] = field(default_factory=list)
    needs_person: bool = False
    choices: tuple[PermissionChoice, ...] = ()


@dataclass(frozen=True)
class PermissionReply:
    """The answer. ``feedback`` is the user's own words; ``reason`` says why nobody answered
    (no terminal, no reply in time), so the model is not told the user rejected it.
    ``end_turn``: nobody can be asked during this turn at all (no terminal and no ``--yes``), so
    the turn ends at this rejection with this message (stop reason ``guard``) instead of the
    model trying again to be rejected again. ``accepted``: with an allow, the change as the user
    reviewed it, project-relative path -> the whole text they accept for that file (some hunks
    taken, some left, or edited; turn/review.py); a proposed file not in it is taken as proposed.
    ``choice``: with ``allow_once``, the id of the request's ``choices`` the user took; one that
    was not offered is a reject."""

    outcome: Outcome
    feedback: str | None = None
    reason: str | None = None
    end_turn: str | None = None
    accepted: Mapping[str, str] | None = None
    choice: str | None = None


@dataclass(frozen=True)
class QuestionRequest:
    session_id: str
    call_id: str
    question: str
    options: list[str] = field(default_factory=list)


class FrontEnd(Protocol):
    async def emit(self, event: Event) -> None:
        """Deliver one event. Called in order; must not block for long."""

    async def permission(self, request: PermissionRequest) -> PermissionReply:
        """Ask the user about one prepared call and wait for the answer."""

    async def question(self, request: QuestionRequest) -> str | None:
        """Ask the user a question; None when nobody can answer."""
