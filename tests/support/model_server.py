"""A scripted OpenAI-compatible model server on loopback, for tests.

It runs ``http.server.ThreadingHTTPServer`` on ``127.0.0.1`` (port 0) in a background thread, so
it serves both in-process async tests and a ``totem`` CLI started as a subprocess::

    with ModelServer() as srv:
        srv.enqueue(text_reply("Hello there"))
        srv.enqueue(tool_reply([("read_file", {"path": "a.py"})]))
        ...  # point the client at srv.base_url ("http://127.0.0.1:PORT/v1")
        assert srv.requests[0]["messages"][-1]["content"] == "hi"

Routes: ``POST .../chat/completions`` serves the queued replies FIFO (an empty queue answers
500 ``{"error": {"message": "no scripted reply"}}``); ``GET .../models`` serves
``{"object": "list", "data": srv.models}``.

Streams are sent with ``Transfer-Encoding: chunked`` and ``Connection: close``, one HTTP chunk
per SSE event, so ``cut_after`` closes the socket without the chunked terminator: the client
sees a real mid-stream drop. Wire format follows
https://platform.openai.com/docs/api-reference/chat/streaming.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer to a chat request.

    ``events``: SSE ``data`` payloads in order (dicts are JSON-dumped, strings sent verbatim);
    ``data: [DONE]`` is appended unless ``done`` is False. ``body``: a raw body sent instead of
    SSE (error replies, or hand-written SSE text with ``headers={"Content-Type":
    "text/event-stream"}``); its Content-Type defaults to application/json when it parses as
    JSON, else text/plain. ``cut_after``: drop the connection after that many events (no
    ``[DONE]``, no chunked terminator). ``delay``: seconds between events. ``hold``: seconds to
    wait after the last scripted event, before ``[DONE]`` (or the cut), so a test can abort or
    kill mid-stream.
    """

    status: int = 200
    headers: dict = field(default_factory=dict)
    events: list[str | dict] = field(default_factory=list)
    done: bool = True
    body: str | None = None
    cut_after: int | None = None
    delay: float = 0.0
    hold: float = 0.0


class ModelServer:
    """The loopback server; a context manager. See the module docstring."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.request_headers: list[dict] = []
        self.models: list[dict] = [{"id": "test-model", "object": "model"}]
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        # Set on shutdown so delays and holds end at once instead of stalling __exit__.
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> "ModelServer":
        handler = type("_BoundHandler", (_Handler,), {"model_server": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval, once per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="model-server", daemon=True
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

    def __enter__(self) -> "ModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- script ----------------------------------------------------------------------------

    def enqueue(self, reply: Reply) -> None:
        with self._lock:
            self._queue.append(reply)

    @property
    def pending(self) -> int:
        """Replies not yet served."""
        with self._lock:
            return len(self._queue)

    def _next_reply(self) -> Reply | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def _record(self, body: dict, headers: dict) -> None:
        with self._lock:
            self.requests.append(body)
            self.request_headers.append(headers)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked transfer encoding needs 1.1
    model_server: ModelServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    # -- routes ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": self.model_server.models})
        else:
            self._send_json(404, {"error": {"message": f"no route GET {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route POST {self.path}"}})
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", errors="replace")}
        self.model_server._record(body, dict(self.headers.items()))
        reply = self.model_server._next_reply()
        if reply is None:
            self._send_json(500, {"error": {"message": "no scripted reply"}})
        elif reply.body is not None or reply.status >= 300:
            self._send_body(reply)
        else:
            self._send_stream(reply)

    # -- writers ---------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _send_body(self, reply: Reply) -> None:
        text = reply.body if reply.body is not None else json.dumps(
            {"error": {"message": f"scripted status {reply.status}"}}
        )
        headers = {k.lower(): v for k, v in reply.headers.items()}
        if "content-type" not in headers:
            headers["content-type"] = "application/json" if _is_json(text) else "text/plain"
        if headers["content-type"].startswith("text/event-stream"):
            # Hand-written SSE: stream it chunked like the real thing.
            self._start_stream(reply.status, headers)
            self._write_chunk(text.encode())
            self._end_stream()
            return
        data = text.encode()
        self.send_response(reply.status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _send_stream(self, reply: Reply) -> None:
        headers = {k.lower(): v for k, v in reply.headers.items()}
        headers.setdefault("content-type", "text/event-stream")
        stopping = self.model_server._stopping
        try:
            self._start_stream(reply.status, headers)
            for n, event in enumerate(reply.events):
                if reply.cut_after is not None and n >= reply.cut_after:
                    break
                if n and reply.delay and stopping.wait(reply.delay):
                    return self._cut()
                payload = event if isinstance(event, str) else json.dumps(event)
                self._write_chunk(f"data: {payload}\n\n".encode())
            if reply.hold and stopping.wait(reply.hold):
                return self._cut()
            if reply.cut_after is not None:
                return self._cut()
            if reply.done:
                self._write_chunk(b"data: [DONE]\n\n")
            self._end_stream()
        except (BrokenPipeError, ConnectionResetError):
            # The client went away mid-stream (a test aborting on purpose): nothing to do.
            self.close_connection = True

    def _start_stream(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True

    def _cut(self) -> None:
        """Drop the connection now: no [DONE], no chunked terminator."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Reply builders in the real chunk format
# ---------------------------------------------------------------------------------------------


def chunk(
    delta: dict | None = None,
    *,
    model: str = "test-model",
    finish_reason: str | None = None,
    usage: tuple[int, int] | None = None,
    choices: bool = True,
) -> dict:
    """One ``chat.completion.chunk``; ``choices=False`` gives the usage-only chunk shape."""
    out: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": (
            [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}] if choices else []
        ),
    }
    if usage is not None:
        out["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        }
    return out


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


def _ending(model: str, reason: str, usage: tuple[int, int] | None) -> list[dict]:
    events = [chunk({}, model=model, finish_reason=reason)]
    if usage is not None:
        events.append(chunk(model=model, usage=usage, choices=False))
    return events


def text_reply(
    text: str,
    *,
    model: str = "test-model",
    pieces: int = 3,
    reasoning: str = "",
    usage: tuple[int, int] | None = (10, 5),
) -> Reply:
    """A plain answer: ``reasoning`` (as ``reasoning_content`` deltas) then ``text``, each split
    into ``pieces`` deltas, finish_reason "stop", then a usage-only chunk (``usage=None``: none)."""
    events: list[str | dict] = [chunk({"role": "assistant", "content": ""}, model=model)]
    events += [chunk({"reasoning_content": part}, model=model) for part in split_text(reasoning, pieces)]
    events += [chunk({"content": part}, model=model) for part in split_text(text, pieces)]
    events += _ending(model, "stop", usage)
    return Reply(events=events)


def tool_reply(
    calls: list[tuple[str, dict]],
    *,
    model: str = "test-model",
    text: str = "",
    split: int = 4,
    usage: tuple[int, int] | None = (10, 5),
) -> Reply:
    """An answer with tool calls: optional ``text`` first, then each call in turn as index n,
    id ``call_<n>`` (n from 1: ``call_1``, ``call_2``, ...), its name in the first delta and
    its JSON arguments split across ``split`` deltas; finish_reason "tool_calls", then usage."""
    events: list[str | dict] = [chunk({"role": "assistant", "content": None}, model=model)]
    events += [chunk({"content": part}, model=model) for part in split_text(text, 2)]
    for index, (name, arguments) in enumerate(calls):
        opening = {
            "index": index,
            "id": f"call_{index + 1}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [opening]}, model=model))
        for part in split_text(json.dumps(arguments), split):
            piece = {"index": index, "function": {"arguments": part}}
            events.append(chunk({"tool_calls": [piece]}, model=model))
    events += _ending(model, "tool_calls", usage)
    return Reply(events=events)


__all__ = ["ModelServer", "Reply", "chunk", "split_text", "text_reply", "tool_reply"]
