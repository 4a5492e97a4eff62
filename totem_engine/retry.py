"""When and how long to wait before trying a failed step, or a failed turn, again.

Transient provider errors (connection, 408/409/429/5xx, a stream cut before any tool call) are
retried up to four times (``MAX_TRIES`` = 5 tries in all, as Whittl's "retried up to four times"
says), with exponential backoff and jitter (a random wait between half and all of the ceiling),
honouring the server's own Retry-After, and never waiting longer than the configured
``retry_max_wait``. A timeout is not transient (providers/errors.py): it ends the turn.
"""

from __future__ import annotations

import random

from totem_engine.providers.errors import ProviderError

MAX_TRIES = 5  # the first try and four retries
BASE_DELAY = 0.5  # seconds before the first retry, doubled each time
# A turn that failed (each of its steps' tries used up, or an error not retried) may be retried by
# the user (totem/retry) this many times in a row; from the second retry on it waits first.
MAX_TURN_RETRIES = 3


def should_retry(error: ProviderError, attempt: int, *, tool_call_seen: bool) -> bool:
    return error.transient and not tool_call_seen and attempt < MAX_TRIES


def retry_delay(error: ProviderError, attempt: int, max_wait: float) -> float:
    """Seconds to wait after failed try number ``attempt`` (1-based)."""
    if error.retry_after is not None:
        return min(error.retry_after, max_wait)
    ceiling = BASE_DELAY * 2 ** (attempt - 1)
    return min(random.uniform(ceiling / 2, ceiling), max_wait)


def turn_retry_delay(retry: int, max_wait: float) -> float:
    """Seconds a turn's ``retry``-th retry in a row (2 or more) waits before its first request:
    the backoff of a step's tries, one doubling further each time, within ``max_wait``."""
    ceiling = BASE_DELAY * 2 ** (retry - 1)
    return min(random.uniform(ceiling / 2, ceiling), max_wait)
