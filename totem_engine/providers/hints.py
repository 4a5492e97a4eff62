"""What fixes a provider error, for people: the ``hint`` of an ``error`` event (docs/events.md).

The provider's message says what went wrong in the vendor's words; the hint names the provider
and the Totem setting that fixes it: for a refused key, its ``api_key`` or ``totem auth set NAME``
(keys.py, docs/config.md "API keys"); for a server that cannot be reached, its ``base_url``; for
a model the server does not know, ``totem models``. None when Totem has nothing to add.
"""

from __future__ import annotations

from totem_engine.config import ProviderConfig
from totem_engine.providers.errors import (
    AuthenticationError,
    ConnectionFailed,
    ContextOverflowError,
    InvalidRequestError,
    ProviderError,
    RateLimitError,
)


def hint_for(error: ProviderError, provider: str, settings: ProviderConfig | None) -> str | None:
    """One or two sentences for the user; ``provider`` is the name of ``[providers.<name>]``,
    ``settings`` its table (None: not configured)."""
    table = f"[providers.{provider}]"
    if isinstance(error, AuthenticationError):
        if settings is not None and settings.api_key_value():
            return (
                f"The provider {provider} refused the api_key of {table} in the config: correct it there, "
                f"or remove it and store the key with `totem auth set {provider}`."
            )
        return (
            f"The provider {provider} refused the key it was sent: store one with `totem auth set {provider}`, "
            f"or set api_key in {table} of the config."
        )
    if isinstance(error, ConnectionFailed):
        where = settings.base_url if settings is not None and settings.base_url else "its default address"
        return f"The provider {provider} could not be reached at {where}: is its server running? base_url in {table} sets the address."
    if isinstance(error, ContextOverflowError):
        return "The conversation no longer fits the model's window: /compact summarises it, or start a new session."
    if isinstance(error, InvalidRequestError) and error.status == 404:
        return f"The provider {provider} may not serve this model: `totem models` lists what it serves."
    if isinstance(error, RateLimitError):
        return f"The provider {provider} is limiting requests: wait a moment, then retry."
    return None
