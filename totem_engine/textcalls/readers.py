"""The scanner's readers of call markup (the states of ``scanner.Scanner``): each reads one kind
of markup at the start of the buffer, as it streams in, and hands the whole of it to its parser
in ``formats.py``. The file-block reader is ``fileblocks.FileBlock``."""

from __future__ import annotations

import json
import re

from .buffer import ScanBuffer
from .fileblocks import FileBlock
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

_MAX_INFO = 20  # characters of a fence's info string that may still become a call's
_HEAD = 512  # characters of a fence's content that must tell whether it is a call
_FUNCTION_HEADER = re.compile(r"<function=([^>\s]*)(\s*)(>?)")


class HermesTag:
    """``<tool_call>…</tool_call>`` holding Hermes JSON or Qwen XML; in prose it is text."""

    def read(self, text: ScanBuffer, final: bool) -> bool:
        end = text.buf.find(TAG_CLOSE, max(text.resume, len(TAG_OPEN)))
        lead = text.buf[len(TAG_OPEN): len(TAG_OPEN) + 256].lstrip()
        attempt = lead.startswith(("{", FUNC_OPEN)) or (not final and FUNC_OPEN.startswith(lead))
        if not attempt:
            return text.take_text(len(TAG_OPEN))  # "<tool_call>" in prose: not a call
        if end < 0 and not final:
            return text.wait(self, TAG_CLOSE)
        size = len(text.buf) if end < 0 else end + len(TAG_CLOSE)
        body = text.buf[len(TAG_OPEN): end if end >= 0 else len(text.buf)].strip()
        parsed = parse_function(body, text.schemas) if body.startswith(FUNC_OPEN) else parse_hermes(body)
        return text.take_markup(parsed, size)


class FunctionMarkup:
    """Qwen XML outside a tag: ``<function=name>…</function>``; ``<function=`` in prose is text."""

    def read(self, text: ScanBuffer, final: bool) -> bool:
        header = _FUNCTION_HEADER.match(text.buf)
        rest = text.buf[header.end():]
        opened = bool(header.group(1)) and header.group(3) == ">"
        if not opened and (rest or header.group(3) or (header.group(2) and not header.group(1))):
            return text.take_text(len(FUNC_OPEN))  # "<function=" in prose
        end = text.buf.find(FUNC_CLOSE, max(text.resume, header.end()))
        if end < 0:
            return text.take_text(len(FUNC_OPEN)) if final else text.wait(self, FUNC_CLOSE)
        size = end + len(FUNC_CLOSE)
        return text.take_markup(parse_function(text.buf[:size], text.schemas), size)


class BareJson:
    """A call written as a JSON object alone on its line: whole once the object decodes."""

    def read(self, text: ScanBuffer, final: bool) -> bool:
        if not final and text.pending is self and "}" not in text.buf[text.resume:]:
            return text.wait(self, "")  # it cannot have ended without a new "}"
        try:
            value, end = json.JSONDecoder().raw_decode(text.buf)
        except ValueError:
            if not final:
                return text.wait(self, "")
            return text.take_markup(None, len(text.buf))
        parsed = call_from_value(value)
        if parsed is None or parsed[0] not in text.known:
            return text.take_text(end)
        return text.take_call(parsed, end)


class Fence:
    """A Markdown fence at the start of a line: the end of an ordinary code block, a file block
    (``file_block``, in the small-model mode), a JSON call, or the start of code."""

    def __init__(self, file_block: FileBlock | None):
        self.file_block = file_block

    def read(self, text: ScanBuffer, final: bool) -> bool:
        if text.in_code:  # the end of an ordinary code block
            text.in_code = False
            return text.take_text(len(FENCE))
        if self.file_block is not None:
            opens = self.file_block.opens(text, final)
            if opens is False:
                return text.wait(self, "")  # its first lines are still coming
            if opens:
                return self.file_block.read(text, final)
        newline = text.buf.find("\n", len(FENCE))
        if newline < 0:
            return self._info(text, final)
        if text.buf[len(FENCE):newline].strip().lower() not in FENCE_INFO:
            return text.take_code(newline + 1)
        return self._call(text, final, newline + 1)

    def _info(self, text: ScanBuffer, final: bool) -> bool:
        """The opening line is still coming: wait while its info string may become a call's."""
        info = text.buf[len(FENCE):].strip().lower()
        plausible = len(info) <= _MAX_INFO and any(name.startswith(info) for name in FENCE_INFO)
        if plausible and not final:
            return text.wait(self, "")
        return text.take_code(len(text.buf))

    def _call(self, text: ScanBuffer, final: bool, body_start: int) -> bool:
        """A fence whose info string allows a call: a call once whole if its content starts as one."""
        close = text.buf.find("\n" + FENCE, max(text.resume, body_start - 1))
        body_end = close if close >= 0 else len(text.buf)
        head = fence_head(text.buf[body_start: min(body_end, body_start + _HEAD)], text.known)
        if head == "reject" or (head == "more" and (final or close >= 0 or body_end - body_start >= _HEAD)):
            return text.take_code(body_start)
        if close < 0 and not final:
            return text.wait(self, "\n" + FENCE, not_before=body_start - 1)
        body = text.buf[body_start:body_end]
        parsed = parse_fence_json(body, text.known, text.schemas)
        if parsed is None:
            text.stats.malformed += broken_call(body)
            return text.take_code(body_start)
        return text.take_call(parsed, len(text.buf) if close < 0 else close + 1 + len(FENCE))
