"""Provider errors as types, one class per kind, so the loop's retry rules act on the class.

``transient`` says whether the loop may retry the step. ``retry_after`` (seconds) is the wait the
server asked for, read from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date,
RFC 9110 section 10.2.3).
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

from totem_engine.redaction import redacted


class ProviderError(Exception):
    transient = False

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None):
        # Vendors echo keys back in their error text; the known secrets never leave in it.
        message = redacted(message)
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after


class AuthenticationError(ProviderError):
    """401/403: the key is missing, wrong or lacks access."""


class InvalidRequestError(ProviderError):
    """400/404/422: the request itself is wrong; retrying changes nothing."""


class ContextOverflowError(InvalidRequestError):
    """The request does not fit the model's context window."""


class RateLimitError(ProviderError):
    transient = True


class OverloadedError(ProviderError):
    transient = True


class ServerError(ProviderError):
    transient = True


class ConnectionFailed(ProviderError):
    """The server could not be reached, or the connection dropped before an answer."""

    transient = True


class StreamCut(ProviderError):
    """The stream ended mid-answer: no end marker, or the connection dropped while streaming."""

    transient = True


class ProviderTimeout(ProviderError):
    """No answer in time. Not retried: the turn ends and what was done is kept."""


class MalformedStream(ProviderError):
    """The server sent something that is not the vendor's wire format."""


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After``; None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


_OVERFLOW_MARKERS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "exceeds the context",
    "input is too long",
)


def looks_like_overflow(text: str) -> bool:
    """True when a vendor message says the request is over the window, at any nesting depth.

    Escaped JSON nested inside another error still contains the marker words, so a plain
    case-insensitive search of the whole body finds them.
    """
    lowered = text.lower().replace("\\", "")
    return any(marker in lowered for marker in _OVERFLOW_MARKERS)


def error_for_status(status: int, message: str, headers: Mapping[str, str]) -> ProviderError:
    """The error class for an HTTP status and the vendor's message."""
    retry_after = parse_retry_after(headers)
    if status in (401, 403):
        return AuthenticationError(message, status=status)
    if status == 429:
        return RateLimitError(message, status=status, retry_after=retry_after)
    if status in (408, 409):
        return ServerError(message, status=status, retry_after=retry_after)
    if status in (503, 529):
        return OverloadedError(message, status=status, retry_after=retry_after)
    if status >= 500:
        return ServerError(message, status=status, retry_after=retry_after)
    if looks_like_overflow(message):
        return ContextOverflowError(message, status=status)
    return InvalidRequestError(message, status=status)
