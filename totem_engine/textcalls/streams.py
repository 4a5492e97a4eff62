"""What both stream filters (``think.py``, ``scanner.py``) share: the wrapped stream closed with
its wrapper, and how much of the end of the text could still start a tag."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from totem_engine.vocab.chat import StreamChunk


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
    # Called for every delta of a stream: look only where the tag's first character is (usually
    # nowhere in the last few characters), longest candidate first.
    at = text.find(tag[0], max(0, len(text) - len(tag) + 1))
    while at >= 0:
        if tag.startswith(text[at:]):
            return len(text) - at
        at = text.find(tag[0], at + 1)
    return 0
