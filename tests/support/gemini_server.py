"""A scripted Gemini API server on loopback, for tests (shapes from https://ai.google.dev/api).

``ThreadingHTTPServer`` on ``127.0.0.1`` (port 0) in a background thread::

    with GeminiServer() as srv:
        srv.enqueue(text_reply("Hello"))
        provider = GeminiProvider("g", srv.base_url, "key")   # base_url ends in /v1beta
        ...
        assert srv.requests[0]["contents"][-1]["parts"][0]["text"] == "hi"

Routes:

- ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``: records the JSON body
  (``requests``), headers (``request_headers``), path (``paths``) and query (``queries``), then
  serves the next queued ``Reply`` as SSE (``data: <json>\\n\\n`` per event, no end marker: the
  stream just ends, as Gemini's does). Without ``alt=sse`` it answers a JSON array, as Gemini
  does. With ``api_key`` set, a request whose ``x-goog-api-key`` differs gets Gemini's own
  answer to a bad key: 400 ``API key not valid``. An empty queue answers 500.
- ``GET /v1beta/models?pageSize=N&pageToken=T``: pages over ``models`` (``pageSize`` default
  50, capped by ``page_cap``), ``nextPageToken`` while more remain; queries are recorded in
  ``model_queries``.

Streams are sent chunked with ``Connection: close``; ``cut_after`` drops the socket without the
chunked terminator (a real mid-stream drop).
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

MODEL_VERSION = "gemini-test-001"


@dataclass
class Reply:
    """One scripted answer. ``events``: SSE payloads (dicts JSON-dumped, strings verbatim).
    ``body`` (or ``status`` >= 300): a plain body instead of a stream. ``cut_after``: drop the
    connection after that many events."""

    status: int = 200
    headers: dict = field(default_factory=dict)
    events: list[str | dict] = field(default_factory=list)
    body: str | None = None
    cut_after: int | None = None


class GeminiServer:
    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.requests: list[dict] = []
        self.request_headers: list[dict] = []
        self.paths: list[str] = []
        self.queries: list[dict[str, list[str]]] = []
        self.model_queries: list[dict[str, list[str]]] = []
        self.model_headers: list[dict] = []
        self.models: list[dict] = [model_entry("gemini-test")]
        self.page_cap = 1000
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> "GeminiServer":
        handler = type("_BoundGeminiHandler", (_Handler,), {"server_state": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="gemini-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "GeminiServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1beta"

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next_reply(self) -> Reply | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_state: GeminiServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path.rstrip("/") != "/v1beta/models":
            return self._json(404, _error(404, f"no route GET {url.path}", "NOT_FOUND"))
        state = self.server_state
        query = parse_qs(url.query)
        with state._lock:
            state.model_queries.append(query)
            state.model_headers.append(dict(self.headers.items()))
        if not self._key_ok():
            return
        size = min(int(query.get("pageSize", ["50"])[0]), state.page_cap)
        start = int(query.get("pageToken", ["0"])[0])
        page = state.models[start : start + size]
        payload: dict[str, Any] = {"models": page}
        if start + size < len(state.models):
            payload["nextPageToken"] = str(start + size)
        self._json(200, payload)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        path = unquote(url.path)
        if not (path.startswith("/v1beta/models/") and path.endswith(":streamGenerateContent")):
            return self._json(404, _error(404, f"no route POST {path}", "NOT_FOUND"))
        state = self.server_state
        query = parse_qs(url.query)
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", errors="replace")}
        with state._lock:
            state.requests.append(body)
            state.request_headers.append(dict(self.headers.items()))
            state.paths.append(path)
            state.queries.append(query)
        if not self._key_ok():
            return
        reply = state._next_reply()
        if reply is None:
            return self._json(500, _error(500, "no scripted reply", "INTERNAL"))
        if reply.body is not None or reply.status >= 300:
            return self._plain(reply)
        if query.get("alt") != ["sse"]:
            # Without alt=sse Gemini streams one JSON array of responses.
            events = [e if isinstance(e, dict) else json.loads(e) for e in reply.events]
            return self._json(200, events)
        self._stream(reply)

    # -- helpers ---------------------------------------------------------------------------

    def _key_ok(self) -> bool:
        expected = self.server_state.api_key
        if expected is None or self.headers.get("x-goog-api-key") == expected:
            return True
        self._json(
            400,
            _error(
                400,
                "API key not valid. Please pass a valid API key.",
                "INVALID_ARGUMENT",
                details=[
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "API_KEY_INVALID",
                        "domain": "googleapis.com",
                    }
                ],
            ),
        )
        return False

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _plain(self, reply: Reply) -> None:
        text = reply.body if reply.body is not None else json.dumps(
            _error(reply.status, f"scripted status {reply.status}", "UNKNOWN")
        )
        data = text.encode()
        self.send_response(reply.status)
        headers = {k.lower(): v for k, v in reply.headers.items()}
        headers.setdefault("content-type", "application/json; charset=UTF-8")
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _stream(self, reply: Reply) -> None:
        try:
            self.send_response(reply.status)
            headers = {k.lower(): v for k, v in reply.headers.items()}
            headers.setdefault("content-type", "text/event-stream")
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            for n, event in enumerate(reply.events):
                if reply.cut_after is not None and n >= reply.cut_after:
                    break
                payload = event if isinstance(event, str) else json.dumps(event)
                self._chunk(f"data: {payload}\n\n".encode())
            if reply.cut_after is not None:
                self.close_connection = True
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def _error(code: int, message: str, status: str, details: list | None = None) -> dict:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return {"error": error}


# ---------------------------------------------------------------------------------------------
# Builders in the documented shapes
# ---------------------------------------------------------------------------------------------


def model_entry(
    model_id: str,
    *,
    input_limit: int = 1_048_576,
    thinking: bool | None = None,
    methods: tuple[str, ...] = ("generateContent", "countTokens"),
) -> dict:
    """One ``Model`` as ``models.list`` returns it."""
    entry: dict[str, Any] = {
        "name": f"models/{model_id}",
        "version": "001",
        "displayName": model_id,
        "inputTokenLimit": input_limit,
        "outputTokenLimit": 65_536,
        "supportedGenerationMethods": list(methods),
    }
    if thinking is not None:
        entry["thinking"] = thinking
    return entry


def response(
    parts: list[dict] | None = None,
    *,
    finish: str | None = None,
    usage: tuple[int, int, int] | None = None,
    model: str = MODEL_VERSION,
    response_id: str = "resp-1",
) -> dict:
    """One ``GenerateContentResponse``; ``usage`` is (prompt, candidates, thoughts)."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts or []}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": model, "responseId": response_id}
    if usage is not None:
        prompt, candidates, thoughts = usage
        out["usageMetadata"] = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "thoughtsTokenCount": thoughts,
            "totalTokenCount": prompt + candidates + thoughts,
        }
    return out


def text_reply(
    text: str,
    *,
    pieces: int = 3,
    thoughts: str = "",
    signature: str | None = None,
    usage: tuple[int, int, int] = (10, 5, 0),
    finish: str = "STOP",
) -> Reply:
    """Thought parts (``thought: true``) then text, each split in ``pieces``; the signature (if
    any) on a trailing empty text part together with the finishReason, as Gemini 3 sends it."""
    events = [response([{"text": p, "thought": True}]) for p in _split(thoughts, pieces)]
    events += [response([{"text": p}], usage=usage) for p in _split(text, pieces)]
    last: dict[str, Any] = {"text": ""}
    if signature:
        last["thoughtSignature"] = signature
    events.append(response([last], finish=finish, usage=usage))
    return Reply(events=events)


def call_reply(
    calls: list[tuple[str, dict, str | None]],
    *,
    text: str = "",
    usage: tuple[int, int, int] = (20, 8, 30),
    ids: list[str] | None = None,
) -> Reply:
    """Optional text, then one ``functionCall`` part per (name, args, signature) in a single
    response (parallel calls), then an empty text part with finishReason STOP."""
    parts: list[dict] = []
    for n, (name, args, signature) in enumerate(calls):
        fc: dict[str, Any] = {"name": name, "args": args}
        if ids:
            fc["id"] = ids[n]
        part: dict[str, Any] = {"functionCall": fc}
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    events = [response([{"text": text}])] if text else []
    events.append(response(parts, usage=usage))
    events.append(response([{"text": ""}], finish="STOP", usage=usage))
    return Reply(events=events)


def streamed_call_events(name: str, partials: list[dict], signature: str | None = None) -> list[dict]:
    """One call streamed Gemini-3 style: ``{name, willContinue}``, one response per partial
    argument, then the closing empty ``functionCall``."""
    opening: dict[str, Any] = {"functionCall": {"name": name, "willContinue": True}}
    if signature:
        opening["thoughtSignature"] = signature
    events = [response([opening])]
    events += [
        response([{"functionCall": {"partialArgs": [p], "willContinue": True}}]) for p in partials
    ]
    events.append(response([{"functionCall": {}}]))
    return events


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    pieces = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), pieces)
    out, start = [], 0
    for n in range(pieces):
        end = start + size + (1 if n < extra else 0)
        out.append(text[start:end])
        start = end
    return out


__all__ = [
    "GeminiServer",
    "Reply",
    "call_reply",
    "model_entry",
    "response",
    "streamed_call_events",
    "text_reply",
]
