"""How much of the model's window each part of a compacted request may take.

Shares are of the budget (``compact_at`` of the window, less the reserved output) unless said
otherwise; sizes in characters are estimated at ``CHARS_PER_TOKEN``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_COMPACT_AT = 0.7  # of the window: past it, old tool results are compacted (config ``compact_at``)
FORCE_SHARE = 0.5  # force=True: the budget is this share of the usual one
TAIL_SHARE = 0.5  # at a checkpoint, the recent messages kept whole take at most this share of the budget
SUMMARY_SHARE = 0.25  # the most a replayed summary may take
SUMMARY_OUTPUT_RESERVE = 1024  # tokens kept free for the summary itself in the summary request
ITEM_SHARE = 0.125  # of the summary request's room: the most one summarised item may take
DROP_SHARE = 0.25  # on a summary overflow, the share of the remaining items dropped (at least one)
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Limits:
    """Uncalibrated input tokens: ``budget`` is what compaction aims under, ``hard`` what the
    window itself allows (both after the reserved output)."""

    budget: int
    hard: int


def limits(window: int, output_reserve: int, *, calibration: float, compact_at: float, force: bool) -> Limits:
    """The limits for a ``window`` of tokens, the session's ``calibration`` factor (estimates are
    raw, the window is real) and ``force`` (the provider reported an overflow: ``FORCE_SHARE``)."""
    scale = max(calibration, 1e-6)
    budget_tokens = window * compact_at * (FORCE_SHARE if force else 1.0)
    return Limits(
        budget=max(0, math.floor((budget_tokens - output_reserve) / scale)),
        hard=max(0, math.floor((window - output_reserve) / scale)),
    )
