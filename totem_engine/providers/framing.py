"""Line framing for streamed bodies that are not server-sent events.

NDJSON (newline-delimited JSON, one JSON value per line) is what Ollama's native API streams
(``application/x-ndjson``, https://docs.ollama.com/api/chat and
https://docs.ollama.com/api/errors). HTTP chunk boundaries have nothing to do with line
boundaries: one network read may hold half a line, or several lines and the start of the next.

- ``NDJSONDecoder``: the pure splitter. ``feed(bytes)`` returns the JSON values of every line
  completed so far and keeps the unfinished tail; ``finish()`` returns the value of a last line
  that had no newline. Lines end at ``\\n``; a ``\\r`` before it is dropped; blank lines are
  skipped; a line that is not JSON (or not UTF-8, or nested over 200 levels:
  ``wire.decode.loads``) raises ``MalformedStream`` quoting its start; a line longer than
  ``max_line`` bytes raises ``MalformedStream`` instead of growing forever.
  Bytes are buffered, not text, so a multi-byte UTF-8 character split across reads is fine.
- ``aiter_ndjson(response)``: the values of an ``httpx`` streaming response, in order.

Transport failures while reading are left to the caller's ``http.open_stream`` context, which
translates them (``StreamCut``, ``ProviderTimeout``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from .errors import MalformedStream
from .wire.decode import loads

MAX_LINE = 16 * 1024 * 1024
"""Bytes one NDJSON line may take: far above any real chunk, bounded against a runaway body."""


class NDJSONDecoder:
    """Bytes in, one JSON value per completed line out (see the module docstring)."""

    def __init__(self, *, max_line: int = MAX_LINE) -> None:
        self._buffer = bytearray()
        self._max_line = max_line

    def feed(self, data: bytes) -> list[Any]:
        """The values of the lines ``data`` completes; the unfinished tail is kept."""
        self._buffer.extend(data)
        values: list[Any] = []
        start = 0
        while True:
            end = self._buffer.find(b"\n", start)
            if end < 0:
                break
            value = self._decode(bytes(self._buffer[start:end]))
            if value is not _BLANK:
                values.append(value)
            start = end + 1
        if start:
            del self._buffer[:start]
        if len(self._buffer) > self._max_line:
            raise MalformedStream(
                f"stream line longer than {self._max_line} bytes without a newline:"
                f" {bytes(self._buffer[:200])!r}"
            )
        return values

    def finish(self) -> list[Any]:
        """The value of a last line the stream ended without a newline (none when blank)."""
        tail, self._buffer = bytes(self._buffer), bytearray()
        value = self._decode(tail)
        return [] if value is _BLANK else [value]

    @staticmethod
    def _decode(line: bytes) -> Any:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return _BLANK
        try:
            return loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            raise MalformedStream(f"stream line is not UTF-8: {line[:200]!r}") from None
        except ValueError as exc:
            text = line[:200].decode("utf-8", errors="replace")
            raise MalformedStream(f"stream line is not JSON ({exc}): {text!r}") from None


_BLANK = object()


async def aiter_ndjson(response: httpx.Response, *, max_line: int = MAX_LINE) -> AsyncIterator[Any]:
    """The JSON value of each non-blank line of ``response``'s body, in order."""
    decoder = NDJSONDecoder(max_line=max_line)
    async for piece in response.aiter_bytes():
        for value in decoder.feed(piece):
            yield value
    for value in decoder.finish():
        yield value


__all__ = ["MAX_LINE", "NDJSONDecoder", "aiter_ndjson"]
