"""What the provider tests do with a stream: run it to the end and pick its chunks apart.

Shared by tests/unit/test_*_provider.py and the recorded-capture replays
(tests/unit/test_captures_*.py), which all drive a provider against a loopback server.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from totem_engine.vocab.chat import ChatRequest, FinishChunk, ReasoningChunk, StreamChunk, TextChunk, ToolCallChunk
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall


def hi(model: str) -> ChatRequest:
    """The smallest request: no system prompt, one user message "hi"."""
    return ChatRequest(model=model, system="", messages=(Message("user", "hi"),))


def collector(default: ChatRequest) -> Callable[..., Awaitable[list[StreamChunk]]]:
    """``collect(provider, request=default)``: every chunk of one streamed answer, in order."""

    async def collect(provider: Any, request: ChatRequest = default) -> list[StreamChunk]:
        return [c async for c in provider.stream(request)]

    return collect


async def stream_once(provider: Any, request: ChatRequest) -> list[StreamChunk]:
    """Every chunk of one answer, then the provider closed (even when the stream raised)."""
    try:
        return [c async for c in provider.stream(request)]
    finally:
        await provider.aclose()


def texts(chunks: list[StreamChunk], kind: type) -> str:
    """The text of every chunk of ``kind`` (TextChunk or ReasoningChunk), joined."""
    return "".join(c.text for c in chunks if isinstance(c, kind))


def calls(chunks: list[StreamChunk]) -> list[ToolCall]:
    return [c.call for c in chunks if isinstance(c, ToolCallChunk)]


def the_finish(chunks: list[StreamChunk]) -> FinishChunk:
    """The one FinishChunk, which must also be the last chunk."""
    finishes = [c for c in chunks if isinstance(c, FinishChunk)]
    assert len(finishes) == 1 and chunks[-1] is finishes[0]
    return finishes[0]


def summary(chunks: list[StreamChunk]) -> dict[str, Any]:
    """The answer in the shape of a capture's ``expected.json``: text, reasoning, tool calls (id,
    name, parsed arguments) and the finish reason."""
    return {
        "text": texts(chunks, TextChunk),
        "reasoning": texts(chunks, ReasoningChunk),
        "tool_calls": [
            {"id": call.id, "name": call.name, "arguments": json.loads(call.arguments)} for call in calls(chunks)
        ],
        "finish": the_finish(chunks).reason,
    }


__all__ = ["calls", "collector", "hi", "stream_once", "summary", "texts", "the_finish"]
