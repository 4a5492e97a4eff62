"""One exchange with a model: the request the loop builds and the chunks a stream yields, in order.

Each provider module translates a ``ChatRequest`` to its vendor's request body and the vendor's
stream back into ``StreamChunk`` values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall, ToolSpec


@dataclass(frozen=True)
class ChatRequest:
    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    # The sampler's seed, where the wire has one (OpenAI-compatible, Ollama): a sampled answer
    # that can be had again. None leaves it to the server.
    seed: int | None = None
    # How hard the model should think: "low" | "medium" | "high"; None leaves it to the provider.
    reasoning: str | None = None


@dataclass(frozen=True)
class TextChunk:
    text: str


@dataclass(frozen=True)
class ReasoningChunk:
    text: str


@dataclass(frozen=True)
class ToolCallChunk:
    """A tool call, complete: emitted once its arguments are whole."""

    call: ToolCall


@dataclass(frozen=True)
class UsageChunk:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class StateChunk:
    """Opaque, JSON-able state the provider needs back with this answer in later requests.

    Stored with the step and returned as ``Message.replay`` to the same provider only.
    """

    data: dict[str, Any]


@dataclass(frozen=True)
class FinishChunk:
    """The end of one answer: the provider's own stop reason and the model that answered."""

    reason: str | None
    model: str | None = None


StreamChunk = TextChunk | ReasoningChunk | ToolCallChunk | UsageChunk | StateChunk | FinishChunk

# The providers' own words for an answer cut at the output limit, and for one the provider's
# content filter stopped: OpenAI and Ollama (``length``, ``content_filter``), Anthropic
# (``max_tokens``, ``refusal``), Gemini (``MAX_TOKENS``, ``SAFETY``, ``RECITATION``, ...).
_LENGTH = {"length", "max_tokens"}
_REFUSAL = {"content_filter", "refusal", "safety", "recitation", "prohibited_content", "blocklist", "spii", "image_safety"}


def finish_kind(reason: str | None) -> Literal["length", "refusal"] | None:
    """What a ``FinishChunk.reason`` means for front ends: ``length`` (the answer hit the output
    limit), ``refusal`` (the provider refused or filtered the content), None for any other end."""
    word = (reason or "").lower()
    if word in _LENGTH:
        return "length"
    if word in _REFUSAL:
        return "refusal"
    return None
