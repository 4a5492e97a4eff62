"""LSP messages read off a byte stream: the base protocol's header part, then its content part.

https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#baseProtocol

pygls' read loop (``pygls.io_.run_async``) trusts the header: a ``Content-Length`` too large
for an index ended the server, and a header it could not read lost the stream. Here a header
part that cannot be read, or a content part over the size limit, is a ``BadFrame`` for that one
message, and reading goes on at the next header (``NEXT_HEADER``). Standard library only: the
server imports this before ``initialize``.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import threading
from collections.abc import Awaitable, Callable

CHUNK = 65536  # bytes asked of the stream at a time
MAX_HEADER = 8192  # bytes a header part may take; a real one is about 60
HEAD = 4096  # bytes at the start of an unread or unparsable body searched for its request id
HEADER_END = b"\r\n\r\n"
# The line that opens a header part. It cannot occur inside a JSON body (a raw CR LF there is
# outside any string, and outside strings JSON has no letters but true, false and null), so
# after a bad header the stream is skipped up to the next one.
NEXT_HEADER = re.compile(rb"Content-Length:[ \t]*[0-9]+\r\n", re.IGNORECASE)
# Bytes kept at the end of skipped data, in case a header starts there and ends in the next chunk.
HEADER_TAIL = 64

RequestId = int | str


class BadFrame:
    """A message the reader could not take: why (for the error's text) and, when it could be
    read from the start of the body, the id of the request to answer. (A plain class: a
    dataclass costs a few ms of start-up.)"""

    __slots__ = ("reason", "request_id")

    def __init__(self, reason: str, request_id: RequestId | None) -> None:
        self.reason = reason
        self.request_id = request_id


class Frames:
    """The content parts of the messages on a stream, one ``next()`` at a time.

    ``read()`` gives the next bytes of the stream (``b""`` at its end); ``limit()`` the most
    bytes a content part may have, read at each message so a new config applies to the next one.
    """

    def __init__(self, read: Callable[[], Awaitable[bytes]], limit: Callable[[], int]) -> None:
        self._read = read
        self._limit = limit
        self._buffer = bytearray()
        self._skipping = False  # after a BadFrame: the stream up to the next header is dropped

    async def next(self) -> bytes | BadFrame | None:
        """The next content part, a BadFrame for a message that cannot be taken, None at the end."""
        if self._skipping and not await self._skip_to_header():
            return None
        while True:
            _drop_blank_lines(self._buffer)
            end = self._buffer.find(HEADER_END)
            if end < 0 and len(self._buffer) > MAX_HEADER:
                bad = self._bad(f"no end of the header part within {MAX_HEADER} bytes")
                del self._buffer[:-HEADER_TAIL]  # so the search for the next header moves on
                return bad
            if end >= 0:
                break
            if not await self._fill():
                return None
        header = bytes(self._buffer[:end])
        del self._buffer[: end + len(HEADER_END)]
        length = content_length(header, self._limit())
        if isinstance(length, str):
            return self._bad(length)
        while len(self._buffer) < length:
            if not await self._fill():
                return None
        body = bytes(self._buffer[:length])
        del self._buffer[:length]
        return body

    def _bad(self, reason: str) -> BadFrame:
        self._skipping = True
        return BadFrame(reason, head_id(bytes(self._buffer[:HEAD])))

    async def _fill(self) -> bool:
        chunk = await self._read()
        self._buffer += chunk
        return bool(chunk)

    async def _skip_to_header(self) -> bool:
        while True:
            found = NEXT_HEADER.search(self._buffer)
            if found:
                del self._buffer[: found.start()]
                self._skipping = False
                return True
            del self._buffer[:-HEADER_TAIL]
            if not await self._fill():
                return False


def content_length(header: bytes, limit: int) -> int | str:
    """The ``Content-Length`` of a header part (``limit`` bytes at most), or what is wrong with it."""
    lengths = []
    for line in header.split(b"\r\n"):
        name, colon, value = line.partition(b":")
        if not colon:
            return f"a header line without a colon: {_shown(line)}"
        if name.strip().lower() == b"content-length":
            lengths.append(value.strip())
    if len(lengths) != 1:
        return "no Content-Length header" if not lengths else "more than one Content-Length header"
    value = lengths[0]
    if not value.isdigit():  # bytes.isdigit: ASCII digits only
        return f"Content-Length is not a number: {_shown(value)}"
    # Compared as digits first: int() of thousands of digits is refused, and slow.
    if len(value.lstrip(b"0")) > len(str(limit)) or int(value) > limit:
        return f"Content-Length {_shown(value)} is over the limit of {limit} bytes (lsp_max_message_bytes)"
    return int(value)


def head_id(head: bytes) -> RequestId | None:
    """The ``id`` of a JSON-RPC request from the start of its body, read member by member until a
    value does not fit in ``head`` (clients such as vscode-jsonrpc write the id before params)."""
    text = head.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    at = _after_space(text, 0)
    if not text.startswith("{", at):
        return None
    at += 1
    try:
        while True:
            key, at = decoder.raw_decode(text, _after_space(text, at))
            at = _after_space(text, at)
            if not (isinstance(key, str) and text.startswith(":", at)):
                return None
            value, at = decoder.raw_decode(text, _after_space(text, at + 1))
            if key == "id":
                return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None
            at = _after_space(text, at)
            if not text.startswith(",", at):
                return None
            at += 1
    except (ValueError, RecursionError):
        return None


def _after_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _drop_blank_lines(buffer: bytearray) -> None:
    """Empty lines between messages carry nothing (some clients send them)."""
    start = 0
    while buffer.startswith(b"\r\n", start):
        start += 2
    if start:
        del buffer[:start]


def _shown(value: bytes) -> str:
    text = value.decode("utf-8", "replace")
    return repr(text if len(text) <= 40 else text[:40] + "…")


class StdinReader:
    """Chunks of a file descriptor, read by a daemon thread so ``exit`` can end the process
    while a read is blocked (pygls reads stdin in a pool thread that exit then waits for)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._asks: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[bytes]]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="lsp-stdin", daemon=True).start()

    async def read(self) -> bytes:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bytes] = loop.create_future()
        self._asks.put((loop, future))
        return await future

    def _serve(self) -> None:
        while True:
            loop, future = self._asks.get()
            try:
                chunk = os.read(self._fd, CHUNK)
            except OSError:
                chunk = b""
            try:
                loop.call_soon_threadsafe(_settle, future, chunk)
            except RuntimeError:  # the loop is closed: the server is ending
                return


def _settle(future: asyncio.Future[bytes], chunk: bytes) -> None:
    if not future.done():
        future.set_result(chunk)
