"""A scripted Gemini API server on loopback, for tests (shapes from https://ai.google.dev/api).

The HTTP harness (``ThreadingHTTPServer`` on ``127.0.0.1``, port 0, in a background thread) is
``tests/support/loopback.py``::

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
  answer to a bad key: 400 ``API key not valid``. An empty queue answers 500. Images are checked
  as inline data is documented (https://ai.google.dev/gemini-api/docs/image-understanding): an
  ``inlineData`` part only in a ``user`` content, with a ``mimeType`` of PNG, JPEG, GIF or WebP
  and base64 ``data`` of that type; anything else answers 400 ``INVALID_ARGUMENT``.
- ``GET /v1beta/models?pageSize=N&pageToken=T``: pages over ``models`` (``pageSize`` default
  50, capped by ``page_cap``), ``nextPageToken`` while more remain; queries are recorded in
  ``model_queries``.

Streams are sent chunked with ``Connection: close``; ``cut_after`` drops the socket without the
chunked terminator (a real mid-stream drop).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.support.images import image_problem
from tests.support.loopback import (
    LoopbackHandler,
    LoopbackServer,
    split_text,
    sse_data,
    with_defaults,
)

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


class _Handler(LoopbackHandler):
    server_state: GeminiServer
    json_content_type = "application/json; charset=UTF-8"

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path.rstrip("/") != "/v1beta/models":
            return self.send_json(404, _error(404, f"no route GET {url.path}", "NOT_FOUND"))
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
        self.send_json(200, payload)

    def do_POST(self) -> None:
        body = self.read_json_body()
        url = urlsplit(self.path)
        path = unquote(url.path)
        if not (path.startswith("/v1beta/models/") and path.endswith(":streamGenerateContent")):
            return self.send_json(404, _error(404, f"no route POST {path}", "NOT_FOUND"))
        state = self.server_state
        with state._lock:
            state.paths.append(path)
            state.queries.append(parse_qs(url.query))
        state._record(body, dict(self.headers.items()))
        problem = check_images(body)
        if problem:
            return self.send_json(400, _error(400, problem, "INVALID_ARGUMENT"))
        if self._key_ok():
            self.serve_next_reply()

    # -- the API's shapes ------------------------------------------------------------------

    def _key_ok(self) -> bool:
        expected = self.server_state.api_key
        if expected is None or self.headers.get("x-goog-api-key") == expected:
            return True
        self.send_json(
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

    def no_reply(self) -> Any:
        return _error(500, "no scripted reply", "INTERNAL")

    def status_error(self, status: int) -> Any:
        return _error(status, f"scripted status {status}", "UNKNOWN")

    def send_reply_stream(self, reply: Reply) -> None:
        if parse_qs(urlsplit(self.path).query).get("alt") != ["sse"]:
            # Without alt=sse Gemini streams one JSON array of responses.
            return self.send_json(200, [e if isinstance(e, dict) else json.loads(e) for e in reply.events])
        headers = with_defaults(reply.headers, {"content-type": "text/event-stream"})
        chunks = [sse_data(event) for event in reply.events[: reply.cut_after]]
        # No end marker: Gemini's stream just ends.
        self.stream(reply.status, headers, chunks, cut=reply.cut_after is not None)


class GeminiServer(LoopbackServer):
    handler = _Handler
    thread_name = "gemini-server"
    url_path = "/v1beta"

    def __init__(self, *, api_key: str | None = None) -> None:
        super().__init__()
        self.api_key = api_key
        self.paths: list[str] = []
        self.queries: list[dict[str, list[str]]] = []
        self.model_queries: list[dict[str, list[str]]] = []
        self.model_headers: list[dict] = []
        self.models: list[dict] = [model_entry("gemini-test")]
        self.page_cap = 1000


def check_images(body: Any) -> str | None:
    """Gemini's answer to the request's ``inlineData`` parts (module docstring), or None."""
    contents = body.get("contents") if isinstance(body, dict) else None
    for n, content in enumerate(contents or []):
        for m, part in enumerate((content or {}).get("parts") or []):
            blob = part.get("inlineData") if isinstance(part, dict) else None
            if blob is None:
                continue
            where = f"contents[{n}].parts[{m}].inline_data"
            if content.get("role") != "user":
                return f"Invalid value at '{where}': inline data is only accepted in user content here"
            problem = image_problem(blob.get("data"), blob.get("mimeType")) if isinstance(blob, dict) else "not an object"
            if problem:
                return f"Invalid value at '{where}': {problem}"
    return None


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
    events = [response([{"text": p, "thought": True}]) for p in split_text(thoughts, pieces)]
    events += [response([{"text": p}], usage=usage) for p in split_text(text, pieces)]
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


__all__ = [
    "GeminiServer",
    "Reply",
    "call_reply",
    "model_entry",
    "response",
    "streamed_call_events",
    "text_reply",
]
