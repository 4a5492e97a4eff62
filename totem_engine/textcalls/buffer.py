"""The text of one stream while the scanner cuts it: what is held, what was given out (text
chunks and calls), and which reader holds the markup open at its start.

A reader (``readers.py``, ``fileblocks.FileBlock``) reads one kind of markup at the start of
``buf``: it gives it out as text or a call and returns True, or returns False (``wait``) while
the markup is not whole yet; the scanner then hands it the buffer again when more text comes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from totem_engine.vocab.chat import StreamChunk, TextChunk
from totem_engine.vocab.tools import ToolCall

_MAX_TAIL = 300  # characters of the text given out kept for the line before a fence


@dataclass
class TextCallStats:
    """What ``text_tool_calls`` saw in one stream.

    ``parsed``: calls found in the text; ``emitted``: those given out as ToolCallChunk (0 when a
    native call arrived); ``malformed``: markup that was meant as a call but did not parse;
    ``native``: native ToolCallChunks that passed through.
    """

    parsed: int = 0
    emitted: int = 0
    malformed: int = 0
    native: int = 0


class Reader(Protocol):
    def read(self, text: ScanBuffer, final: bool) -> bool:
        """Read the markup at the start of ``text.buf``: True when it was given out, False while
        it is not whole yet (``final``: no more text comes)."""
        ...


class ScanBuffer:
    """``buf`` is the text not given out yet. While a markup is open (``pending``) the buffer
    starts with it and only the text after ``resume`` is searched for its end, so a long call (a
    file written through ``write``) costs one pass, not one per chunk. ``out`` collects the text
    chunks of one scan, ``calls`` the calls of the step with the markup each was written as."""

    def __init__(self, known: frozenset[str], schemas: Mapping[str, Any], stats: TextCallStats):
        self.known = known
        self.schemas = schemas
        self.stats = stats
        self.buf = ""
        self.tail = ""  # the end of the text given out, for the line before a fence
        self.line_start = True  # the text given out so far ends a line (or is empty)
        self.in_code = False  # inside an ordinary code fence: only its closing ``` is looked for
        self.pending: Reader | None = None  # the reader of the markup open at the start of buf
        self.resume = 0
        self.out: list[StreamChunk] = []
        self.calls: list[tuple[ToolCall, str]] = []  # (call, the markup it was written as)

    def at_line_start(self, at: int) -> bool:
        return (at == 0 and self.line_start) or (at > 0 and self.buf[at - 1] == "\n")

    def give_text(self, size: int) -> None:
        """The first ``size`` characters of ``buf`` given out as text."""
        text, self.buf = self.buf[:size], self.buf[size:]
        if text:
            self.out.append(TextChunk(text))
            self.line_start = text.endswith("\n")
            self.tail = (self.tail + text)[-_MAX_TAIL:]

    def take_text(self, size: int) -> bool:
        """The markup of ``size`` characters at the start is text after all."""
        self.give_text(size)
        self.pending, self.resume = None, 0
        return True

    def take_call(self, parsed: tuple[str, dict], size: int) -> bool:
        """The markup of ``size`` characters at the start is the call ``parsed`` (name, arguments)."""
        name, arguments = parsed
        call = ToolCall(id=f"call_text_{self.stats.parsed}", name=name, arguments=json.dumps(arguments, ensure_ascii=False))
        self.stats.parsed += 1
        self.calls.append((call, self.buf[:size]))
        self.buf = self.buf[size:]
        self.pending, self.resume = None, 0
        self.line_start = False
        self.tail = ""
        return True

    def take_markup(self, parsed: tuple[str, dict] | None, size: int) -> bool:
        """A markup meant as a call: the call, or text counted as malformed when it did not parse."""
        if parsed is None:
            self.stats.malformed += 1
            return self.take_text(size)
        return self.take_call(parsed, size)

    def take_code(self, opener: int) -> bool:
        """A fence that is not a call: its opening line is text and what follows is code."""
        self.in_code = True
        return self.take_text(opener)

    def wait(self, reader: Reader, close: str, not_before: int = 0) -> bool:
        """The markup is not whole yet: ``reader`` reads it again when more text comes, searching
        for ``close`` only in the new text (and not before ``not_before``)."""
        self.pending = reader
        self.resume = max(len(self.buf) - len(close), not_before, 0)
        return False

    def flush(self) -> list[StreamChunk]:
        out, self.out = self.out, []
        return out
