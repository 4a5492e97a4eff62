"""The HTTP harness shared by the scripted loopback servers in tests/support.

Each vendor server (``model_server``, ``anthropic_server``, ``gemini_server``,
``ollama_server``) is a thin layer over this: its routes, its error shapes and its reply
builders. What they all need, and what lives here once:

- ``LoopbackServer``: ``http.server.ThreadingHTTPServer`` on ``127.0.0.1`` (port 0) in a
  background thread, so it serves both in-process async tests and a ``totem`` CLI started as a
  subprocess; a FIFO queue of scripted replies; the requests and headers it received; a context
  manager.
- ``LoopbackHandler``: reading the JSON body, plain and JSON answers, and chunked streams
  (``Transfer-Encoding: chunked``, ``Connection: close``) with delay, hold and a cut that drops
  the socket without the chunked terminator, so a client sees a real mid-stream drop.
- ``sse_data`` and ``split_text``: an SSE event's bytes, and the splitting every reply builder
  uses to cut text into streamed deltas.

A vendor's ``Reply`` dataclass stays in its own module (its fields are the vendor's); the
harness only reads ``status``, ``headers``, ``body`` and ``cut_after`` from it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self


class LoopbackServer:
    """A scripted server on loopback; subclasses set ``handler`` (and usually ``url_path``)."""

    handler: ClassVar[type[LoopbackHandler]]
    thread_name: ClassVar[str] = "loopback-server"
    url_path: ClassVar[str] = ""  # appended to ``base_url``: "/v1", "/v1beta", ...

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.request_headers: list[dict] = []
        self.received_at: list[float] = []  # time.monotonic() of each request, in ``requests``' order
        self._queue: deque[Any] = deque()
        self._lock = threading.Lock()
        # Set on shutdown so delays and holds end at once instead of stalling __exit__.
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        # A handler class bound to this server: the stdlib builds one handler per request and
        # gives it no other way back to the server's script and records.
        bound = type(f"_Bound{self.handler.__name__}", (self.handler,), {"server_state": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), bound)
        self._httpd.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval, once per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.url_path}"

    # -- script ----------------------------------------------------------------------------

    def enqueue(self, *replies: Any) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Replies not yet served."""
        with self._lock:
            return len(self._queue)

    def _next_reply(self) -> Any | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def _record(self, body: Any, headers: dict) -> None:
        with self._lock:
            self.requests.append(body)
            self.request_headers.append(headers)
            self.received_at.append(time.monotonic())


class LoopbackHandler(BaseHTTPRequestHandler):
    """Request handler base: the writers every vendor route uses.

    Subclasses set ``json_content_type`` and implement ``no_reply`` / ``status_error`` (the
    vendor's error bodies) and ``send_reply_stream``; ``serve_next_reply`` does the rest.
    """

    protocol_version = "HTTP/1.1"  # chunked transfer encoding needs 1.1
    server_state: Any  # the LoopbackServer, set on the bound subclass
    json_content_type: ClassVar[str] = "application/json"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    # -- reading ---------------------------------------------------------------------------

    def read_json_body(self) -> Any:
        """The request body parsed as JSON (``null`` when empty); ``{"_unparsed": text}`` when
        it is not JSON, so a test can still see what was sent."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return {"_unparsed": raw.decode("utf-8", errors="replace")}

    # -- scripted replies ------------------------------------------------------------------

    def serve_next_reply(self) -> None:
        """The next queued reply: a plain body (``body`` set or an error ``status``) or a stream;
        an empty queue answers 500 with the vendor's ``no_reply`` body."""
        reply = self.server_state._next_reply()
        if reply is None:
            self.send_json(500, self.no_reply())
        elif reply.body is not None or reply.status >= 300:
            self.send_reply_body(reply)
        else:
            self.send_reply_stream(reply)

    def no_reply(self) -> Any:
        return {"error": {"message": "no scripted reply"}}

    def status_error(self, status: int) -> Any:
        """The error body sent for a scripted ``status`` without a ``body``."""
        return {"error": {"message": f"scripted status {status}"}}

    def body_content_type(self, text: str) -> str:
        return self.json_content_type

    def send_reply_body(self, reply: Any) -> None:
        text = reply.body if reply.body is not None else json.dumps(self.status_error(reply.status))
        headers = with_defaults(reply.headers, {"content-type": self.body_content_type(text)})
        if headers["content-type"].startswith("text/event-stream"):
            # Hand-written SSE: stream it chunked like the real thing.
            self.stream(reply.status, headers, [text.encode()])
        else:
            self.send_bytes(reply.status, headers, text.encode())

    def send_reply_stream(self, reply: Any) -> None:
        raise NotImplementedError

    # -- writers ---------------------------------------------------------------------------

    def send_json(self, status: int, payload: Any) -> None:
        self.send_bytes(status, {"Content-Type": self.json_content_type}, json.dumps(payload).encode())

    def send_bytes(self, status: int, headers: dict[str, str], data: bytes) -> None:
        """A whole body with its length; the connection closes after it."""
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def stream(
        self,
        status: int,
        headers: dict[str, str],
        chunks: Iterable[bytes],
        *,
        delay: float = 0.0,
        hold: float = 0.0,
        cut: bool = False,
        tail: bytes | None = None,
    ) -> None:
        """Send ``chunks`` one HTTP chunk each: ``delay`` seconds between them, then ``hold``
        seconds, then either drop the connection (``cut``) or send ``tail`` (an end marker such
        as ``data: [DONE]``) and the chunked terminator. A delay or hold ends early, with a
        cut, when the server stops."""
        stopping = self.server_state._stopping
        try:
            self.start_stream(status, headers)
            for n, data in enumerate(chunks):
                if n and delay and stopping.wait(delay):
                    return self.cut()
                self.write_chunk(data)
            if hold and stopping.wait(hold):
                return self.cut()
            if cut:
                return self.cut()
            if tail is not None:
                self.write_chunk(tail)
            self.end_stream()
        except OSError:
            # The client went away mid-stream (a test aborting on purpose): nothing to do.
            self.close_connection = True

    def start_stream(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True

    def cut(self) -> None:
        """Drop the connection now: no end marker, no chunked terminator."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def with_defaults(headers: dict[str, str], defaults: dict[str, str]) -> dict[str, str]:
    """A reply's headers, lower-cased so a scripted header replaces the default of that name."""
    out = {k.lower(): v for k, v in headers.items()}
    for key, value in defaults.items():
        out.setdefault(key, value)
    return out


def sse_data(event: str | dict, name: str | None = None) -> bytes:
    """One SSE event: ``data: <payload>`` (a dict JSON-dumped, a string verbatim), after an
    ``event: <name>`` line when ``name`` is given."""
    payload = event if isinstance(event, str) else json.dumps(event)
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {payload}\n\n".encode()


def split_text(text: str, pieces: int) -> list[str]:
    """``text`` cut into at most ``pieces`` non-empty consecutive parts (one part when short)."""
    if not text:
        return []
    pieces = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), pieces)
    parts, start = [], 0
    for n in range(pieces):
        end = start + size + (1 if n < extra else 0)
        parts.append(text[start:end])
        start = end
    return parts


__all__ = ["LoopbackHandler", "LoopbackServer", "split_text", "sse_data", "with_defaults"]
