"""Ollama's native API, streamed as NDJSON.

Wire reference: https://docs.ollama.com/api/chat (request, streamed chunks, ``think``, tools),
https://docs.ollama.com/api/tags (local models), https://docs.ollama.com/api-reference/show-model-details
(``/api/show``: ``capabilities``, ``model_info``) and https://docs.ollama.com/api/errors (errors
before and during a stream). The repository's docs/api.md (github.com/ollama/ollama) says the same.

Request (``POST {base_url}/api/chat``)::

    {"model", "stream": true,
     "messages": [{"role": "system"|"user", "content", "images"?: [base64]},
                  {"role": "assistant", "content", "thinking"?,
                   "tool_calls"?: [{"function": {"name", "arguments": {...}}}]},
                  {"role": "tool", "content", "tool_name", "images"?: [base64]}],
     "tools"?: [{"type": "function", "function": {"name", "description", "parameters"}}],
     "options": {"num_ctx", "temperature"?, "num_predict"?, "seed"?}, "think"?: true}

``images``: the message's images as plain base64 (no ``data:`` prefix), for models with the
``vision`` capability; Ollama places them with the message they come with, a tool result's too.

``options.num_ctx`` is Ollama's context size for this request; the server truncates the prompt
to it silently, so it is sized per request (``context_size``): at least ``ctx``, grown to the
next multiple of 4096 that holds the estimated prompt plus the reserved output, and never above
the model's window (``model_info["<arch>.context_length"]`` from ``/api/show``, cached per model)
or ``ctx_max``. ``think: true`` is sent when ``/api/show`` lists the ``thinking`` capability.

Stream: one JSON object per line::

    {"model", "created_at", "message": {"role": "assistant", "content", "thinking"?,
     "tool_calls"?: [{"function": {"name", "arguments": {...}}}]}, "done": false}
    ...
    {"model", "message": {...}, "done": true, "done_reason": "stop"|"length"|...,
     "prompt_eval_count", "eval_count", ...}

or ``{"error": "..."}`` at any point. Each tool call arrives whole in one line and without an id:
calls get ``call_<n>`` in order of arrival within the answer (the loop makes ids unique per
session) and are emitted together once ``done`` arrives, so a stream cut after a call is still
retryable. Yields TextChunk / ReasoningChunk as they arrive, then the ToolCallChunks, one
UsageChunk and a FinishChunk. A stream that ends without ``done`` is StreamCut.
Each line is validated against ``wire/ollama.py`` (strict types) before it is read: a field of
the wrong type is MalformedStream.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx

from totem_engine import json_in
from totem_engine.vocab.chat import (
    ChatRequest,
    FinishChunk,
    ReasoningChunk,
    StreamChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall, ToolSpec, arguments_object, wire_call_id

from .base import ModelInfo
from .errors import ConnectionFailed, MalformedStream, ProviderError, ProviderTimeout, StreamCut
from .framing import aiter_ndjson
from .http import HttpEndpoint, error_from_payload, redact
from .wire import ollama as wire
from .wire.decode import check

DEFAULT_BASE_URL = "http://127.0.0.1:11434"
DEFAULT_CTX = 8192
CTX_STEP = 4096
OUTPUT_RESERVE = 4096
"""Tokens kept free for the answer when the request sets no ``max_tokens``."""
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class ModelDetails:
    """What ``/api/show`` says about one model; ``None`` fields were not reported."""

    context_length: int | None = None
    capabilities: frozenset[str] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def thinks(self) -> bool:
        return self.capabilities is not None and "thinking" in self.capabilities


class OllamaProvider:
    """A configured Ollama server; implements ``base.Provider``.

    ``base_url`` is the server root (``http://127.0.0.1:11434``; a trailing ``/api`` is
    accepted). ``api_key`` is sent as a Bearer token when set (remote servers behind a proxy,
    ollama.com). ``ctx``/``ctx_max``: see ``context_size``. ``temperature`` is sent when the
    request sets none. When ``client`` is given it is used as is and not closed by ``aclose``.
    """

    kind = "ollama"  # the wire it speaks (base.Provider.kind)

    def __init__(
        self,
        name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        headers: dict | None = None,
        timeout: float = 300.0,
        request_timeout: float | None = None,
        ctx: int = DEFAULT_CTX,
        ctx_max: int | None = None,
        temperature: float | None = None,
        client: httpx.AsyncClient | None = None,
    ):
        self.name = name
        root = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.base_url = root[: -len("/api")] if root.endswith("/api") else root
        self._http = HttpEndpoint(
            api_key,
            headers=headers,
            timeout=timeout,
            request_timeout=request_timeout,
            client=client,
            key_header="Authorization",
            key_prefix="Bearer ",
            stream_accept="application/x-ndjson",
        )
        self.ctx = ctx
        self.ctx_max = ctx_max
        self.temperature = temperature
        self._details: dict[str, ModelDetails] = {}

    def __repr__(self) -> str:
        return f"OllamaProvider(name={self.name!r}, base_url={redact(self.base_url)!r})"

    # -- chat --------------------------------------------------------------------------------

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        """Stream one answer; raises ProviderError subclasses (providers.errors)."""
        details = await self.model_details(request.model)
        body = build_body(
            request,
            num_ctx=context_size(request, self.ctx, window=details.context_length, ctx_max=self.ctx_max),
            temperature=self.temperature,
            think=details.thinks,
        )
        async with self._http.post(f"{self.base_url}/api/chat", body) as response:
            async with aclosing(aiter_ndjson(response)) as lines:
                async for chunk in parse_stream(lines, secrets=self._http.secrets):
                    yield chunk

    # -- models ------------------------------------------------------------------------------

    async def model_details(self, model: str) -> ModelDetails:
        """``/api/show`` for ``model``, cached in this instance.

        Unreachable server and timeouts raise; any other failure (unknown model, old server)
        gives empty details, not cached, and the chat request reports the real problem.
        """
        cached = self._details.get(model)
        if cached is not None:
            return cached
        try:
            data = await self._post_json(f"{self.base_url}/api/show", {"model": model})
        except (ConnectionFailed, ProviderTimeout):
            raise
        except ProviderError:
            return ModelDetails()
        details = parse_show(data)
        self._details[model] = details
        return details

    async def models(self) -> list[ModelInfo]:
        """``GET /api/tags``, then ``/api/show`` for each model (window, capabilities)."""
        data = await self._http.get_json(f"{self.base_url}/api/tags")
        entries = data.get("models") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise MalformedStream(f"/api/tags did not list models: {str(data)[:200]!r}")
        out = []
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            name = entry.get("name") or entry.get("model")
            if not isinstance(name, str) or not name:
                continue
            out.append(model_info(name, self.name, entry, await self.model_details(name)))
        return out

    async def _post_json(self, url: str, payload: dict[str, Any]) -> Any:
        async with self._http.post(url, payload, streaming=False) as response:
            body = await response.aread()
        try:
            return json_in.loads(body, what=f"the answer of {url}")
        except ValueError:
            text = body[:200].decode("utf-8", errors="replace")
            raise MalformedStream(f"{url} did not answer JSON: {text!r}") from None

    async def aclose(self) -> None:
        await self._http.aclose()


# ---------------------------------------------------------------------------------------------
# Context sizing
# ---------------------------------------------------------------------------------------------


def estimate_tokens(request: ChatRequest) -> int:
    """A characters-based estimate of the prompt's tokens: (system + messages + tool schemas)/4.

    Counts what is sent: message text, reasoning, tool names and arguments, tool results, and
    each tool's JSON entry; an image by its size (``Image.tokens``). Deliberately rough; a tokenizer-based count can replace it.
    """
    chars = len(request.system)
    images = 0
    for message in request.messages:
        chars += len(message.text) + len(message.reasoning)
        for call in message.tool_calls:
            chars += len(call.name) + len(call.arguments)
        images += sum(image.tokens for image in message.images)
    for tool in request.tools:
        chars += len(json.dumps(tool_entry(tool), ensure_ascii=False))
    return math.ceil(chars / CHARS_PER_TOKEN) + images


def context_size(
    request: ChatRequest, ctx: int, *, window: int | None = None, ctx_max: int | None = None
) -> int:
    """``options.num_ctx`` for ``request``.

    The estimate plus the reserved output (``max_tokens``, else ``OUTPUT_RESERVE``), rounded up
    to a multiple of ``CTX_STEP``; at least ``ctx``; then capped by the model's ``window`` and
    ``ctx_max`` (the caps win over ``ctx``). A request bigger than the cap is sent at the cap:
    Ollama truncates it, the loop sees the usage and compacts.
    """
    reserve = request.max_tokens if request.max_tokens is not None else OUTPUT_RESERVE
    needed = estimate_tokens(request) + reserve
    size = max(ctx, math.ceil(needed / CTX_STEP) * CTX_STEP)
    for cap in (window, ctx_max):
        if cap is not None and cap > 0:
            size = min(size, cap)
    return size


# ---------------------------------------------------------------------------------------------
# Request translation
# ---------------------------------------------------------------------------------------------


def build_body(
    request: ChatRequest,
    *,
    num_ctx: int,
    temperature: float | None = None,
    think: bool = False,
) -> dict[str, Any]:
    """The ``/api/chat`` body (shape in the module docstring). ``request.temperature`` wins over
    the configured ``temperature``."""
    options: dict[str, Any] = {"num_ctx": num_ctx}
    chosen = request.temperature if request.temperature is not None else temperature
    if chosen is not None:
        options["temperature"] = chosen
    if request.max_tokens is not None:
        options["num_predict"] = request.max_tokens
    if request.seed is not None:
        options["seed"] = request.seed
    body: dict[str, Any] = {
        "model": request.model,
        "messages": build_messages(request.system, request.messages),
        "stream": True,
        "options": options,
    }
    if request.tools:
        body["tools"] = [tool_entry(tool) for tool in request.tools]
    if think:
        # A thinking model thinks unless the request asks for no reasoning at all.
        body["think"] = request.reasoning != "none"
    return body


def tool_entry(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def build_messages(system: str, messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The wire messages: the system prompt first (when non-empty), then one per message.

    A tool result without ``name`` takes the name of the call it answers (by ``tool_call_id``).
    """
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    names: dict[str, str] = {}
    for message in messages:
        if message.role == "user":
            out.append(_with_images({"role": "user", "content": message.text}, message))
        elif message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.reasoning:
                entry["thinking"] = message.reasoning
            if message.tool_calls:
                entry["tool_calls"] = [
                    # Ollama rejects anything but an object here: broken arguments (kept for the
                    # tool's error message) are replayed as {}.
                    {"function": {"name": call.name, "arguments": arguments_object(call.arguments) or {}}}
                    for call in message.tool_calls
                ]
                names.update((call.id, call.name) for call in message.tool_calls)
            out.append(entry)
        elif message.role == "tool":
            name = message.name or names.get(message.tool_call_id or "", "")
            out.append(_with_images({"role": "tool", "content": message.text, "tool_name": name}, message))
        else:
            raise ValueError(f"unknown message role {message.role!r}")
    return out


def _with_images(entry: dict[str, Any], message: Message) -> dict[str, Any]:
    if message.images:
        entry["images"] = [image.data for image in message.images]
    return entry


def arguments_text(arguments: Any) -> str:
    """Wire arguments as ``ToolCall.arguments``: an object is dumped, a string kept as sent;
    missing or empty is ``{}``."""
    if isinstance(arguments, str):
        return arguments if arguments.strip() else "{}"
    if arguments is None or arguments == {}:
        return "{}"
    return json.dumps(arguments, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# Stream parsing
# ---------------------------------------------------------------------------------------------


async def parse_stream(
    lines: AsyncIterator[Any], *, secrets: tuple[str | None, ...] = ()
) -> AsyncIterator[StreamChunk]:
    """``/api/chat`` NDJSON values -> StreamChunks; ends at the ``done: true`` line."""
    calls: list[ToolCall] = []
    async for value in lines:
        line = check(wire.LINE, value, "stream line")
        if line.get("error"):
            raise error_from_payload(line["error"], secrets=secrets)
        message = line.get("message")
        if message:
            thinking = message.get("thinking")
            if thinking:
                yield ReasoningChunk(thinking)
            content = message.get("content")
            if content:
                yield TextChunk(content)
            for wire_call in message.get("tool_calls") or ():
                calls.append(_tool_call(wire_call, len(calls)))
        if line.get("done") is True:
            for call in calls:
                yield ToolCallChunk(call)
            usage = _usage(line)
            if usage is not None:
                yield usage
            yield FinishChunk(reason=line.get("done_reason") or None, model=line.get("model") or None)
            return
    raise StreamCut("the stream ended before the answer was complete (no line with done: true)")


def _tool_call(call: wire.ToolCall, n: int) -> ToolCall:
    """One wire tool call -> ToolCall. Ids: the wire's own when it sends one, else ``call_<n>``."""
    function = call.get("function")
    if function is None:
        raise MalformedStream(f"tool call is not {{function: {{name, arguments}}}}: {str(call)[:200]!r}")
    name = function.get("name")
    if not name:
        raise MalformedStream(f"tool call without a name: {str(call)[:200]!r}")
    wire_id = call.get("id")
    call_id = wire_call_id(wire_id) or f"call_{n}"
    return ToolCall(id=call_id, name=name, arguments=arguments_text(function.get("arguments")))


def _usage(line: wire.Line) -> UsageChunk | None:
    prompt = line.get("prompt_eval_count")
    output = line.get("eval_count")
    if prompt is None and output is None:
        return None
    return UsageChunk(input_tokens=prompt or 0, output_tokens=output or 0)


# ---------------------------------------------------------------------------------------------
# Model details
# ---------------------------------------------------------------------------------------------


def parse_show(data: Any) -> ModelDetails:
    """``/api/show`` -> ModelDetails.

    The window is ``model_info["<general.architecture>.context_length"]``, else any
    ``*.context_length`` key; ``capabilities`` is a list of words (``completion``, ``tools``,
    ``thinking``, ``vision``, ``embedding``, ...) that servers before 0.6.4 do not send.
    """
    if not isinstance(data, dict):
        raise MalformedStream(f"/api/show answer is not an object: {str(data)[:200]!r}")
    info = data.get("model_info")
    window = _context_length(info) if isinstance(info, dict) else None
    caps = data.get("capabilities")
    capabilities = frozenset(c for c in caps if isinstance(c, str)) if isinstance(caps, list) else None
    return ModelDetails(context_length=window, capabilities=capabilities, raw=data)


def _context_length(info: dict[str, Any]) -> int | None:
    arch = info.get("general.architecture")
    keys = [f"{arch}.context_length"] if isinstance(arch, str) else []
    keys += sorted(k for k in info if isinstance(k, str) and k.endswith(".context_length"))
    for key in keys:
        value = info.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def model_info(name: str, provider: str, entry: dict[str, Any], details: ModelDetails) -> ModelInfo:
    """One ``/api/tags`` entry and its ``/api/show`` details as ModelInfo."""
    caps = details.capabilities

    def has(word: str) -> bool | None:
        return None if caps is None else word in caps

    extra = {k: v for k, v in entry.items() if k in ("model", "modified_at", "size", "digest", "details")}
    if caps is not None:
        extra["capabilities"] = sorted(caps)
    return ModelInfo(
        id=name,
        provider=provider,
        context_window=details.context_length,
        tools=has("tools"),
        reasoning=has("thinking"),
        vision=has("vision"),
        extra=extra,
    )


__all__ = [
    "DEFAULT_BASE_URL",
    "ModelDetails",
    "OllamaProvider",
    "arguments_text",
    "build_body",
    "build_messages",
    "context_size",
    "estimate_tokens",
    "model_info",
    "parse_show",
    "parse_stream",
]
