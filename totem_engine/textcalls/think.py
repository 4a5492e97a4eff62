"""``think_filter``: thoughts written into the text turned into reasoning.

Models that think (qwen3 on Ollama, even with thinking switched off, the R1 distills, QwQ) write
their thoughts into the text and end them with ``</think>``. The start of the text waits for that
tag: what came before it becomes ``ReasoningChunk``, what follows is ``TextChunk``. When the text
opens with ``<think>`` the thoughts are known to be thoughts and stream as reasoning at once.
Without the tag the held text is released as ``TextChunk`` when the step ends (``FinishChunk`` or
the end of the stream) or once ``MAX_HOLD`` characters are held. A provider that separates
reasoning itself (a ``ReasoningChunk`` arrives) switches the filter off. Chunks that are not text
pass through in order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from totem_engine.vocab.chat import FinishChunk, ReasoningChunk, StreamChunk, TextChunk

from .streams import closing, partial_suffix

MAX_HOLD = 40_000  # characters of text held while waiting for </think>

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def split_think(text: str) -> tuple[str, str]:
    """A whole answer's ``(thoughts, answer)``, split as ``think_filter`` splits a stream: the
    thoughts are what comes before ``</think>`` (an unclosed ``<think>`` at the start: all of it),
    the answer what follows; ``("", text)`` when there are none. No ``MAX_HOLD``: the text is whole."""
    lead = text.lstrip()
    opened = lead.startswith(THINK_OPEN)
    body = lead[len(THINK_OPEN):].lstrip() if opened else text
    end = body.find(THINK_CLOSE)
    if end < 0:
        return (body, "") if opened else ("", text)
    thoughts, rest = _at_close(body, end, opened=opened)
    return thoughts, rest.lstrip()


def _at_close(text: str, end: int, *, opened: bool) -> tuple[str, str]:
    """The thoughts before the ``</think>`` at ``end`` and the text after it. Thoughts that did
    not open with ``<think>`` may still hold one (after a preamble): it is taken out."""
    thoughts, rest = text[:end], text[end + len(THINK_CLOSE):]
    if not opened:
        thoughts = thoughts.replace(THINK_OPEN, "").strip()
    return thoughts, rest


async def think_filter(stream: AsyncIterator[StreamChunk], *, max_hold: int = MAX_HOLD) -> AsyncIterator[StreamChunk]:
    """``stream`` with the thoughts before ``</think>`` turned into reasoning (module docstring)."""
    mode = "start"  # start -> open (after <think>, streaming reasoning) | held (no <think>) -> text
    buf = ""  # text not given out yet
    strip_answer = False  # drop the whitespace between </think> and the answer

    def answer(text: str) -> list[StreamChunk]:
        nonlocal strip_answer
        if strip_answer:
            text = text.lstrip()
            if text:
                strip_answer = False
        return [TextChunk(text)] if text else []

    def after_close(rest: str) -> list[StreamChunk]:
        nonlocal mode, strip_answer
        mode, strip_answer = "text", True
        return answer(rest)

    def release() -> list[StreamChunk]:
        """The step ended (or too much is held): whatever is held is what it looks like."""
        nonlocal buf, mode
        held, buf = buf, ""
        if mode == "open":
            mode = "text"
            return [ReasoningChunk(held)] if held else []  # an unclosed <think>: still thoughts
        mode = "text"
        return answer(held)

    def feed(text: str) -> list[StreamChunk]:
        nonlocal buf, mode
        if mode == "text":
            return answer(text)
        seen = max(len(buf) - len(THINK_CLOSE), 0)  # no tag ends before this
        buf += text
        out: list[StreamChunk] = []
        if mode == "start":
            lead = buf.lstrip()
            if not lead or (THINK_OPEN.startswith(lead) and lead != THINK_OPEN):
                return out  # could still be "<think>"
            if lead.startswith(THINK_OPEN):
                mode, buf = "open", lead[len(THINK_OPEN):].lstrip()
            else:
                mode = "held"
            seen = 0
        end = buf.find(THINK_CLOSE, seen)
        if end >= 0:
            thoughts, rest = _at_close(buf, end, opened=mode == "open")
            buf = ""
            if thoughts:
                out.append(ReasoningChunk(thoughts))
            return out + after_close(rest)
        if mode == "open":
            keep = partial_suffix(buf, THINK_CLOSE)
            ready, buf = buf[: len(buf) - keep], buf[len(buf) - keep:]
            if ready:
                out.append(ReasoningChunk(ready))
        elif len(buf) >= max_hold:
            out += release()
        return out

    async with closing(stream) as source:
        async for chunk in source:
            if isinstance(chunk, TextChunk):
                for piece in feed(chunk.text):
                    yield piece
            elif isinstance(chunk, ReasoningChunk) and mode in ("start", "held"):
                # The provider separates reasoning itself: the text is just text.
                for piece in release():
                    yield piece
                yield chunk
            elif isinstance(chunk, FinishChunk):
                for piece in release():
                    yield piece
                yield chunk
            else:
                yield chunk
    for piece in release():
        yield piece
