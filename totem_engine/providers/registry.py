"""Provider instances from ``[providers.<name>]`` tables: one table maps each ``kind`` to the
function that builds its class.

The table names its kinds rather than being read off the classes (each declares its ``kind``):
a class is imported only when a provider of its kind is made, so a run loads the one provider
module it uses (tests/unit/test_cli_startup.py). tests/unit/test_provider_registry.py checks that
the table has every kind the config allows and that each builds the class declaring that kind.
"""

from __future__ import annotations

from typing import Protocol

from totem_engine.config import ConfigError, ProviderConfig
from totem_engine.providers.base import Provider


class Build(Protocol):
    def __call__(self, name: str, settings: ProviderConfig, *, timeout: float, request_timeout: float | None) -> Provider: ...


def make_provider(name: str, settings: ProviderConfig, *, timeout: float, request_timeout: float | None = None) -> Provider:
    """The provider for one configured entry. ``timeout``: seconds for the first byte and between
    chunks; ``request_timeout``: for a whole streamed request (None: no cap). Raises ConfigError
    for a kind this build lacks."""
    # A key stored with `totem auth set` (keyring or keys.json) when the config has none; every
    # kind below then reads it through settings.api_key_value() as before.
    from pydantic import SecretStr

    from totem_engine.keys import api_key_for

    key = api_key_for(name, settings)
    if key and not settings.api_key_value():
        settings = settings.model_copy(update={"api_key": SecretStr(key)})
    build = BUILDERS.get(settings.kind)
    if build is None:
        raise ConfigError(f"[providers.{name}]: kind \"{settings.kind}\" is not supported by this version of Totem")
    return build(name, settings, timeout=timeout, request_timeout=request_timeout)


def _openai(name: str, settings: ProviderConfig, *, timeout: float, request_timeout: float | None) -> Provider:
    from totem_engine.providers.openai import OpenAIProvider

    if not settings.base_url:
        raise ConfigError(f"[providers.{name}]: base_url is required for kind \"{settings.kind}\"")
    return OpenAIProvider(
        name, settings.base_url, settings.api_key_value(), headers=settings.headers, timeout=timeout, request_timeout=request_timeout
    )


def _litellm(name: str, settings: ProviderConfig, *, timeout: float, request_timeout: float | None) -> Provider:
    from totem_engine.providers.litellm import LiteLLMProvider

    # No base_url: the proxy on port 4000 of this computer.
    return LiteLLMProvider(
        name, settings.base_url, settings.api_key_value(), headers=settings.headers, timeout=timeout, request_timeout=request_timeout
    )


def _ollama(name: str, settings: ProviderConfig, *, timeout: float, request_timeout: float | None) -> Provider:
    from totem_engine.providers.ollama import OllamaProvider

    return OllamaProvider(
        name,
        settings.base_url,  # None: http://127.0.0.1:11434
        settings.api_key_value(),
        headers=settings.headers,
        timeout=timeout,
        request_timeout=request_timeout,
        ctx=settings.ollama_ctx,
        ctx_max=settings.ollama_ctx_max,
        temperature=settings.temperature,
    )


def _anthropic(name: str, settings: ProviderConfig, *, timeout: float, request_timeout: float | None) -> Provider:
    from totem_engine.providers.anthropic import DEFAULT_BASE_URL, AnthropicProvider

    return AnthropicProvider(
        name,
        settings.base_url or DEFAULT_BASE_URL,
        settings.api_key_value(),
        headers=settings.headers,
        timeout=timeout,
        request_timeout=request_timeout,
    )


def _gemini(name: str, settings: ProviderConfig, *, timeout: float, request_timeout: float | None) -> Provider:
    from totem_engine.providers.gemini import DEFAULT_BASE_URL, GeminiProvider

    return GeminiProvider(
        name,
        settings.base_url or DEFAULT_BASE_URL,
        settings.api_key_value(),
        headers=settings.headers,
        timeout=timeout,
        request_timeout=request_timeout,
    )


# Each kind's builder; the class it builds declares the same ``kind`` (base.Provider.kind).
BUILDERS: dict[str, Build] = {
    "openai": _openai,
    "litellm": _litellm,
    "ollama": _ollama,
    "anthropic": _anthropic,
    "gemini": _gemini,
}
