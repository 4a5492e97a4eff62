"""Any OpenAI-compatible Chat Completions endpoint, streamed.

Wire reference: https://platform.openai.com/docs/api-reference/chat/streaming (the chunk object)
and https://platform.openai.com/docs/api-reference/chat/create (the request body). The same wire
is spoken by DeepSeek, Groq, xAI, Alibaba, OpenRouter, vLLM, llama.cpp, LM Studio and others; the
parser accepts their known variations (reasoning as ``reasoning_content`` or ``reasoning``; usage
in a chunk with empty ``choices`` or on the finish chunk; tool-call ids repeated as ``""``).

Reasoning carried across a tool round (``Replay``), given back only to the provider and model
that wrote it (``Message.replay``, history.py):

- OpenRouter streams ``reasoning_details``, an array of objects (``{"type": "reasoning.text" |
  "reasoning.summary" | "reasoning.encrypted", "text"? | "summary"? | "data"?, "signature"?,
  "format"?, "id"?, "index"?}``) whose pieces share an ``index``; the pieces are joined per index
  and the array goes back unchanged on the assistant message (openrouter.ai/docs, "Reasoning
  Tokens", preserving reasoning blocks). A backend that sent them gets them back.
- DeepSeek's thinking mode asks for the ``reasoning_content`` of an answer with tool calls back on
  that assistant message in every later request, later user turns included, and answers 400
  without it; an answer without tool calls needs none, and the API ignores it
  (api-docs.deepseek.com/guides/thinking_mode, "Tool Calls"). Other servers stream
  ``reasoning_content`` too (xAI, vLLM, llama.cpp) and do not ask for it, so it is kept for the
  models named ``deepseek`` only (``asks_reasoning_content``).

Request (``POST {base_url}/chat/completions``)::

    {"model", "messages": [{"role": "system"|"user"|"assistant"|"tool", ...; an assistant message
     also "reasoning_content"? and "reasoning_details"? (above)}], "stream": true,
     "stream_options": {"include_usage": true}, "tools"?: [{"type": "function",
     "function": {"name", "description", "parameters"}}], "max_tokens"?, "temperature"?, "seed"?}

Stream: SSE ``data:`` payloads, each a ``chat.completion.chunk``::

    {"id", "model", "choices": [{"index": 0, "delta": {"content"?, "reasoning_content"?,
     "reasoning"?, "reasoning_details"?, "tool_calls"?: [{"index", "id"?, "function": {"name"?, "arguments"?}}]},
     "finish_reason": null|"stop"|"length"|"tool_calls"|...}], "usage"?: {"prompt_tokens",
     "completion_tokens"}}

ending with ``data: [DONE]``.

Images (https://platform.openai.com/docs/guides/images-vision, "Analyze images"): a user message
with images is sent as content parts, ``[{"type": "text", "text"}, {"type": "image_url",
"image_url": {"url": "data:<mime>;base64,<data>"}}, ...]``. A tool message cannot carry an image
on this wire (the API answers "Image URLs are only allowed for messages with role 'user'"), so
the images of a run of tool results follow it as one user message: the words of
``prompts/tool_images.txt``, then each image's caption and the image. Each payload is validated against ``wire/openai.py`` (strict
types) before it is read: a field of the wrong type is MalformedStream. Yields TextChunk /
ReasoningChunk as they arrive, then at the end every assembled ToolCallChunk in order, a
StateChunk when there is reasoning to carry back (above), one UsageChunk (the last usage seen) and
a FinishChunk.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx

from totem_engine.prompt_files import prompt
from totem_engine.vocab.chat import (
    ChatRequest,
    FinishChunk,
    ReasoningChunk,
    StateChunk,
    StreamChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from totem_engine.vocab.messages import Image, Message
from totem_engine.vocab.tools import ToolCall, ToolSpec, wire_call_id

from .base import ModelInfo
from .errors import MalformedStream, StreamCut
from .http import HttpEndpoint, aiter_sse_data, error_from_payload, redact
from .wire import openai as wire
from .wire.decode import decode

DONE = "[DONE]"

# The model ids whose server asks for reasoning_content back (module docstring): DeepSeek's own
# (deepseek-chat, deepseek-reasoner, deepseek-v4-pro) and the names proxies give them
# (deepseek/deepseek-v4-pro).
_ASKS_REASONING_CONTENT = re.compile(r"deepseek", re.IGNORECASE)


def asks_reasoning_content(model: str) -> bool:
    """Whether the server of ``model`` wants an answer's ``reasoning_content`` back with its tool
    calls (DeepSeek's thinking mode)."""
    return bool(_ASKS_REASONING_CONTENT.search(model))


class OpenAIProvider:
    """A configured OpenAI-compatible endpoint; implements ``base.Provider``.

    ``base_url`` includes the version prefix, e.g. ``https://api.openai.com/v1`` or
    ``http://localhost:11434/v1``. ``headers`` are sent on every request (e.g. OpenRouter's
    ``HTTP-Referer``). ``timeout`` bounds connecting (at most 30 s) and each wait for bytes;
    ``request_timeout`` a whole request.
    When ``client`` is given it is used as is and not closed by ``aclose``.
    """

    kind = "openai"  # the wire it speaks (base.Provider.kind)

    def __init__(
        self,
        name: str,
        base_url: str,
        api_key: str | None = None,
        *,
        headers: dict | None = None,
        timeout: float = 300.0,
        request_timeout: float | None = None,
        client: httpx.AsyncClient | None = None,
    ):
        self.name = name
        self.base_url = base_url.rstrip("/")
        self._http = HttpEndpoint(
            api_key, headers=headers, timeout=timeout, request_timeout=request_timeout, client=client, key_header="Authorization", key_prefix="Bearer "
        )

    def __repr__(self) -> str:
        # Never show the key, even in a debugger or a log of provider objects.
        return f"OpenAIProvider(name={self.name!r}, base_url={redact(self.base_url)!r})"

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        """Stream one answer; raises ProviderError subclasses (providers.errors)."""
        async with self._http.post(f"{self.base_url}/chat/completions", build_body(request)) as response:
            # aclosing: after [DONE] the SSE generator is closed now, not whenever GC gets to it.
            async with aclosing(aiter_sse_data(response)) as payloads:
                async for chunk in parse_stream(payloads, secrets=self._http.secrets, asked=request.model):
                    yield chunk

    async def models(self) -> list[ModelInfo]:
        """``GET {base_url}/models``: ``{"object": "list", "data": [{"id", ...}]}``."""
        return parse_models(await self._http.get_json(f"{self.base_url}/models"), self.name)

    async def aclose(self) -> None:
        await self._http.aclose()


# ---------------------------------------------------------------------------------------------
# Request translation
# ---------------------------------------------------------------------------------------------


def build_body(request: ChatRequest) -> dict[str, Any]:
    """The Chat Completions request body for ``request`` (shape in the module docstring)."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": build_messages(request.system, request.messages, model=request.model),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [tool_entry(tool) for tool in request.tools]
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.seed is not None:
        body["seed"] = request.seed
    if request.reasoning in ("low", "medium", "high"):
        body["reasoning_effort"] = request.reasoning  # reasoning models only; others ignore it
    return body


def tool_entry(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def build_messages(system: str, messages: tuple[Message, ...], *, model: str = "") -> list[dict[str, Any]]:
    """The wire messages: the system prompt first (when non-empty), then one per message.
    ``model``: the model asked for; an assistant message's replay goes back to that model only."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    held: list[Image] = []  # the images of the tool results since the last other message
    for message in messages:
        if held and message.role != "tool":
            out.append(tool_images_message(held))
            held = []
        out.append(wire_message(message, model=model))
        if message.role == "tool":
            held.extend(message.images)
    if held:
        out.append(tool_images_message(held))
    return out


def image_part(image: Image) -> dict[str, Any]:
    """One ``image_url`` content part, the image inline as a data URL."""
    return {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}


def tool_images_message(images: list[Image]) -> dict[str, Any]:
    """The user message that carries the images of the tool results just before it."""
    content: list[dict[str, Any]] = [{"type": "text", "text": prompt("tool_images.txt")}]
    for image in images:
        content += [{"type": "text", "text": image.caption}, image_part(image)]
    return {"role": "user", "content": content}


def wire_message(message: Message, *, model: str = "") -> dict[str, Any]:
    """One neutral message on the wire.

    An assistant message's reasoning goes back only as its replay (``Replay``), and only when
    ``model`` is the one that wrote it: ``Message.reasoning`` is any provider's, which another
    must never get.
    """
    if message.role == "user":
        if message.images:
            parts = [{"type": "text", "text": message.text}] if message.text else []
            return {"role": "user", "content": parts + [image_part(image) for image in message.images]}
        return {"role": "user", "content": message.text}
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
    if message.role == "assistant":
        entry: dict[str, Any] = {"role": "assistant"}
        # An empty string, not null, beside tool calls: some llama.cpp builds refuse null there,
        # and OpenAI, vLLM, Ollama and LiteLLM all take "".
        entry["content"] = message.text
        if message.tool_calls:
            entry["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ]
        replay = message.replay or {}
        if replay.get("model") == model:
            entry.update({key: replay[key] for key in Replay.KEYS if key in replay})
        return entry
    raise ValueError(f"unknown message role {message.role!r}")


# ---------------------------------------------------------------------------------------------
# Stream parsing
# ---------------------------------------------------------------------------------------------


@dataclass
class _CallBuilder:
    id: str = ""
    name: str = ""
    # Argument text as it came, joined once at the end: appending to one string made a call whose
    # arguments arrive in many small deltas quadratic (1 MB in 16-byte deltas took 42 s).
    pieces: list[str] = field(default_factory=list)


class _ToolCallAssembler:
    """Tool-call deltas put back together.

    Deltas carry an ``index``; the first delta of a call usually carries ``id`` and the name,
    later ones only argument text. Some servers repeat the id (or send ``""``) on every delta;
    a *different* non-empty id under an index already in use starts a new call (servers that
    number every call 0). A delta without an index continues the latest call. Deltas come
    validated (``wire.openai.ToolCallDelta``).
    """

    def __init__(self) -> None:
        self._calls: list[_CallBuilder] = []
        self._by_index: dict[int, _CallBuilder] = {}
        self._last_index = 0

    def add(self, delta: wire.ToolCallDelta) -> None:
        index = delta.get("index", self._last_index)
        self._last_index = index
        call_id = wire_call_id(delta.get("id"))
        current = self._by_index.get(index)
        if current is None or (call_id and current.id and call_id != current.id):
            current = _CallBuilder()
            self._calls.append(current)
            self._by_index[index] = current
        if call_id and not current.id:
            current.id = call_id
        function = delta.get("function") or {}
        name = function.get("name")
        if name and not current.name:
            current.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            current.pieces.append(arguments)
        elif arguments is not None:
            # A few servers send the arguments as an object instead of JSON text.
            current.pieces.append(json.dumps(arguments))

    def finish(self) -> list[ToolCall]:
        """The assembled calls in arrival order; empty arguments become ``{}``; missing ids are
        made up (``call_<n>``) so the tool result can still refer to its call."""
        calls = []
        for n, call in enumerate(self._calls):
            arguments = "".join(call.pieces)
            calls.append(ToolCall(id=call.id or f"call_{n}", name=call.name, arguments=arguments if arguments.strip() else "{}"))
        return calls


class Replay:
    """The reasoning of one stream that its server wants back (module docstring): the
    ``reasoning_details`` pieces joined per index, and the ``reasoning_content`` when the model
    asked for (``asked``) is one that ``asks_reasoning_content``. ``state`` is the StateChunk that
    stores them with the step, beside the model asked for (given back to that model only)."""

    KEYS = ("reasoning_content", "reasoning_details")
    _JOINED = ("text", "summary", "data", "signature")  # a detail's fields that arrive in pieces

    def __init__(self, asked: str | None) -> None:
        self.asked = asked
        self._content: list[str] | None = [] if asked and asks_reasoning_content(asked) else None
        self._details: list[dict[str, Any]] = []
        self._by_index: dict[int, dict[str, Any]] = {}

    def add(self, delta: wire.Delta) -> None:
        if self._content is not None and delta.get("reasoning_content"):
            self._content.append(delta["reasoning_content"] or "")
        for detail in delta.get("reasoning_details") or ():
            self._add_detail(detail)

    def _add_detail(self, detail: dict[str, Any]) -> None:
        index = detail.get("index")
        held = self._by_index.get(index) if isinstance(index, int) else None
        if held is None or held.get("type") != detail.get("type"):
            held = dict(detail)
            self._details.append(held)
            if isinstance(index, int):
                self._by_index[index] = held
            return
        for key, value in detail.items():
            if key in self._JOINED and isinstance(value, str) and isinstance(held.get(key), str):
                held[key] += value
            elif held.get(key) is None:
                held[key] = value

    def state(self, *, calls: bool) -> StateChunk | None:
        """What goes back with this answer; DeepSeek's reasoning only beside tool calls."""
        data: dict[str, Any] = {}
        if self._details:
            data["reasoning_details"] = self._details
        if calls and self._content:
            data["reasoning_content"] = "".join(self._content)
        if not data or self.asked is None:
            return None
        return StateChunk({"model": self.asked, **data})


def decode_payload(data: str) -> wire.Chunk:
    """One ``data:`` payload as a validated chunk (``wire.openai``), or MalformedStream saying
    what arrived."""
    return decode(wire.CHUNK, data, "stream payload")


def _reasoning_text(delta: wire.Delta) -> str:
    # DeepSeek/xAI/vLLM say reasoning_content, Groq/OpenRouter say reasoning; a server that sends
    # both carries the same text twice, so take one.
    return delta.get("reasoning_content") or delta.get("reasoning") or ""


async def parse_stream(
    payloads: AsyncIterator[str], *, secrets: tuple[str | None, ...] = (), asked: str | None = None
) -> AsyncIterator[StreamChunk]:
    """Chat Completions chunk payloads (SSE ``data`` strings) -> StreamChunks.

    ``asked``: the model the request named; with it, the reasoning to carry back (``Replay``) is
    yielded as a StateChunk.

    Ends at ``[DONE]``. Without ``[DONE]``, an EOF after a ``finish_reason`` is a normal end
    (some servers omit the marker) and an EOF before one is StreamCut. A payload that is not a
    chunk of the wire (``wire.openai``) is MalformedStream.
    """
    calls = _ToolCallAssembler()
    replay = Replay(asked)
    usage: UsageChunk | None = None
    finish_reason: str | None = None
    model: str | None = None
    done = False
    async for data in payloads:
        if data.strip() == DONE:
            done = True
            break
        payload = decode_payload(data)
        if payload.get("error"):
            raise error_from_payload(payload["error"], secrets=secrets)
        if not model:
            model = payload.get("model") or None
        usage = _usage(payload.get("usage")) or usage
        # The first choice only: we never ask for n > 1; usage-only chunks have none.
        choices = payload.get("choices")
        if not choices:
            continue
        choice = choices[0]
        delta = choice.get("delta") or {}
        text = delta.get("content")
        if text:
            yield TextChunk(text)
        reasoning = _reasoning_text(delta)
        if reasoning:
            yield ReasoningChunk(reasoning)
        replay.add(delta)
        for tool_delta in delta.get("tool_calls") or ():
            calls.add(tool_delta)
        if choice.get("finish_reason"):
            finish_reason = choice["finish_reason"]
    if not done and finish_reason is None:
        raise StreamCut("the stream ended before the answer was complete (no [DONE], no finish_reason)")
    assembled = calls.finish()
    for call in assembled:
        yield ToolCallChunk(call)
    state = replay.state(calls=bool(assembled))
    if state is not None:
        yield state
    if usage is not None:
        yield usage
    yield FinishChunk(reason=finish_reason, model=model)


def _usage(value: wire.Usage | None) -> UsageChunk | None:
    """``{"prompt_tokens", "completion_tokens"}`` -> UsageChunk; None when absent or empty."""
    if not value:
        return None
    prompt = value.get("prompt_tokens")
    completion = value.get("completion_tokens")
    if prompt is None and completion is None:
        return None
    return UsageChunk(input_tokens=prompt or 0, output_tokens=completion or 0)


# ---------------------------------------------------------------------------------------------
# Model listing
# ---------------------------------------------------------------------------------------------

_WINDOW_KEYS = ("context_length", "context_window", "max_model_len")


def parse_models(data: Any, provider: str) -> list[ModelInfo]:
    """``{"data": [{"id", "context_length"?|"context_window"?|"max_model_len"?, ...}]}`` (or a
    bare list, which some local servers return) -> ModelInfo list; entries without an id are
    skipped."""
    entries = data.get("data") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise MalformedStream(f"model list is not a list: {str(data)[:200]!r}")
    models = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        models.append(
            ModelInfo(
                id=entry["id"],
                provider=provider,
                context_window=_context_window(entry),
                extra={k: v for k, v in entry.items() if k != "id"},
            )
        )
    return models


def _context_window(entry: dict[str, Any]) -> int | None:
    for key in _WINDOW_KEYS:
        value = entry.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


__all__ = ["OpenAIProvider", "Replay", "asks_reasoning_content", "build_body", "build_messages", "parse_models", "parse_stream"]
