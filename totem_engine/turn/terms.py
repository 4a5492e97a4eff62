"""What a turn is asked with and what it ends with: ``TurnOptions``, ``Again`` (a stored request
answered again) and ``TurnResult`` (its stop reason, text and model)."""

from __future__ import annotations

from dataclasses import dataclass

from totem_engine.api import events as ev
from totem_engine.config import MIN_MAX_STEPS


def effective_max_steps(value: int) -> int:
    """0 means no cap; a cap below 10 would cut almost every real task short, so it is raised."""
    return 0 if value <= 0 else max(value, MIN_MAX_STEPS)


@dataclass
class TurnResult:
    session_id: str
    turn_id: str
    stop_reason: ev.StopReason
    text: str
    model: str
    reason: str | None = None  # the visible reason for any end but "finished"


@dataclass
class TurnOptions:
    mode: str = "build"
    max_steps: int = 50
    retry_max_wait: float = 60.0
    reasoning: str | None = None
    persona: str | None = None  # a sub-agent's prompt, in place of base.txt (prompt.system_prompt)


@dataclass(frozen=True)
class Again:
    """A turn that answers a stored request again rather than a new one: ``request`` is its
    message id (the conversation already follows it, runtime.py); ``retry``: which retry of a
    failed turn this is (0: a regenerated answer), stored with the turn's error so the next
    retry knows, and waited for as retry.py says."""

    request: str
    retry: int = 0

