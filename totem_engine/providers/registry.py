"""Provider instances from ``[providers.<name>]`` tables: one place maps a ``kind`` to its module."""

from __future__ import annotations

from totem_engine.config import ConfigError, ProviderConfig
from totem_engine.providers.base import Provider

OPENAI_WIRE = frozenset({"openai", "litellm"})


def make_provider(name: str, settings: ProviderConfig, *, timeout: float) -> Provider:
    """The provider for one configured entry. Raises ConfigError for a kind this build lacks."""
    if settings.kind in OPENAI_WIRE:
        from totem_engine.providers.openai import OpenAIProvider

        if not settings.base_url:
            raise ConfigError(f"[providers.{name}]: base_url is required for kind \"{settings.kind}\"")
        return OpenAIProvider(
            name, settings.base_url, settings.api_key_value(), headers=settings.headers, timeout=timeout
        )
    if settings.kind == "ollama":
        from totem_engine.providers.ollama import OllamaProvider

        return OllamaProvider(
            name,
            settings.base_url,  # None: http://127.0.0.1:11434
            settings.api_key_value(),
            headers=settings.headers,
            timeout=timeout,
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
        )
    raise ConfigError(f"[providers.{name}]: kind \"{settings.kind}\" is not supported by this version of Totem")
