"""A scripted Anthropic Messages API server on loopback, for tests.

Written from the vendor documentation (https://docs.anthropic.com/en/api/messages,
https://platform.claude.com/docs/build-with-claude/streaming,
https://docs.claude.com/en/docs/build-with-claude/extended-thinking,
https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls,
https://docs.anthropic.com/en/api/models-list). The HTTP harness (a ``ThreadingHTTPServer`` on
``127.0.0.1`` in a background thread) is ``tests/support/loopback.py``::

    with AnthropicServer(api_key="sk-ant-test") as srv:
        srv.enqueue(message_reply(thinking("Let me look."), tool_use("toolu_1", "read", {"p": 1})))
        ...  # point the provider at srv.base_url ("http://127.0.0.1:PORT")
        assert srv.requests[0]["max_tokens"] == 8192

Routes:

- ``POST /v1/messages``: checks the request the way the API does (below); a bad request answers
  400 ``invalid_request_error`` (or 401 ``authentication_error``) without using a scripted reply.
  Otherwise the queued replies are served FIFO as SSE, every event as ``event: <type>`` +
  ``data: <json>``; an empty queue answers 500 ``api_error`` "no scripted reply".
- ``GET /v1/models``: ``srv.models`` in pages of ``min(limit, srv.page_size)``, after the id in
  ``after_id``, with ``has_more`` / ``first_id`` / ``last_id``. Query strings are kept in
  ``srv.model_queries``.

Checks on ``POST /v1/messages`` (each one a documented rule of the API):

- ``x-api-key`` present, and equal to ``api_key`` when the server was given one (401);
- ``anthropic-version`` header present; ``model``, ``messages`` and a positive ``max_tokens``;
- text blocks non-empty;
- image blocks (https://platform.claude.com/docs/en/build-with-claude/vision) only in user
  messages, at the top level or inside a ``tool_result``'s ``content`` list; ``source`` of type
  ``base64`` with a ``media_type`` of PNG, JPEG, GIF or WebP that the bytes are ("Image does not
  match the provided media type"); a ``tool_result``'s content list holds only text and images;
- every ``tool_use`` of an assistant message answered by a ``tool_result`` in the next message,
  which is a user message whose ``tool_result`` blocks come before anything else;
- with ``thinking``: ``budget_tokens`` >= 1024 and < ``max_tokens``, no ``temperature``, the last
  assistant message that used tools starts with a thinking block when the request continues its
  tool-use turn, and every ``thinking`` block sent back carries the signature this server issued
  for exactly that text (signatures are an HMAC of the thinking text, so any change is caught).

Requests (bodies and headers) are recorded even when refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.images import image_problem
from tests.support.loopback import (
    LoopbackHandler,
    LoopbackServer,
    split_text,
    sse_data,
    with_defaults,
)

_SIGNING_KEY = b"anthropic-server-test-signing-key"


def sign(thinking_text: str) -> str:
    """The signature this server issues for a thinking text."""
    digest = hmac.new(_SIGNING_KEY, thinking_text.encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


@dataclass
class Reply:
    """One scripted answer to a ``POST /v1/messages``.

    ``events``: stream events in order; a dict is sent as ``event: <its type>`` + ``data:
    <json>``, a string is sent verbatim as the data (with an ``event:`` line named after its
    JSON ``type`` when it has one). ``body``: a raw body sent instead (error answers); its
    Content-Type defaults to application/json. ``cut_after``: drop the connection after that
    many events. ``hold``: seconds to wait after the last event before ending the stream.
    """

    status: int = 200
    headers: dict = field(default_factory=dict)
    events: list[str | dict] = field(default_factory=list)
    body: str | None = None
    cut_after: int | None = None
    hold: float = 0.0


def _blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _check_messages(messages: list) -> str | None:
    for n, message in enumerate(messages):
        blocks = _blocks(message.get("content"))
        for m, block in enumerate(blocks):
            if block.get("type") == "text" and not block.get("text"):
                return f"messages.{n}.content.{m}: text content blocks must be non-empty"
            problem = _check_images(message.get("role"), block, f"messages.{n}.content.{m}")
            if problem:
                return problem
        if message.get("role") == "user":
            kinds = [b.get("type") for b in blocks]
            if "tool_result" in kinds:
                first_other = next((i for i, k in enumerate(kinds) if k != "tool_result"), len(kinds))
                if "tool_result" in kinds[first_other:]:
                    return f"messages.{n}: tool_result blocks must come before any other content"
        if message.get("role") != "assistant":
            continue
        ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        if not ids:
            continue
        following = messages[n + 1] if n + 1 < len(messages) else None
        if following is None:
            continue  # a prefilled assistant turn: nothing to answer yet
        answered = {
            b.get("tool_use_id") for b in _blocks(following.get("content")) if b.get("type") == "tool_result"
        }
        missing = [i for i in ids if i not in answered]
        if following.get("role") != "user" or missing:
            return (
                f"messages.{n + 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(str(i) for i in missing or ids)}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
    return None


def _check_images(role: Any, block: dict, where: str) -> str | None:
    """The API's answer to a block's images (module docstring), or None."""
    kind = block.get("type")
    if kind == "tool_result" and isinstance(block.get("content"), list):
        for k, inner in enumerate(block["content"]):
            inner_kind = inner.get("type") if isinstance(inner, dict) else None
            if inner_kind not in ("text", "image"):
                return f"{where}.content.{k}.type: Input tag {inner_kind!r} found is not one of 'text', 'image'"
            if inner_kind == "image":
                problem = _image_source(inner)
                if problem:
                    return f"{where}.content.{k}.source: {problem}"
        return None
    if kind != "image":
        return None
    if role != "user":
        return f"{where}: image content blocks are only allowed in user messages"
    problem = _image_source(block)
    return f"{where}.source: {problem}" if problem else None


def _image_source(block: dict) -> str | None:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        return "source.type: expected 'base64'"
    return image_problem(source.get("data"), source.get("media_type"))


def _check_thinking(body: dict, thinking: Any) -> str | None:
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return "thinking: type must be \"enabled\""
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024:
        return "thinking.budget_tokens: Input should be greater than or equal to 1024"
    if budget >= body["max_tokens"]:
        return "`max_tokens` must be greater than `thinking.budget_tokens`"
    if "temperature" in body:
        return "`temperature` may only be set to 1 when thinking is enabled"
    messages = body["messages"]
    for n, message in enumerate(messages):
        for m, block in enumerate(_blocks(message.get("content"))):
            if block.get("type") == "thinking" and block.get("signature") != sign(block.get("thinking", "")):
                return f"messages.{n}.content.{m}: Invalid `signature` in `thinking` block"
    # The open tool-use turn: the last assistant message, when every message after it is a user
    # message of tool results, must start with a thinking block.
    last = max((n for n, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    if last is not None and last == len(messages) - 2:
        blocks = _blocks(messages[last].get("content"))
        if any(b.get("type") == "tool_use" for b in blocks):
            after = _blocks(messages[-1].get("content"))
            if after and after[0].get("type") == "tool_result":
                first = blocks[0].get("type") if blocks else None
                if first not in ("thinking", "redacted_thinking"):
                    return (
                        f"messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                        f"found `{first}`. When `thinking` is enabled, a final `assistant` message must start "
                        "with a thinking block."
                    )
    return None


class _Handler(LoopbackHandler):
    server_state: AnthropicServer

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path.rstrip("/") != "/v1/models":
            self._send_error(404, "not_found_error", f"no route GET {url.path}")
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        state = self.server_state
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        with state._lock:
            state.model_queries.append(query)
            state.request_headers.append(headers)
        if not headers.get("x-api-key") or (state.api_key is not None and headers["x-api-key"] != state.api_key):
            self._send_error(401, "authentication_error", "invalid x-api-key")
            return
        limit = min(int(query.get("limit", 20)), state.page_size)
        ids = [m["id"] for m in state.models]
        start = ids.index(query["after_id"]) + 1 if query.get("after_id") in ids else 0
        page = state.models[start : start + limit]
        self.send_json(
            200,
            {
                "data": page,
                "has_more": start + limit < len(state.models),
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
            },
        )

    def do_POST(self) -> None:
        body = self.read_json_body()
        if urlsplit(self.path).path.rstrip("/") != "/v1/messages":
            self._send_error(404, "not_found_error", f"no route POST {self.path}")
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        state = self.server_state
        state._record(body, headers)
        refused = state.check(body, headers)
        if refused:
            self._send_error(*refused)
            return
        self.serve_next_reply()

    # -- the API's shapes --------------------------------------------------------------------

    def _send_error(self, status: int, kind: str, message: str) -> None:
        self.send_json(status, _error_body(kind, message))

    def no_reply(self) -> Any:
        return _error_body("api_error", "no scripted reply")

    def status_error(self, status: int) -> Any:
        return _error_body("api_error", f"scripted status {status}")

    def send_reply_stream(self, reply: Reply) -> None:
        headers = with_defaults(
            reply.headers, {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
        )
        chunks = [_sse(event) for event in reply.events[: reply.cut_after]]
        self.stream(reply.status, headers, chunks, hold=reply.hold, cut=reply.cut_after is not None)


def _error_body(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _sse(event: str | dict) -> bytes:
    """An event named after its JSON ``type``, as the API names every event."""
    if isinstance(event, dict):
        return sse_data(event, event.get("type"))
    try:
        parsed = json.loads(event)
    except ValueError:
        parsed = None
    return sse_data(event, parsed.get("type") if isinstance(parsed, dict) else None)


class AnthropicServer(LoopbackServer):
    """The loopback server; a context manager. See the module docstring."""

    handler = _Handler
    thread_name = "anthropic-server"

    def __init__(self, api_key: str | None = None) -> None:
        super().__init__()
        self.api_key = api_key
        self.model_queries: list[dict] = []
        self.models: list[dict] = [
            {"id": "claude-test-1", "type": "model", "display_name": "Claude Test", "created_at": "2025-01-01T00:00:00Z"}
        ]
        self.page_size = 1000

    # -- the API's checks --------------------------------------------------------------------

    def check(self, body: Any, headers: dict[str, str]) -> tuple[int, str, str] | None:
        """(status, error type, message) for a request the API would refuse, else None."""
        key = headers.get("x-api-key")
        if not key or (self.api_key is not None and key != self.api_key):
            return 401, "authentication_error", "invalid x-api-key"
        if not headers.get("anthropic-version"):
            return 400, "invalid_request_error", "anthropic-version: header is required"
        if not isinstance(body, dict):
            return 400, "invalid_request_error", "request body must be a JSON object"
        for name in ("model", "messages", "max_tokens"):
            if name not in body:
                return 400, "invalid_request_error", f"{name}: Field required"
        if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
            return 400, "invalid_request_error", "max_tokens: must be a positive integer"
        messages = body["messages"]
        if not isinstance(messages, list) or not messages:
            return 400, "invalid_request_error", "messages: at least one message is required"
        problem = _check_messages(messages)
        if problem:
            return 400, "invalid_request_error", problem
        thinking = body.get("thinking")
        if thinking is not None:
            problem = _check_thinking(body, thinking)
            if problem:
                return 400, "invalid_request_error", problem
        return None


# ---------------------------------------------------------------------------------------------
# Reply builders in the documented event format
# ---------------------------------------------------------------------------------------------


def text(value: str) -> dict:
    """A text block for ``message_reply``."""
    return {"type": "text", "text": value}


def thinking(value: str, signature: str | None = None) -> dict:
    """A thinking block; signed by this server unless ``signature`` is given."""
    return {"type": "thinking", "thinking": value, "signature": sign(value) if signature is None else signature}


def redacted_thinking(data: str) -> dict:
    return {"type": "redacted_thinking", "data": data}


def tool_use(id: str, name: str, input: dict | str) -> dict:  # noqa: A002 - the API's field names
    """A tool_use block; ``input`` as a dict (JSON-dumped) or the exact JSON text to stream."""
    return {"type": "tool_use", "id": id, "name": name, "input": input}


# The shared splitter, under the name this module has always exported.
split = split_text


def message_start(model: str = "claude-test-1", input_tokens: int = 10) -> dict:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    }


def block_events(index: int, block: dict, pieces: int = 3) -> list[dict]:
    """content_block_start, its deltas and content_block_stop for one block, as the API streams
    them (thinking: thinking_delta pieces then one signature_delta; tool_use: an empty
    input_json_delta first, then the JSON text in pieces)."""
    kind = block["type"]
    delta: list[dict] = []
    if kind == "text":
        start = {"type": "text", "text": ""}
        delta = [{"type": "text_delta", "text": p} for p in split(block["text"], pieces)]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        delta = [{"type": "thinking_delta", "thinking": p} for p in split(block["thinking"], pieces)]
        delta.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "redacted_thinking":
        start = dict(block)
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
        raw = "" if raw == "{}" else raw
        delta = [{"type": "input_json_delta", "partial_json": p} for p in ["", *split(raw, pieces)]]
    else:
        start = dict(block)
    events = [{"type": "content_block_start", "index": index, "content_block": start}]
    events += [{"type": "content_block_delta", "index": index, "delta": d} for d in delta]
    events.append({"type": "content_block_stop", "index": index})
    return events


def message_reply(
    *blocks: dict,
    stop_reason: str | None = None,
    model: str = "claude-test-1",
    usage: tuple[int, int] = (10, 5),
    pieces: int = 3,
) -> Reply:
    """A whole answer: message_start, a ping, every block, message_delta, message_stop.
    ``stop_reason`` defaults to "tool_use" when a block is a tool_use, else "end_turn"."""
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    events: list[str | dict] = [message_start(model, usage[0]), {"type": "ping"}]
    for index, block in enumerate(blocks):
        events += block_events(index, block, pieces)
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": usage[1]},
        }
    )
    events.append({"type": "message_stop"})
    return Reply(events=events)


def error_event(kind: str, message: str) -> dict:
    """The ``error`` event the API sends inside a 200 stream."""
    return _error_body(kind, message)


def error_reply(status: int, kind: str, message: str, headers: dict | None = None) -> Reply:
    """A non-2xx answer with the API's error body."""
    body = json.dumps(_error_body(kind, message))
    return Reply(status=status, headers=dict(headers or {}), body=body)


__all__ = [
    "AnthropicServer",
    "Reply",
    "block_events",
    "error_event",
    "error_reply",
    "message_reply",
    "message_start",
    "redacted_thinking",
    "sign",
    "split",
    "text",
    "thinking",
    "tool_use",
]
