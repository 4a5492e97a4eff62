"""Provider instances from ``[providers.<name>]`` tables: one place maps a ``kind`` to its module."""

from __future__ import annotations

from totem_engine.config import ConfigError, ProviderConfig
from totem_engine.providers.base import Provider

OPENAI_WIRE = frozenset({"openai"})


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
    if settings.kind == "litellm":
        from totem_engine.providers.litellm import LiteLLMProvider

        # No base_url: the proxy on port 4000 of this computer.
        return LiteLLMProvider(
            name, settings.base_url, settings.api_key_value(), headers=settings.headers, timeout=timeout, request_timeout=request_timeout
        )
    if settings.kind in OPENAI_WIRE:
        from totem_engine.providers.openai import OpenAIProvider

        if not settings.base_url:
            raise ConfigError(f"[providers.{name}]: base_url is required for kind \"{settings.kind}\"")
        return OpenAIProvider(
            name, settings.base_url, settings.api_key_value(), headers=settings.headers, timeout=timeout, request_timeout=request_timeout
        )
    if settings.kind == "ollama":
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
    if settings.kind == "anthropic":
        from totem_engine.providers.anthropic import DEFAULT_BASE_URL, AnthropicProvider

        return AnthropicProvider(
            name,
            settings.base_url or DEFAULT_BASE_URL,
            settings.api_key_value(),
            headers=settings.headers,
            timeout=timeout,
            request_timeout=request_timeout,
        )
    if settings.kind == "gemini":
        from totem_engine.providers.gemini import DEFAULT_BASE_URL, GeminiProvider

        return GeminiProvider(
            name,
            settings.base_url or DEFAULT_BASE_URL,
            settings.api_key_value(),
            headers=settings.headers,
            timeout=timeout,
            request_timeout=request_timeout,
        )
    raise ConfigError(f"[providers.{name}]: kind \"{settings.kind}\" is not supported by this version of Totem")
