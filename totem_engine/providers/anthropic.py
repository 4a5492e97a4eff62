"""Anthropic's Messages API, streamed.

Why one module of this size (over 500 lines): one module per wire; the request body, signed
thinking blocks, the event parser and the model list all follow the Messages pages below.

Wire references (vendor documentation):

- Messages request body and content blocks: https://docs.anthropic.com/en/api/messages
- Streaming events: https://platform.claude.com/docs/build-with-claude/streaming
- Tool use: https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls and
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/parallel-tool-use (every
  ``tool_result`` of a turn in the one next user message, before any text; ``is_error``)
- Extended thinking: https://docs.claude.com/en/docs/build-with-claude/extended-thinking
  (``thinking: {type: "enabled", budget_tokens}``, budget >= 1024 and < ``max_tokens``; thinking
  blocks handed back unchanged, signature included, before the ``tool_use`` of the same turn)
- Errors: https://platform.claude.com/docs/api/handle-errors (``{"type": "error", "error":
  {"type", "message"}}``, also sent as an ``error`` event inside a 200 stream)
- Model listing: https://docs.anthropic.com/en/api/models-list (``GET /v1/models``, pages with
  ``after_id`` / ``has_more`` / ``last_id``; newer answers carry ``max_input_tokens`` and
  ``capabilities``)

Request (``POST {base_url}/v1/messages``, headers ``x-api-key`` and ``anthropic-version:
2023-06-01``)::

    {"model", "max_tokens", "messages": [{"role": "user"|"assistant", "content": str | [block]}],
     "stream": true, "system"?: str, "tools"?: [{"name", "description", "input_schema"}],
     "temperature"?, "thinking"?: {"type": "enabled", "budget_tokens"}}

Translation of the engine's neutral messages:

- ``user`` -> a user message (its text appended as a text block after the tool results when it
  follows tool messages, so the turn stays one user message).
- ``assistant`` -> its replayed thinking blocks first (``Message.replay["thinking"]``, exactly as
  they were streamed: ``thinking`` + ``signature``, or ``redacted_thinking`` + ``data``), then the
  text block (when non-empty), then one ``tool_use`` block per call (``input`` = the parsed
  arguments; arguments that are not a JSON object are sent as ``{}``).
- consecutive ``tool`` messages -> ONE user message of ``tool_result`` blocks; ``is_error`` is set
  from ``Message.is_error`` (never guessed from the text); an empty result omits ``content``.
- images (https://platform.claude.com/docs/en/build-with-claude/vision): ``{"type": "image",
  "source": {"type": "base64", "media_type", "data"}}`` blocks, after the text of a user message
  and inside the ``content`` list of a tool's ``tool_result`` (after its text block), where the
  tool-use page allows them.

Thinking: ``ChatRequest.reasoning`` "low" / "medium" / "high" turns on extended thinking with a
budget of 2048 / 8192 / 16384 tokens, ``max_tokens`` grown by the budget, and ``temperature``
left out (the API refuses it with thinking), but only for models that think: those ``models()``
listed with ``capabilities.thinking.supported``, else Claude 3.7 Sonnet and every Claude of
generation 4 or later by id. It is also left off when the conversation is in the middle of a
tool-use turn whose assistant message carries no thinking block (e.g. written by another
provider): the API rejects thinking requests whose last tool-using assistant message does not
start with one.

Stream (SSE with ``event:`` lines; the JSON ``type`` repeats the event name, so only ``data`` is
read): ``message_start`` (model, input usage), ``content_block_start`` / ``content_block_delta``
(``text_delta``, ``thinking_delta``, ``signature_delta``, ``input_json_delta``) /
``content_block_stop``, ``message_delta`` (``stop_reason``, output usage), ``message_stop``,
``ping`` (ignored), ``error`` (raised as the matching ProviderError). Unknown events and block
types are ignored (the API adds new ones over time).

Yields TextChunk / ReasoningChunk as they arrive; after ``message_stop``: every ToolCallChunk in
block order (``input_json_delta`` fragments joined and parsed once, at ``content_block_stop``;
no fragments means ``{}``; text that does not parse is passed on raw for the loop to report), one
StateChunk ``{"thinking": [blocks]}`` when the answer had thinking blocks, one UsageChunk
(input = ``input_tokens`` + cache creation + cache reads, output = the last ``output_tokens``)
and the FinishChunk (the API's ``stop_reason``, the answering model). A stream that ends without
``message_stop`` raises StreamCut. Tool calls are held back until the end so that a stream cut
after a finished ``tool_use`` block is still retried as a whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

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
from totem_engine.vocab.tools import ToolCall, ToolSpec, arguments_object, wire_call_id

from .base import ModelInfo
from .errors import InvalidRequestError, MalformedStream, StreamCut
from .http import HttpEndpoint, aiter_sse_data, error_from_payload, redact
from .wire import anthropic as wire
from .wire.decode import decode

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
THINKING_BUDGETS = {"low": 2048, "medium": 8192, "high": 16384}
"""Extended-thinking ``budget_tokens`` per ``ChatRequest.reasoning`` level."""

_NO_REASONING = frozenset({"", "none", "off"})
MODELS_PAGE_LIMIT = 1000
_MAX_MODEL_PAGES = 100
_THINKING_BLOCKS = ("thinking", "redacted_thinking")


class AnthropicProvider:
    """A configured Anthropic Messages endpoint; implements ``base.Provider``.

    ``base_url`` is the host root (``https://api.anthropic.com``); a trailing ``/v1`` is accepted
    too. ``headers`` are sent on every request (e.g. ``anthropic-beta``) and may override
    ``anthropic-version``. ``timeout`` bounds connecting (at most 30 s) and each wait for bytes;
    ``request_timeout`` a whole request.
    ``max_tokens`` is used when the request sets none (the API requires one). When ``client`` is
    given it is used as is and not closed by ``aclose``.
    """

    kind = "anthropic"  # the wire it speaks (base.Provider.kind)

    def __init__(
        self,
        name: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        headers: dict | None = None,
        timeout: float = 300.0,
        request_timeout: float | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        client: httpx.AsyncClient | None = None,
    ):
        self.name = name
        root = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.base_url = root.removesuffix("/v1")
        self.default_max_tokens = max_tokens
        # Model id -> capabilities.thinking.supported, learned from models().
        self._thinks: dict[str, bool] = {}
        self._http = HttpEndpoint(
            api_key,
            headers=headers,
            timeout=timeout,
            request_timeout=request_timeout,
            client=client,
            key_header="x-api-key",
            defaults={"anthropic-version": API_VERSION},
        )

    def __repr__(self) -> str:
        # Never show the key, even in a debugger or a log of provider objects.
        return f"AnthropicProvider(name={self.name!r}, base_url={redact(self.base_url)!r})"

    def thinks(self, model: str) -> bool:
        """Whether ``model`` takes a ``thinking`` parameter (listed capability, else by id)."""
        known = self._thinks.get(model)
        return model_thinks(model) if known is None else known

    def build_body(self, request: ChatRequest) -> dict[str, Any]:
        return build_body(request, default_max_tokens=self.default_max_tokens, thinks=self.thinks(request.model))

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        """Stream one answer; raises ProviderError subclasses (providers.errors)."""
        async with self._http.post(f"{self.base_url}/v1/messages", self.build_body(request)) as response:
            async with aclosing(aiter_sse_data(response)) as payloads:
                async for chunk in parse_stream(payloads, secrets=self._http.secrets):
                    yield chunk

    async def models(self) -> list[ModelInfo]:
        """``GET {base_url}/v1/models``, every page (``after_id`` = the previous ``last_id``)."""
        models: list[ModelInfo] = []
        after: str | None = None
        for _ in range(_MAX_MODEL_PAGES):
            url = f"{self.base_url}/v1/models?limit={MODELS_PAGE_LIMIT}"
            if after:
                url += f"&after_id={quote(after, safe='')}"
            data = await self._http.get_json(url)
            page = parse_models(data, self.name)
            models.extend(page)
            last = data.get("last_id") if isinstance(data, dict) else None
            if not (isinstance(data, dict) and data.get("has_more") is True):
                break
            if not isinstance(last, str) or not last:
                last = page[-1].id if page else None
            if not last or last == after:
                break  # a server that says has_more without a usable cursor would loop forever
            after = last
        for info in models:
            if info.reasoning is not None:
                self._thinks[info.id] = info.reasoning
        return models

    async def aclose(self) -> None:
        await self._http.aclose()


# ---------------------------------------------------------------------------------------------
# Request translation
# ---------------------------------------------------------------------------------------------

_MODEL_GENERATION = re.compile(r"claude-(?:[a-z]+-)?(\d+)(?:[-.](\d+))?")


def model_thinks(model: str) -> bool:
    """Claude 3.7 Sonnet and every Claude of generation 4 or later, judged by the model id
    (``claude-3-7-sonnet-...``, ``claude-sonnet-4-5-...``, ``claude-opus-4-1``; a vendor prefix
    such as ``anthropic.`` or ``anthropic/`` is fine)."""
    match = _MODEL_GENERATION.search(model.lower())
    if not match:
        return False
    major = int(match.group(1))
    minor = match.group(2)
    if major >= 4:
        return True
    return major == 3 and minor == "7"


def thinking_budget(level: str | None) -> int | None:
    """The ``budget_tokens`` for a reasoning level; None for no level (or "none"/"off")."""
    if level is None or level.strip().lower() in _NO_REASONING:
        return None
    budget = THINKING_BUDGETS.get(level.strip().lower())
    if budget is None:
        raise InvalidRequestError(
            f"unknown reasoning level {level!r}: expected one of {', '.join(THINKING_BUDGETS)}"
        )
    return budget


def build_body(
    request: ChatRequest, *, default_max_tokens: int = DEFAULT_MAX_TOKENS, thinks: bool | None = None
) -> dict[str, Any]:
    """The Messages request body for ``request`` (shape and rules in the module docstring)."""
    if thinks is None:
        thinks = model_thinks(request.model)
    max_tokens = request.max_tokens if request.max_tokens is not None else default_max_tokens
    budget = thinking_budget(request.reasoning)
    if budget is not None and not (thinks and _thinking_allowed(request.messages)):
        budget = None
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": max_tokens + (budget or 0),
        "messages": build_messages(request.messages),
        "stream": True,
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [tool_entry(tool) for tool in request.tools]
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def tool_entry(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def _thinking_allowed(messages: tuple[Message, ...]) -> bool:
    """False while a tool-use turn is open whose assistant message has no thinking block to
    start with: thinking cannot be switched on in the middle of such a turn."""
    for message in reversed(messages):
        if message.role == "tool":
            continue
        if message.role == "assistant" and message.tool_calls:
            return bool(replayed_thinking(message))
        return True
    return True


def replayed_thinking(message: Message) -> list[dict[str, Any]]:
    """The thinking blocks this provider stored with an assistant message, unchanged."""
    replay = message.replay
    if not isinstance(replay, dict):
        return []
    blocks = replay.get("thinking")
    if not isinstance(blocks, list):
        return []
    return [b for b in blocks if isinstance(b, dict) and b.get("type") in _THINKING_BLOCKS]


def build_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The wire messages; consecutive tool results and a following user text share one user
    message (tool results first, as the API requires)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            block = tool_result_block(message)
            last = out[-1] if out else None
            if last is not None and last["role"] == "user" and _only_tool_results(last["content"]):
                last["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif message.role == "user":
            last = out[-1] if out else None
            blocks = ([{"type": "text", "text": message.text}] if message.text else []) + [image_block(i) for i in message.images]
            if last is not None and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].extend(blocks)
            elif message.images:
                out.append({"role": "user", "content": blocks})
            else:
                out.append({"role": "user", "content": message.text})
        elif message.role == "assistant":
            out.append({"role": "assistant", "content": assistant_content(message)})
        else:
            raise ValueError(f"unknown message role {message.role!r}")
    return out


def _only_tool_results(content: Any) -> bool:
    return isinstance(content, list) and all(b.get("type") == "tool_result" for b in content)


def image_block(image: Image) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.mime_type, "data": image.data}}


def tool_result_block(message: Message) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    if message.images:
        text = [{"type": "text", "text": message.text}] if message.text else []
        block["content"] = text + [image_block(image) for image in message.images]
    elif message.text:
        block["content"] = message.text
    if message.is_error:
        block["is_error"] = True
    return block


def assistant_content(message: Message) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = list(replayed_thinking(message))
    if message.text:
        content.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments_object(call.arguments) or {}})
    return content


# ---------------------------------------------------------------------------------------------
# Stream parsing
# ---------------------------------------------------------------------------------------------


@dataclass
class _Block:
    """One content block being streamed."""

    type: str
    text: list[str] = field(default_factory=list)  # thinking text
    signature: list[str] = field(default_factory=list)
    data: str = ""  # redacted_thinking
    id: str = ""
    name: str = ""
    start_input: Any = None
    fragments: list[str] = field(default_factory=list)  # input_json_delta
    done: bool = False


def decode_payload(data: str) -> wire.Event:
    """One ``data:`` payload as a validated event (``wire.anthropic``), or MalformedStream
    saying what arrived."""
    return decode(wire.EVENT, data, "stream payload")


class _Answer:
    """The blocks of one answer in index order, and what is finished of them."""

    def __init__(self) -> None:
        self.blocks: dict[Any, _Block] = {}
        self.calls: list[ToolCall] = []
        self.thinking: list[dict[str, Any]] = []

    def block(self, index: Any, kind: str) -> _Block:
        found = self.blocks.get(index)
        if found is None:
            # A delta without its content_block_start: infer the block from the delta.
            found = self.blocks[index] = _Block(type=kind)
        return found

    def start(self, index: Any, content: wire.ContentBlock) -> _Block:
        kind = content.get("type") or ""
        block = self.blocks[index] = _Block(type=kind)
        if kind == "thinking":
            block.signature.append(content.get("signature") or "")
        elif kind == "redacted_thinking":
            block.data = content.get("data") or ""
        elif kind == "tool_use":
            block.id = wire_call_id(content.get("id"))
            block.name = content.get("name") or ""
            block.start_input = content.get("input")
        return block

    def stop(self, index: Any) -> None:
        block = self.blocks.get(index)
        if block is None or block.done:
            return
        block.done = True
        if block.type == "thinking":
            self.thinking.append(
                {"type": "thinking", "thinking": "".join(block.text), "signature": "".join(block.signature)}
            )
        elif block.type == "redacted_thinking":
            self.thinking.append({"type": "redacted_thinking", "data": block.data})
        elif block.type == "tool_use":
            call_id = block.id or f"toolu_totem_{index}"  # a missing id is made up, so the result can refer to it
            self.calls.append(ToolCall(id=call_id, name=block.name, arguments=_arguments(block)))

    def stop_all(self) -> None:
        for index in list(self.blocks):
            self.stop(index)


def _arguments(block: _Block) -> str:
    """The call's arguments as JSON text, joined once now that every fragment is in."""
    joined = "".join(block.fragments)
    if not joined.strip():
        start = block.start_input
        return json.dumps(start) if isinstance(start, dict) and start else "{}"
    return joined  # as sent even when it does not parse: the loop tells the model


async def parse_stream(
    payloads: AsyncIterator[str], *, secrets: tuple[str | None, ...] = ()
) -> AsyncIterator[StreamChunk]:
    """Messages stream event payloads (SSE ``data`` strings) -> StreamChunks (module docstring)."""
    answer = _Answer()
    model: str | None = None
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    stopped = False
    async for data in payloads:
        payload = decode_payload(data)
        kind = payload.get("type")
        if kind == "ping":
            continue
        if kind == "error":
            raise error_from_payload(payload.get("error") or payload, secrets=secrets)
        if kind == "message_start":
            message = payload.get("message") or {}
            model = message.get("model") or model
            usage = message.get("usage")
            found = _input_tokens(usage)
            if found is not None:
                input_tokens = found
            output_tokens = _int(usage, "output_tokens", output_tokens)
        elif kind == "content_block_start":
            content = payload.get("content_block") or {}
            block = answer.start(payload.get("index"), content)
            if block.type == "text" and content.get("text"):
                yield TextChunk(content["text"])
            elif block.type == "thinking" and content.get("thinking"):
                block.text.append(content["thinking"])
                yield ReasoningChunk(content["thinking"])
        elif kind == "content_block_delta":
            chunk = _delta(answer, payload.get("index"), payload.get("delta", {}))
            if chunk is not None:
                yield chunk
        elif kind == "content_block_stop":
            answer.stop(payload.get("index"))
        elif kind == "message_delta":
            delta = payload.get("delta", {})
            if delta.get("stop_reason"):
                stop_reason = delta["stop_reason"]
            usage = payload.get("usage")
            found = _input_tokens(usage)
            if found is not None:
                input_tokens = found
            output_tokens = _int(usage, "output_tokens", output_tokens)
        elif kind == "message_stop":
            stopped = True
            break
        # Anything else is an event type this module does not know yet: ignored.
    if not stopped:
        raise StreamCut("the stream ended before the answer was complete (no message_stop)")
    answer.stop_all()
    for call in answer.calls:
        yield ToolCallChunk(call)
    if answer.thinking:
        yield StateChunk({"thinking": answer.thinking})
    if input_tokens is not None or output_tokens is not None:
        yield UsageChunk(input_tokens=input_tokens or 0, output_tokens=output_tokens or 0)
    yield FinishChunk(reason=stop_reason, model=model)


def _delta(answer: _Answer, index: Any, delta: wire.Delta) -> StreamChunk | None:
    kind = delta.get("type")
    if kind == "text_delta":
        text = delta.get("text")
        return TextChunk(text) if text else None
    if kind == "thinking_delta":
        text = delta.get("thinking")
        if text:
            answer.block(index, "thinking").text.append(text)
            return ReasoningChunk(text)
        return None
    if kind == "signature_delta":
        signature = delta.get("signature")
        if signature is not None:
            answer.block(index, "thinking").signature.append(signature)
        return None
    if kind == "input_json_delta":
        fragment = delta.get("partial_json")
        if fragment is not None:
            answer.block(index, "tool_use").fragments.append(fragment)
        return None
    return None  # citations_delta and deltas added later


def _int(usage: wire.Usage | None, key: str, default: int | None) -> int | None:
    value = usage.get(key) if usage else None
    return default if value is None else value


def _input_tokens(usage: wire.Usage | None) -> int | None:
    """Every input token of the request: uncached + written to the cache + read from it."""
    base = _int(usage, "input_tokens", None)
    if base is None:
        return None
    return base + (_int(usage, "cache_creation_input_tokens", 0) or 0) + (_int(usage, "cache_read_input_tokens", 0) or 0)


# ---------------------------------------------------------------------------------------------
# Model listing
# ---------------------------------------------------------------------------------------------


def parse_models(data: Any, provider: str) -> list[ModelInfo]:
    """One ``GET /v1/models`` page -> ModelInfo list; entries without an id are skipped.

    ``context_window`` is ``max_input_tokens`` when given (else unknown); ``reasoning`` is
    ``capabilities.thinking.supported`` and ``vision`` ``capabilities.image_input.supported``
    when present (else unknown).
    """
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise MalformedStream(f"model list is not a list: {str(data)[:200]!r}")
    models = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        window = entry.get("max_input_tokens")
        capabilities = entry.get("capabilities") if isinstance(entry.get("capabilities"), dict) else {}
        models.append(
            ModelInfo(
                id=entry["id"],
                provider=provider,
                context_window=window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None,
                reasoning=_supported(capabilities, "thinking"),
                vision=_supported(capabilities, "image_input"),
                extra={k: v for k, v in entry.items() if k != "id"},
            )
        )
    return models


def _supported(capabilities: dict[str, Any], name: str) -> bool | None:
    entry = capabilities.get(name)
    if isinstance(entry, dict) and isinstance(entry.get("supported"), bool):
        return entry["supported"]
    return None


__all__ = [
    "API_VERSION",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "THINKING_BUDGETS",
    "AnthropicProvider",
    "build_body",
    "build_messages",
    "model_thinks",
    "parse_models",
    "parse_stream",
]
