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

import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from totem_engine.providers.base import FinishChunk, StreamChunk, TextChunk, ToolCall, ToolCallChunk

from .fileblocks import COMMENTS, comment_path, file_call, fits, info_path, introduced_path, path_line
from .formats import (
    FENCE,
    FENCE_INFO,
    FUNC_CLOSE,
    FUNC_OPEN,
    TAG_CLOSE,
    TAG_OPEN,
    broken_call,
    call_from_value,
    fence_head,
    parse_fence_json,
    parse_function,
    parse_hermes,
)
from .streams import closing, partial_suffix

_MAX_INFO = 20
# A bare call: "{" and the key "name" at the start of a line; and what could still become one.
_BARE_START = re.compile(r'\{\s*"name"\s*:')
_BARE_PARTIAL = re.compile(r'\{\s*(?:"(?:n(?:a(?:m(?:e(?:"\s*)?)?)?)?)?)?')
_MAX_TAIL = 300
_MAX_PATH_WAIT = 200  # characters of a fence's first lines held while a path may still be in them


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


class _Scanner:
    """The text of one stream, cut into visible text and calls (see ``text_tool_calls``).

    ``buf`` is the text not given out yet. While a markup is open (``pending``) the buffer starts
    with it and only the text after ``resume`` is searched for its end, so a long call (a file
    written through ``write``) costs one pass, not one per chunk.
    """

    def __init__(
        self,
        known: frozenset[str],
        schemas: Mapping[str, Any],
        stats: TextCallStats,
        *,
        file_blocks: bool,
        default_path: str | None,
        path_for: Callable[[str], str] | None,
    ):
        self.known = known
        self.schemas = schemas
        self.stats = stats
        self.file_blocks = file_blocks and "write" in known
        self.buf = ""
        self.tail = ""  # the end of the text given out, for the line before a fence
        self.default_path = default_path if "write" in known else None
        self.path_for = path_for
        self.file_path = ""  # the file block open at the start of buf: its path
        self.file_start = 0  # and where its content starts
        self.file_unnamed = False  # and whether the path is default_path, the block naming none
        self.line_start = True  # the text given out so far ends a line (or is empty)
        self.in_code = False  # inside an ordinary code fence: only its closing ``` is looked for
        self.pending: str | None = None  # the kind of markup open at the start of buf
        self.resume = 0
        self.calls: list[tuple[ToolCall, str]] = []  # (call, the markup it was written as)

    # -- giving out ----------------------------------------------------------------------------

    def _text(self, out: list[StreamChunk], text: str) -> None:
        if text:
            out.append(TextChunk(text))
            self.line_start = text.endswith("\n")
            self.tail = (self.tail + text)[-_MAX_TAIL:]

    def _take_text(self, out: list[StreamChunk], size: int) -> bool:
        self._text(out, self.buf[:size])
        self.buf = self.buf[size:]
        self.pending, self.resume = None, 0
        return True

    def _take_call(self, parsed: tuple[str, dict], size: int) -> bool:
        name, arguments = parsed
        call = ToolCall(
            id=f"call_text_{self.stats.parsed}",
            name=name,
            arguments=json.dumps(arguments, ensure_ascii=False),
        )
        self.stats.parsed += 1
        self.calls.append((call, self.buf[:size]))
        self.buf = self.buf[size:]
        self.pending, self.resume = None, 0
        self.line_start = False
        self.tail = ""
        return True

    def _wait(self, kind: str, close: str) -> bool:
        self.pending = kind
        self.resume = max(len(self.buf) - len(close), 0)
        return False

    def _code(self, out: list[StreamChunk], opener: int) -> bool:
        """A fence that is not a call: its opening line is text and what follows is code."""
        self.in_code = True
        return self._take_text(out, opener)

    # -- scanning ------------------------------------------------------------------------------

    def _at_line_start(self, at: int) -> bool:
        return (at == 0 and self.line_start) or (at > 0 and self.buf[at - 1] == "\n")

    def _next_start(self) -> tuple[int, str | None]:
        found: list[tuple[int, str]] = []
        if not self.in_code:
            for marker, kind in ((TAG_OPEN, "tag"), (FUNC_OPEN, "func")):
                at = self.buf.find(marker)
                if at >= 0:
                    found.append((at, kind))
            for match in _BARE_START.finditer(self.buf):
                if self._at_line_start(match.start()):
                    found.append((match.start(), "bare"))
                    break
        at = self.buf.find(FENCE)
        while at >= 0 and not self._at_line_start(at):
            at = self.buf.find(FENCE, at + 1)
        if at >= 0:
            found.append((at, "fence"))
        return min(found) if found else (-1, None)

    def _held(self) -> int:
        """How much of the end of the buffer could still become the start of a markup."""
        keep = 0
        if not self.in_code:
            keep = max(partial_suffix(self.buf, TAG_OPEN), partial_suffix(self.buf, FUNC_OPEN))
            line_at = self.buf.rfind("\n") + 1
            if self._at_line_start(line_at) and _BARE_PARTIAL.fullmatch(self.buf[line_at:]):
                keep = max(keep, len(self.buf) - line_at)
        ticks = len(self.buf) - len(self.buf.rstrip("`"))
        if 0 < ticks < len(FENCE) and self._at_line_start(len(self.buf) - ticks):
            keep = max(keep, ticks)
        return keep

    def scan(self, final: bool) -> list[StreamChunk]:
        out: list[StreamChunk] = []
        while self.buf:
            kind = self.pending
            if kind is None:
                at, kind = self._next_start()
                if kind is None:
                    keep = 0 if final else self._held()
                    self._text(out, self.buf[: len(self.buf) - keep])
                    self.buf = self.buf[len(self.buf) - keep:]
                    break
                if at > 0:
                    self._text(out, self.buf[:at])
                    self.buf = self.buf[at:]
            handler = {"tag": self._tag, "func": self._func, "fence": self._fence, "bare": self._bare, "file": self._file}[kind]
            if not handler(out, final):
                break  # the markup is not whole yet: wait for more text
        return out

    def _tag(self, out: list[StreamChunk], final: bool) -> bool:
        end = self.buf.find(TAG_CLOSE, max(self.resume, len(TAG_OPEN)))
        lead = self.buf[len(TAG_OPEN): len(TAG_OPEN) + 256].lstrip()
        attempt = lead.startswith(("{", FUNC_OPEN)) or (not final and FUNC_OPEN.startswith(lead))
        if not attempt:
            return self._take_text(out, len(TAG_OPEN))  # "<tool_call>" in prose: not a call
        if end < 0 and not final:
            return self._wait("tag", TAG_CLOSE)
        size = len(self.buf) if end < 0 else end + len(TAG_CLOSE)
        body = self.buf[len(TAG_OPEN): end if end >= 0 else len(self.buf)].strip()
        if body.startswith(FUNC_OPEN):
            parsed = parse_function(body, self.schemas)
        else:
            parsed = parse_hermes(body)
        if parsed is None:
            self.stats.malformed += 1
            return self._take_text(out, size)
        return self._take_call(parsed, size)

    def _func(self, out: list[StreamChunk], final: bool) -> bool:
        header = re.match(r"<function=([^>\s]*)(\s*)(>?)", self.buf)
        rest = self.buf[header.end():]
        opened = bool(header.group(1)) and header.group(3) == ">"
        if not opened and (rest or header.group(3) or (header.group(2) and not header.group(1))):
            return self._take_text(out, len(FUNC_OPEN))  # "<function=" in prose
        end = self.buf.find(FUNC_CLOSE, max(self.resume, header.end()))
        if end < 0:
            if final:
                return self._take_text(out, len(FUNC_OPEN))
            return self._wait("func", FUNC_CLOSE)
        size = end + len(FUNC_CLOSE)
        parsed = parse_function(self.buf[:size], self.schemas)
        if parsed is None:
            self.stats.malformed += 1
            return self._take_text(out, size)
        return self._take_call(parsed, size)

    def _bare(self, out: list[StreamChunk], final: bool) -> bool:
        """A call written as a JSON object alone on its line: whole once the object decodes."""
        if not final and self.pending == "bare" and "}" not in self.buf[self.resume:]:
            return self._wait("bare", "")  # it cannot have ended without a new "}"
        try:
            value, end = json.JSONDecoder().raw_decode(self.buf)
        except ValueError:
            if not final:
                return self._wait("bare", "")
            self.stats.malformed += 1
            return self._take_text(out, len(self.buf))
        parsed = call_from_value(value)
        if parsed is None or parsed[0] not in self.known:
            return self._take_text(out, end)
        return self._take_call(parsed, end)

    def _file_start(self, final: bool) -> bool | None:
        """Whether the fence at the start of buf opens a file block (file_path and file_start are
        then set): a path before it, in its info string or in a comment on its first line. None:
        it does not; False: cannot tell yet."""
        newline = self.buf.find("\n", len(FENCE))
        if newline < 0:
            return None if final or len(self.buf) > _MAX_PATH_WAIT else False
        path = introduced_path(self.tail) or info_path(self.buf[len(FENCE):newline])
        start = newline + 1
        if path is None:
            end = self.buf.find("\n", start)
            first = self.buf[start: end if end >= 0 else len(self.buf)]
            if end < 0:
                lead = first.lstrip()
                could_be = lead.startswith(COMMENTS) or any(marker.startswith(lead) for marker in COMMENTS)
                if could_be and not final and len(first) <= _MAX_PATH_WAIT:
                    return False
            path = comment_path(first) if end >= 0 else None
            if path is not None:
                start = end + 1
            elif self.default_path and fits(self.buf[len(FENCE):newline], self.default_path):
                path, self.file_unnamed = self.default_path, True
            else:
                return None
        if self.path_for is not None and not self.file_unnamed:
            path = self.path_for(path)
        self.file_path, self.file_start = path, start
        return True

    def _file(self, out: list[StreamChunk], final: bool) -> bool:
        """A file block: the whole new content of ``file_path`` (a call in a json fence stays one)."""
        close = self.buf.find("\n" + FENCE, max(self.resume, self.file_start - 1))
        if close < 0 and not final:
            self._wait("file", "\n" + FENCE)
            self.resume = max(self.resume, self.file_start - 1)
            return False
        size = len(self.buf) if close < 0 else close + 1 + len(FENCE)
        body = self.buf[self.file_start: close if close >= 0 else len(self.buf)]
        unnamed, self.file_unnamed = self.file_unnamed, False
        if unnamed and path_line(body):
            return self._take_text(out, size)  # "```\ncalc.py\n```": the label of the next block
        parsed = parse_fence_json(body, self.known, self.schemas) or file_call(body, self.file_path)
        return self._take_call(parsed, size)

    def _fence(self, out: list[StreamChunk], final: bool) -> bool:
        if self.in_code:  # the end of an ordinary code block
            self.in_code = False
            return self._take_text(out, len(FENCE))
        if self.file_blocks:
            opens = self._file_start(final)
            if opens is False:
                return self._wait("fence", "")  # its first lines are still coming
            if opens:
                return self._file(out, final)
        newline = self.buf.find("\n", len(FENCE))
        if newline < 0:
            info = self.buf[len(FENCE):].strip().lower()
            plausible = len(info) <= _MAX_INFO and any(name.startswith(info) for name in FENCE_INFO)
            if plausible and not final:
                return self._wait("fence", "")
            return self._code(out, len(self.buf))
        if self.buf[len(FENCE):newline].strip().lower() not in FENCE_INFO:
            return self._code(out, newline + 1)
        body_start = newline + 1
        close = self.buf.find("\n" + FENCE, max(self.resume, newline))
        body_end = close if close >= 0 else len(self.buf)
        head = fence_head(self.buf[body_start: min(body_end, body_start + 512)], self.known)
        if head == "reject" or (head == "more" and (final or close >= 0 or body_end - body_start >= 512)):
            return self._code(out, body_start)
        if close < 0 and not final:
            self._wait("fence", "\n" + FENCE)
            self.resume = max(self.resume, newline)
            return False
        parsed = parse_fence_json(self.buf[body_start:body_end], self.known, self.schemas)
        if parsed is None:
            self.stats.malformed += broken_call(self.buf[body_start:body_end])
            return self._code(out, body_start)
        return self._take_call(parsed, len(self.buf) if close < 0 else close + 1 + len(FENCE))


async def text_tool_calls(
    stream: AsyncIterator[StreamChunk],
    known_tools: Iterable[str],
    *,
    schemas: Mapping[str, Any] | None = None,
    stats: TextCallStats | None = None,
    file_blocks: bool = False,
    default_path: str | None = None,
    path_for: Callable[[str], str] | None = None,
) -> AsyncIterator[StreamChunk]:
    """``stream`` with the tool calls written in its text turned into ToolCallChunks.

    ``known_tools``: the names a fenced JSON call may use (tags are taken whatever the name: the
    loop answers an unknown one with the list of tools). ``schemas``: optional JSON schemas by
    tool name, used to type the values of Qwen XML parameters. ``stats`` is filled as the stream
    goes (see ``TextCallStats``). ``file_blocks``: a fenced block that names a path is a ``write``
    (a ``patch`` when it holds a diff); ``default_path``: with ``file_blocks``, the file a block
    that names none is taken for (the one file shown with the request, as aider does with the
    one file in its chat); ``path_for``: with ``file_blocks``, the file a block naming a path is
    written to (the engine's policy for a small model's slips; the path itself when absent).
    """
    stats = stats if stats is not None else TextCallStats()
    scanner = _Scanner(
        frozenset(known_tools), schemas or {}, stats, file_blocks=file_blocks,
        default_path=default_path if file_blocks else None, path_for=path_for if file_blocks else None,
    )

    def finish() -> list[StreamChunk]:
        out = scanner.scan(final=True)
        if stats.native:
            # The model called natively: what looked like calls in its text was text.
            out += [TextChunk(markup) for _, markup in scanner.calls]
        else:
            out += [ToolCallChunk(call) for call, _ in scanner.calls]
            stats.emitted += len(scanner.calls)
        scanner.calls = []
        return out

    async with closing(stream) as source:
        async for chunk in source:
            if isinstance(chunk, TextChunk):
                scanner.buf += chunk.text
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
