"""A scripted Ollama server on loopback, for tests (native API, not the /v1 OpenAI one).

The HTTP harness (``ThreadingHTTPServer`` on ``127.0.0.1``, port 0, in a background thread) is
``tests/support/loopback.py``::

    with OllamaServer() as srv:
        srv.add_model("qwen3", context_length=40960, capabilities=["completion", "tools", "thinking"])
        srv.enqueue(text_reply("Hello", model="qwen3"))
        ...  # point the provider at srv.base_url ("http://127.0.0.1:PORT")
        assert srv.requests[0]["options"]["num_ctx"] == 8192

Routes, after https://docs.ollama.com/api/chat, /api/tags, /api-reference/show-model-details
and /api/errors:

- ``POST /api/chat``: records the body in ``srv.requests``. A model not in ``srv.models``
  answers 404 ``{"error": "model \\"<name>\\" not found, try pulling it first"}`` (Ollama's
  wording); otherwise the next queued ``Reply`` is served (an empty queue answers 500
  ``{"error": "no scripted reply"}``). A message's ``images`` must be a list of plain base64
  strings of PNG, JPEG, GIF or WebP bytes (a ``data:`` prefix is not base64: Ollama answers
  ``illegal base64 data``), sent to a model whose capabilities list ``vision``; else 400 with an
  ``error`` saying which (the wording of the last two is ours).
- ``GET /api/tags``: ``{"models": [...]}`` built from ``srv.models``.
- ``POST /api/show``: records the body in ``srv.show_requests``; the model's
  ``{"capabilities", "model_info": {"general.architecture", "<arch>.context_length"}, ...}``,
  or 404 ``{"error": "model '<name>' not found"}``. ``srv.show_body``, when set, is answered
  instead, as it is (a hostile or broken server: ``"[" * 5000 + "]" * 5000``).

Streams are ``application/x-ndjson``, chunked, ``Connection: close``. By default each line is one
HTTP chunk; ``Reply.chunk_size`` re-cuts the body into chunks of that many bytes so lines (and
multi-byte characters) straddle chunk boundaries. ``cut_after`` drops the socket after that many
lines with no chunked terminator: a real mid-stream drop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tests.support.images import SIGNATURES, image_problem
from tests.support.loopback import (
    LoopbackHandler,
    LoopbackServer,
    split_text,
    with_defaults,
)

CREATED_AT = "2025-01-01T00:00:00.000000Z"


@dataclass
class Reply:
    """One scripted answer to ``/api/chat``.

    ``lines``: NDJSON lines in order (dicts are JSON-dumped, strings sent verbatim, each followed
    by ``\\n``); the builders below end them with a ``done: true`` line. ``body``: a raw body sent
    instead (with ``status``), e.g. an error object. ``chunk_size``: bytes per HTTP chunk
    (None: one chunk per line). ``cut_after``: drop the connection after that many lines.
    ``delay``: seconds between lines.
    """

    status: int = 200
    headers: dict = field(default_factory=dict)
    lines: list[str | dict] = field(default_factory=list)
    body: str | None = None
    chunk_size: int | None = None
    cut_after: int | None = None
    delay: float = 0.0


@dataclass
class SimModel:
    name: str
    context_length: int | None = 32768
    capabilities: list[str] | None = field(default_factory=lambda: ["completion", "tools"])
    architecture: str = "llama"
    family: str = "llama"

    def tag_entry(self) -> dict:
        return {
            "name": self.name,
            "model": self.name,
            "modified_at": CREATED_AT,
            "size": 1234567,
            "digest": "0" * 64,
            "details": {
                "format": "gguf",
                "family": self.family,
                "families": [self.family],
                "parameter_size": "7B",
                "quantization_level": "Q4_K_M",
            },
        }

    def show(self) -> dict:
        info: dict[str, Any] = {"general.architecture": self.architecture, "general.parameter_count": 7_000_000_000}
        if self.context_length is not None:
            info[f"{self.architecture}.context_length"] = self.context_length
            info[f"{self.architecture}.embedding_length"] = 4096
        out: dict[str, Any] = {
            "parameters": "temperature 0.7\nnum_ctx 2048",
            "template": "{{ .Prompt }}",
            "details": self.tag_entry()["details"],
            "model_info": info,
            "modified_at": CREATED_AT,
        }
        if self.capabilities is not None:
            out["capabilities"] = list(self.capabilities)
        return out


class _Handler(LoopbackHandler):
    server_state: OllamaServer
    json_content_type = "application/json; charset=utf-8"

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/api/tags":
            models = [m.tag_entry() for m in self.server_state.models.values()]
            self.send_json(200, {"models": models})
        else:
            self.send_json(404, {"error": f"no route GET {self.path}"})

    def do_POST(self) -> None:
        body = self.read_json_body()
        path = self.path.rstrip("/")
        state = self.server_state
        name = body.get("model") if isinstance(body, dict) else None
        if path == "/api/show":
            with state._lock:
                state.show_requests.append(body)
            model = state.models.get(name or "")
            if state.show_body is not None:
                self.send_bytes(200, {"Content-Type": self.json_content_type}, state.show_body.encode())
            elif model is None:
                self.send_json(404, {"error": f"model '{name}' not found"})
            else:
                self.send_json(200, model.show())
        elif path == "/api/chat":
            state._record(body, dict(self.headers.items()))
            if name not in state.models:
                self.send_json(404, {"error": f'model "{name}" not found, try pulling it first'})
                return
            problem = check_images(body, state.models[name])
            if problem:
                self.send_json(400, {"error": problem})
                return
            self.serve_next_reply()
        else:
            self.send_json(404, {"error": f"no route POST {self.path}"})

    # -- the API's shapes ------------------------------------------------------------------

    def no_reply(self) -> Any:
        return {"error": "no scripted reply"}

    def status_error(self, status: int) -> Any:
        return {"error": f"scripted status {status}"}

    def send_reply_stream(self, reply: Reply) -> None:
        encoded = [
            ((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n").encode()
            for line in reply.lines[: reply.cut_after]
        ]
        if reply.chunk_size:
            # Re-cut so lines (and multi-byte characters) straddle chunk boundaries.
            blob = b"".join(encoded)
            pieces = [blob[i : i + reply.chunk_size] for i in range(0, len(blob), reply.chunk_size)]
        else:
            pieces = encoded
        headers = with_defaults(reply.headers, {"content-type": "application/x-ndjson"})
        self.stream(reply.status, headers, pieces, delay=reply.delay, cut=reply.cut_after is not None)


def check_images(body: dict, model: SimModel) -> str | None:
    """The server's answer to the request's ``images`` (module docstring), or None."""
    for n, message in enumerate(body.get("messages") or []):
        images = message.get("images") if isinstance(message, dict) else None
        if images is None:
            continue
        if "vision" not in (model.capabilities or []):
            return f"model {model.name!r} does not support images (messages[{n}])"
        if not isinstance(images, list):
            return f"messages[{n}].images: expected a list of base64 strings"
        for image in images:
            if isinstance(image, str) and image.startswith("data:"):
                return "illegal base64 data at input byte 4"
            if all(image_problem(image, mime) for mime in SIGNATURES):
                return f"messages[{n}].images: not base64 of a PNG, JPEG, GIF or WebP image"
    return None


class OllamaServer(LoopbackServer):
    """The loopback server; a context manager. See the module docstring."""

    handler = _Handler
    thread_name = "ollama-server"

    def __init__(self) -> None:
        super().__init__()
        self.show_requests: list[dict] = []
        self.show_body: str | None = None  # answered to every /api/show as it is, when set
        self.models: dict[str, SimModel] = {}
        self.add_model("test-model")

    def add_model(
        self,
        name: str,
        *,
        context_length: int | None = 32768,
        capabilities: list[str] | None = ("completion", "tools"),  # type: ignore[assignment]
        architecture: str = "llama",
    ) -> SimModel:
        model = SimModel(
            name,
            context_length=context_length,
            capabilities=None if capabilities is None else list(capabilities),
            architecture=architecture,
            family=architecture,
        )
        self.models[name] = model
        return model


# ---------------------------------------------------------------------------------------------
# Reply builders in the real /api/chat line format
# ---------------------------------------------------------------------------------------------


def line(
    content: str = "",
    *,
    model: str = "test-model",
    thinking: str | None = None,
    tool_calls: list[dict] | None = None,
) -> dict:
    """One streamed ``done: false`` line."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {"model": model, "created_at": CREATED_AT, "message": message, "done": False}


def done_line(
    *, model: str = "test-model", reason: str = "stop", usage: tuple[int, int] | None = (10, 5)
) -> dict:
    """The final line: empty message, ``done_reason``, durations and (optionally) counts."""
    out: dict[str, Any] = {
        "model": model,
        "created_at": CREATED_AT,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": reason,
        "total_duration": 1_000_000,
        "load_duration": 1000,
        "prompt_eval_duration": 1000,
        "eval_duration": 1000,
    }
    if usage is not None:
        out["prompt_eval_count"], out["eval_count"] = usage
    return out


def text_reply(
    text: str,
    *,
    model: str = "test-model",
    thinking: str = "",
    pieces: int = 3,
    usage: tuple[int, int] | None = (10, 5),
    reason: str = "stop",
) -> Reply:
    """``thinking`` (``message.thinking`` lines) then ``text``, each in ``pieces`` lines, then done."""
    lines: list[str | dict] = [line("", model=model, thinking=part) for part in split_text(thinking, pieces)]
    lines += [line(part, model=model) for part in split_text(text, pieces)]
    lines.append(done_line(model=model, reason=reason, usage=usage))
    return Reply(lines=lines)


def call(name: str, arguments: Any = None) -> dict:
    """One wire tool call (no id, as Ollama sends them); ``arguments`` None omits the key."""
    function: dict[str, Any] = {"name": name}
    if arguments is not None:
        function["arguments"] = arguments
    return {"function": function}


def tool_reply(
    calls: list[dict],
    *,
    model: str = "test-model",
    text: str = "",
    usage: tuple[int, int] | None = (10, 5),
) -> Reply:
    """Optional ``text``, then each call (from ``call``) on a line of its own, then done."""
    lines: list[str | dict] = [line(part, model=model) for part in split_text(text, 2)]
    lines += [line("", model=model, tool_calls=[c]) for c in calls]
    lines.append(done_line(model=model, usage=usage))
    return Reply(lines=lines)


__all__ = [
    "OllamaServer",
    "Reply",
    "SimModel",
    "call",
    "done_line",
    "line",
    "split_text",
    "text_reply",
    "tool_reply",
]
