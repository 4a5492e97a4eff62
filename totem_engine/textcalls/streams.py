"""What both stream filters (``think.py``, ``scanner.py``) share: the wrapped stream closed with
its wrapper, and how much of the end of the text could still start a tag."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from totem_engine.providers.base import StreamChunk


@asynccontextmanager
async def closing(stream: AsyncIterator[StreamChunk]):
    """The wrapped stream is closed with its wrapper (an abort must end the HTTP request now,
    not whenever the garbage collector finds the provider's generator)."""
    try:
        yield stream
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()


def partial_suffix(text: str, tag: str) -> int:
    """The length of the longest end of ``text`` that is a proper start of ``tag``."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0
