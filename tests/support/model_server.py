"""A scripted OpenAI-compatible model server on loopback, for tests.

The harness (a ``ThreadingHTTPServer`` on ``127.0.0.1``, port 0, in a background thread, so it
serves both in-process async tests and a ``totem`` CLI started as a subprocess) is
``tests/support/loopback.py``; this module holds the OpenAI routes and reply builders::

    with ModelServer() as srv:
        srv.enqueue(text_reply("Hello there"))
        srv.enqueue(tool_reply([("read_file", {"path": "a.py"})]))
        ...  # point the client at srv.base_url ("http://127.0.0.1:PORT/v1")
        assert srv.requests[0]["messages"][-1]["content"] == "hi"

Routes: ``POST .../chat/completions`` serves the queued replies FIFO (an empty queue answers
500 ``{"error": {"message": "no scripted reply"}}``); ``GET .../models`` serves
``{"object": "list", "data": srv.models}``.

Images are checked as the API checks them (https://platform.openai.com/docs/guides/images-vision):
``image_url`` content parts only in user messages (any other role answers 400 "Image URLs are only
allowed for messages with role 'user'"), each a ``data:<mime>;base64,`` URL of a PNG, JPEG, GIF or
WebP whose bytes are that type (else 400 "Invalid image data"); content parts of a known type.

Streams are sent with ``Transfer-Encoding: chunked`` and ``Connection: close``, one HTTP chunk
per SSE event, so ``cut_after`` closes the socket without the chunked terminator: the client
sees a real mid-stream drop. Wire format follows
https://platform.openai.com/docs/api-reference/chat/streaming.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from tests.support.images import image_problem
from tests.support.loopback import (
    LoopbackHandler,
    LoopbackServer,
    split_text,
    sse_data,
    with_defaults,
)


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


class _Handler(LoopbackHandler):
    server_state: ModelServer

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self.send_json(200, {"object": "list", "data": self.server_state.models})
        else:
            self.send_json(404, {"error": {"message": f"no route GET {self.path}"}})

    def do_POST(self) -> None:
        body = self.read_json_body()
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_json(404, {"error": {"message": f"no route POST {self.path}"}})
            return
        self.server_state._record(body, dict(self.headers.items()))
        problem = check_images(body)
        if problem:
            self.send_json(400, {"error": {"message": problem, "type": "invalid_request_error", "code": None}})
            return
        window = self.server_state.context_window
        if window is not None and request_tokens(body) > window:
            # What an OpenAI-compatible server answers to a request over the model's window.
            message = f"This model's maximum context length is {window} tokens. However, your messages resulted in {request_tokens(body)} tokens."
            self.send_json(400, {"error": {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}})
            return
        self.serve_next_reply()

    def body_content_type(self, text: str) -> str:
        return "application/json" if _is_json(text) else "text/plain"

    def send_reply_stream(self, reply: Reply) -> None:
        headers = with_defaults(reply.headers, {"content-type": "text/event-stream", "cache-control": "no-cache"})
        self.stream(
            reply.status,
            headers,
            [sse_data(event) for event in reply.events[: reply.cut_after]],
            delay=reply.delay,
            hold=reply.hold,
            cut=reply.cut_after is not None,
            tail=b"data: [DONE]\n\n" if reply.done else None,
        )


class ModelServer(LoopbackServer):
    """The loopback server; a context manager. See the module docstring."""

    handler = _Handler
    thread_name = "model-server"
    url_path = "/v1"

    def __init__(self) -> None:
        super().__init__()
        self.models: list[dict] = [{"id": "test-model", "object": "model"}]
        self.context_window: int | None = None  # when set, larger requests get the overflow error


_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)


def check_images(body: dict) -> str | None:
    """What the API would answer to the request's content parts (module docstring), or None."""
    for n, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for m, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in ("text", "image_url"):
                return f"Invalid value: {kind!r}. Supported values are: 'text' and 'image_url'. (messages[{n}].content[{m}].type)"
            if kind != "image_url":
                continue
            if message.get("role") != "user":
                return (
                    f"Invalid 'messages[{n}]'. Image URLs are only allowed for messages with role 'user', "
                    f"but this message with role '{message.get('role')}' contains an image URL."
                )
            url = (part.get("image_url") or {}).get("url") if isinstance(part.get("image_url"), dict) else None
            found = _DATA_URL.fullmatch(url) if isinstance(url, str) else None
            problem = image_problem(found.group(2), found.group(1)) if found else "not a data URL"
            if problem:
                return f"Invalid image data (messages[{n}].content[{m}]): {problem}"
    return None


def request_tokens(body: dict) -> int:
    """The server's own count of a chat request: 4 characters a token over its messages and tools."""
    return len(json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))) // 4


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
    before: list[dict] | None = None,
) -> Reply:
    """An answer with tool calls: ``before`` (deltas sent first, e.g. reasoning as a vendor
    streams it), optional ``text``, then each call in turn as index n,
    id ``call_<n>`` (n from 1: ``call_1``, ``call_2``, ...), its name in the first delta and
    its JSON arguments split across ``split`` deltas; finish_reason "tool_calls", then usage."""
    events: list[str | dict] = [chunk({"role": "assistant", "content": None}, model=model)]
    events += [chunk(delta, model=model) for delta in before or ()]
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
