"""What is a provider's own: the ``Provider`` protocol and what it says of its models (``ModelInfo``).

What a provider is given and yields is wire-neutral and lives in ``totem_engine.vocab``
(``ChatRequest``, ``StreamChunk``); each provider module translates them to and from its wire.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from totem_engine.vocab.chat import ChatRequest, StreamChunk


@dataclass(frozen=True)
class ModelInfo:
    id: str
    provider: str
    context_window: int | None = None
    tools: bool | None = None
    reasoning: bool | None = None
    vision: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Provider(Protocol):
    """A configured endpoint. ``stream`` raises ``ProviderError`` subclasses (providers.errors).

    ``name``: the configured entry's (``[providers.<name>]``); ``kind``: the wire the class speaks
    (openai, anthropic, gemini, ollama, litellm), declared on the class itself.
    """

    name: str
    kind: str

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]: ...

    async def models(self) -> list[ModelInfo]: ...

    async def aclose(self) -> None: ...
