"""One try of a step's stream: its text and reasoning parts stored as they grow, each chunk
forwarded to the front end, the text filters wired, and a reply repeating itself cut.

``StepStream.read`` reads the provider's stream through the filters: ``<think>`` for models that
write their thoughts into the text, and tool calls written as text, which fill a step that has
no native call (native calls win; the markup is then given back as text). The raw text is
watched for repetition before the filters hold any of it (a file block is held until it closes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass

import anyio

from totem_engine.api import events as ev
from totem_engine.providers.base import Provider
from totem_engine.vocab.chat import (
    ChatRequest,
    FinishChunk,
    ReasoningChunk,
    StateChunk,
    StreamChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from totem_engine.vocab.tools import ToolCall, ToolSpec
from totem_engine.textcalls import TextCallStats, text_tool_calls, think_filter
from totem_engine.store import DeferredWrites, new_id
from totem_engine.turn.repetition import RepetitionDetector

STORE_EVERY = 0.25  # seconds between stored updates of a streaming part


class StreamedPart:
    """One text or reasoning part of a step: created on its first delta and stored again every
    STORE_EVERY seconds while it grows (``flush_while_streaming``, which also commits the queued
    writes), so a killed process loses at most the last fraction of a second of it."""

    def __init__(self, writes: DeferredWrites, message_id: str, kind: str):
        self.writes, self.message_id, self.kind = writes, message_id, kind
        self.part_id: str | None = None
        self.chunks: list[str] = []
        self.stored = False
        self.dirty = False

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def next_id(self) -> str:
        """The part's id, made on its first delta before the part is stored: the delta's event
        goes to the front end first (a store write is a hop to its worker thread, a few ms on a
        loaded machine, which the first delta's latency would carry)."""
        if self.part_id is None:
            self.part_id = new_id("prt")
        return self.part_id

    async def add(self, text: str) -> None:
        """``text`` appended; the part stored on its first delta (with ``next_id``'s id)."""
        self.chunks.append(text)
        if not self.stored:
            self.stored = True
            await self.writes.add_part(self.message_id, self.kind, {"text": text}, part_id=self.next_id())
        else:
            self.dirty = True

    async def flush(self) -> None:
        if self.stored and self.dirty:
            self.dirty = False
            await self.writes.update_part(self.part_id, data={"text": self.text})

    async def cut(self, keep: int | None) -> None:
        """The part cut to its first ``keep`` characters and marked so, when that is shorter."""
        if keep is not None and keep < len(self.text):
            self.chunks = [self.text[:keep] + "\n[... the same text repeated; cut]"]
            self.dirty = True
            await self.flush()


async def flush_while_streaming(parts: list[StreamedPart], writes: DeferredWrites) -> None:
    while True:
        await anyio.sleep(STORE_EVERY)
        for part in parts:
            await part.flush()
        await writes.commit()  # on the disk now, not at the step's end


@dataclass(frozen=True)
class FileBlocks:
    """How the text-call scanner reads a fenced block naming a file (the turn policy's): as a
    ``write`` when ``enabled``; ``default_path`` for a block naming none; ``path_for`` the file a
    block naming a path is written to; ``scripts``: a Python block naming none is a
    ``run_script`` (code mode) (textcalls/scanner.py ``text_tool_calls``)."""

    enabled: bool = False
    default_path: str | None = None
    path_for: Callable[[str], str] | None = None
    scripts: bool = False


class StepStream:
    """One try of a step into the assistant message ``message_id``: what it streamed (``text``,
    ``reasoning``, ``calls``, ``usage``, ``model``: the model the provider said answered) and the
    text calls it read (``text_calls``). Its writes go to ``writes``, the turn's."""

    def __init__(
        self,
        writes: DeferredWrites,
        message_id: str,
        *,
        session_id: str,
        emit: Callable[[ev.Event], Awaitable[None]],
        unique_call: Callable[[ToolCall], ToolCall],
    ):
        self.writes, self.message_id, self.session_id = writes, message_id, session_id
        self.emit, self.unique_call = emit, unique_call
        self.text = StreamedPart(writes, message_id, "text")
        self.reasoning = StreamedPart(writes, message_id, "reasoning")
        self.calls: list[ToolCall] = []
        self.usage = ev.Usage()
        self.model: str | None = None
        self.finish: str | None = None  # the provider's own stop reason (FinishChunk.reason)
        self.text_calls = TextCallStats()
        self._repeat_text = RepetitionDetector()
        self._repeat_reasoning = RepetitionDetector()
        self._repeat_held = RepetitionDetector()

    @property
    def parts(self) -> list[StreamedPart]:
        return [self.text, self.reasoning]

    async def read(
        self, provider: Provider, request: ChatRequest, *, specs: tuple[ToolSpec, ...], think_tags: bool, blocks: FileBlocks
    ) -> None:
        """Forward every delta as it arrives and collect the tool calls. Raises the provider's
        ``ProviderError``."""
        stream = provider.stream(request)
        if specs:
            stream = _watched(stream, self._repeat_held)
        if think_tags:
            stream = think_filter(stream)
        if specs:
            stream = text_tool_calls(
                stream,
                {spec.name for spec in specs},
                schemas={spec.name: spec.parameters for spec in specs},
                stats=self.text_calls,
                file_blocks=blocks.enabled,
                default_path=blocks.default_path,
                path_for=blocks.path_for,
                scripts=blocks.scripts,
            )
        async with aclosing(stream) as chunks:
            try:
                async for chunk in chunks:
                    await self._forward(chunk, provider)
                    if self._repeat_text.fired or self._repeat_reasoning.fired:
                        break  # closing the stream ends the request
            except _Repeating:
                pass  # what the filters held is dropped with the stream

    async def _forward(self, chunk: StreamChunk, provider: Provider) -> None:
        """One chunk of the stream to the store, the front end or the step's calls."""
        if isinstance(chunk, TextChunk) and chunk.text:
            await self.emit(ev.TextDelta(session_id=self.session_id, part_id=self.text.next_id(), text=chunk.text))
            await self.text.add(chunk.text)
            self._repeat_text.feed(chunk.text)
        elif isinstance(chunk, ReasoningChunk) and chunk.text:
            await self.emit(ev.ReasoningDelta(session_id=self.session_id, part_id=self.reasoning.next_id(), text=chunk.text))
            await self.reasoning.add(chunk.text)
            self._repeat_reasoning.feed(chunk.text)
        elif isinstance(chunk, ToolCallChunk):
            self.calls.append(self.unique_call(chunk.call))
        elif isinstance(chunk, UsageChunk):
            self.usage = ev.Usage(input_tokens=chunk.input_tokens, output_tokens=chunk.output_tokens)
        elif isinstance(chunk, StateChunk):
            await self.writes.add_part(self.message_id, "state", {"provider": provider.name, "data": chunk.data})
        elif isinstance(chunk, FinishChunk):
            self.finish = chunk.reason
            if chunk.model:
                self.model = chunk.model

    async def flush(self) -> None:
        await self.text.flush()
        await self.reasoning.flush()

    async def cut_repetition(self) -> str | None:
        """The reason to stop when the stream was cut for repeating itself; the stored part keeps
        the text up to two copies of the repeated span."""
        for part, detector in ((self.text, self._repeat_text), (self.reasoning, self._repeat_reasoning)):
            if detector.fired:
                await part.cut(detector.keep(copies=2))
                return detector.reason
        held = self._repeat_held
        if not held.fired:
            return None
        # Caught before the filters: the text given out, if it holds the span, is cut where it starts.
        start = self.text.text.find(held.unit)
        await self.text.cut(start + 2 * len(held.unit) if start >= 0 else None)
        return held.reason


class _Repeating(Exception):
    """The raw stream repeated itself (``_watched``)."""


async def _watched(stream: AsyncIterator[StreamChunk], detector: RepetitionDetector) -> AsyncIterator[StreamChunk]:
    """``stream`` with its text fed to ``detector`` before any filter holds it; raises
    ``_Repeating`` when it fires."""
    async with aclosing(stream) as chunks:
        async for chunk in chunks:
            if isinstance(chunk, TextChunk) and detector.feed(chunk.text):
                raise _Repeating
            yield chunk
