"""When and how long to wait before trying a failed step again.

Transient provider errors (connection, 408/409/429/5xx, a stream cut before any tool call) are
retried up to ``MAX_TRIES`` tries in all, with exponential backoff and jitter (a random wait between half and all of the
ceiling), honouring the
server's own Retry-After, and never waiting longer than the configured ``retry_max_wait``.
"""

from __future__ import annotations

import random

from totem_engine.providers.errors import ProviderError

MAX_TRIES = 4
BASE_DELAY = 0.5  # seconds before the first retry, doubled each time


def should_retry(error: ProviderError, attempt: int, *, tool_call_seen: bool) -> bool:
    return error.transient and not tool_call_seen and attempt < MAX_TRIES


def retry_delay(error: ProviderError, attempt: int, max_wait: float) -> float:
    """Seconds to wait after failed try number ``attempt`` (1-based)."""
    if error.retry_after is not None:
        return min(error.retry_after, max_wait)
    ceiling = BASE_DELAY * 2 ** (attempt - 1)
    return min(random.uniform(ceiling / 2, ceiling), max_wait)
