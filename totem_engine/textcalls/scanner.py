"""``text_tool_calls``: the tool calls a model writes as text, turned into ``ToolCallChunk``.

Models without reliable native tools write their calls as text, in the forms of ``formats.py``
(Hermes tags, Qwen XML, fenced or bare JSON), split across chunks anywhere; with ``file_blocks``
also as file blocks (``fileblocks.py``). Calls are removed from the visible text and become
``ToolCallChunk`` (ids ``call_text_<n>``). Any other code, fenced or not, stays text and is never
executed. Only as much text is held back as could still be the start of a call, so ordinary text
keeps streaming; chunks that are not text pass through in order.

The calls found in the text are given out at the end of the step (before its ``FinishChunk``),
and only when the provider sent no native call in that step; otherwise the markup is given back
as text at the end (a model that called natively meant its text as text). ``TextCallStats``
tells the caller what was seen, for the capability record's evidence rules.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

from totem_engine.vocab.chat import FinishChunk, StreamChunk, TextChunk, ToolCallChunk

from .buffer import Reader, ScanBuffer, TextCallStats
from .fileblocks import FileBlock
from .formats import FENCE, FUNC_OPEN, TAG_OPEN
from .readers import BareJson, Fence, FunctionMarkup, HermesTag
from .streams import closing, partial_suffix

# A bare call: "{" and the key "name" at the start of a line; and what could still become one.
_BARE_START = re.compile(r'\{\s*"name"\s*:')
_BARE_PARTIAL = re.compile(r'\{\s*(?:"(?:n(?:a(?:m(?:e(?:"\s*)?)?)?)?)?)?')
# The first characters of every markup (TAG_OPEN, FUNC_OPEN, a bare call, FENCE): text without
# them, with nothing held before it, is given out as it is (most deltas of a stream).
_MARKUP_START = re.compile(r"[<{`]")


class Scanner:
    """The text of one stream cut into visible text and calls (see ``text_tool_calls``).

    A state machine over ``text`` (a ``ScanBuffer``): between markups it gives out text up to the
    next start of one (``_open``), holding back only what could still become one (``_held``);
    at a markup its reader (``readers.py``, ``fileblocks.FileBlock``) reads it, and while the
    markup is not whole that reader stays ``text.pending`` until more text comes.
    """

    def __init__(self, text: ScanBuffer, file_block: FileBlock | None):
        self.text = text
        self.tag, self.function, self.bare = HermesTag(), FunctionMarkup(), BareJson()
        self.fence = Fence(file_block)

    def scan(self, final: bool) -> list[StreamChunk]:
        """The text chunks that can be given out now (``final``: all of them, the step ended);
        the calls found are collected in ``text.calls``."""
        while self.text.buf:
            reader = self.text.pending or self._open(final)
            if reader is None or not reader.read(self.text, final):
                break  # all text given out, or the markup is not whole yet: wait for more text
        return self.text.flush()

    def _open(self, final: bool) -> Reader | None:
        """The reader of the next markup, once the text before it is given out; None when there
        is none, all text given out but what could still start one."""
        at, reader = self._next_start()
        if reader is None:
            self.text.give_text(len(self.text.buf) - (0 if final else self._held()))
            return None
        self.text.give_text(at)
        return reader

    def _next_start(self) -> tuple[int, Reader | None]:
        """Where the first markup starts, and its reader (no two start at the same place)."""
        text = self.text
        found: list[tuple[int, Reader]] = []
        if not text.in_code:
            for marker, reader in ((TAG_OPEN, self.tag), (FUNC_OPEN, self.function)):
                at = text.buf.find(marker)
                if at >= 0:
                    found.append((at, reader))
            for match in _BARE_START.finditer(text.buf):
                if text.at_line_start(match.start()):
                    found.append((match.start(), self.bare))
                    break
        at = text.buf.find(FENCE)
        while at >= 0 and not text.at_line_start(at):
            at = text.buf.find(FENCE, at + 1)
        if at >= 0:
            found.append((at, self.fence))
        return min(found, key=lambda start: start[0]) if found else (-1, None)

    def _held(self) -> int:
        """How much of the end of the buffer could still become the start of a markup."""
        text, keep = self.text, 0
        if not text.in_code:
            keep = max(partial_suffix(text.buf, TAG_OPEN), partial_suffix(text.buf, FUNC_OPEN))
            line_at = text.buf.rfind("\n") + 1
            if text.at_line_start(line_at) and _BARE_PARTIAL.fullmatch(text.buf[line_at:]):
                keep = max(keep, len(text.buf) - line_at)
        ticks = len(text.buf) - len(text.buf.rstrip("`"))
        if 0 < ticks < len(FENCE) and text.at_line_start(len(text.buf) - ticks):
            keep = max(keep, ticks)
        return keep


async def text_tool_calls(
    stream: AsyncIterator[StreamChunk],
    known_tools: Iterable[str],
    *,
    schemas: Mapping[str, Any] | None = None,
    stats: TextCallStats | None = None,
    file_blocks: bool = False,
    default_path: str | None = None,
    path_for: Callable[[str], str] | None = None,
    scripts: bool = False,
) -> AsyncIterator[StreamChunk]:
    """``stream`` with the tool calls written in its text turned into ToolCallChunks.

    ``known_tools``: the names a fenced JSON call may use (tags are taken whatever the name: the
    loop answers an unknown one with the list of tools). ``schemas``: optional JSON schemas by
    tool name, used to type the values of Qwen XML parameters. ``stats`` is filled as the stream
    goes (see ``TextCallStats``). ``file_blocks``: a fenced block that names a path is a ``write``
    (a ``patch`` when it holds a diff); ``default_path``: with ``file_blocks``, the file a block
    that names none is taken for (the one file shown with the request, as aider does with the
    one file in its chat); ``path_for``: with ``file_blocks``, the file a block naming a path is
    written to (the engine's policy for a small model's slips; the path itself when absent);
    ``scripts``: a Python fence that names no file is a ``run_script`` of its content (code mode).
    """
    stats = stats if stats is not None else TextCallStats()
    known = frozenset(known_tools)
    blocks = file_blocks and "write" in known
    scripts = scripts and "run_script" in known
    file_block = FileBlock(default_path, path_for, writes=blocks, scripts=scripts) if blocks or scripts else None
    scanner = Scanner(ScanBuffer(known, schemas or {}, stats), file_block)

    def finish() -> list[StreamChunk]:
        out = scanner.scan(final=True)
        calls, scanner.text.calls = scanner.text.calls, []
        if stats.native:
            # The model called natively: what looked like calls in its text was text.
            out += [TextChunk(markup) for _, markup in calls]
        else:
            out += [ToolCallChunk(call) for call, _ in calls]
            stats.emitted += len(calls)
        return out

    async with closing(stream) as source:
        async for chunk in source:
            if isinstance(chunk, TextChunk):
                text = scanner.text
                if not text.buf and text.pending is None and not _MARKUP_START.search(chunk.text):
                    text.buf = chunk.text
                    text.give_text(len(chunk.text))
                    for piece in text.flush():
                        yield piece
                    continue
                text.buf += chunk.text
                for piece in scanner.scan(final=False):
                    yield piece
            elif isinstance(chunk, ToolCallChunk):
                stats.native += 1
                yield chunk
            elif isinstance(chunk, FinishChunk):
                for piece in finish():
                    yield piece
                yield chunk
            else:
                yield chunk
    for piece in finish():
        yield piece
