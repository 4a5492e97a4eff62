"""What a turn is asked with and what it ends with: ``TurnOptions``, ``Again`` (a stored request
answered again) and ``TurnResult`` (its stop reason, text and model); and its step limit when
nobody chose one, by the model's capability record (``round_budget``)."""

from __future__ import annotations

from dataclasses import dataclass

from totem_engine.api import events as ev
from totem_engine.config import MIN_MAX_STEPS
from totem_engine.providers.capabilities import CapabilityRecord
from totem_engine.tools.registry import is_small

# Seed 003's "round budget by tier": the steps a turn may take when no max_steps was chosen.
# 20 and 60 are seed 004's presets; 50 was the one default before. docs/config.md says why.
SMALL_MODEL_STEPS = 20
TIER_STEPS = {"small": SMALL_MODEL_STEPS, "medium": 50, "large": 60}


def effective_max_steps(value: int) -> int:
    """0 means no cap; a cap below 10 would cut almost every real task short, so it is raised."""
    return 0 if value <= 0 else max(value, MIN_MAX_STEPS)


def round_budget(chosen: int | None, record: CapabilityRecord) -> tuple[int, str]:
    """The turn's step limit and, when the model's record chose it, the words that say so.

    ``chosen``: a max_steps the user set (a config layer, the turn's own, an agent's file),
    which wins; None: the record's tier decides, a small or weak model (the small surface's
    ``is_small``, or tool calls found unreliable) getting the small tier's number."""
    if chosen is not None:
        return effective_max_steps(chosen), ""
    if is_small(record.context_window, record.tier) or not record.tools_reliable:
        return SMALL_MODEL_STEPS, "the budget of a small or weak model; max_steps sets another"
    return TIER_STEPS.get(record.tier, TIER_STEPS["medium"]), f"the budget of a {record.tier} model; max_steps sets another"


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
    max_steps: int | None = None  # None: by the model's tier (round_budget)
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

