"""Google Gemini (Generative Language API, ``v1beta``), streamed with server-sent events.

Why one module of this size (over 800 lines): one module per wire is the house rule, and every
part here (request body, thinking config, schema cleaning, the stream parser with Gemini 3's
streamed ``partialArgs``, thought signatures, the model list) follows this one vendor's pages;
split, a change to the wire would be spread over modules that mean nothing apart.

Wire references (ai.google.dev):

- https://ai.google.dev/api/generate-content (``models.streamGenerateContent``, request body,
  ``GenerateContentResponse``: candidates, finishReason, usageMetadata, promptFeedback)
- https://ai.google.dev/api (authentication: the ``x-goog-api-key`` header)
- https://ai.google.dev/gemini-api/docs/function-calling (``functionDeclarations``,
  ``functionCall`` / ``functionResponse`` parts, parallel calls answered in one content)
- https://ai.google.dev/gemini-api/docs/thinking (``thinkingConfig``: ``thinkingBudget`` for
  Gemini 2.5, ``thinkingLevel`` for Gemini 3, ``includeThoughts``; ``thought: true`` parts)
- https://ai.google.dev/gemini-api/docs/thought-signatures (``thoughtSignature`` must go back on
  the exact part it came with; with parallel calls only the first ``functionCall`` carries one;
  an answer without calls may carry it on its last part)
- https://ai.google.dev/api/models (``models.list``: ``pageSize``, ``pageToken``,
  ``nextPageToken``; ``Model.inputTokenLimit``, ``Model.thinking``)
- ``FunctionResponse.response`` ("use the "output" key for the function output") and
  ``PartialArg`` (``jsonPath`` per RFC 9535, ``stringValue``/``numberValue``/``boolValue``/
  ``nullValue``, ``willContinue``) as documented in the google-genai SDK type references.

Request (``POST {base_url}/models/{model}:streamGenerateContent?alt=sse``)::

    {"systemInstruction"?: {"parts": [{"text"}]},
     "contents": [{"role": "user"|"model", "parts": [{"text"} | {"functionCall": {"name",
                   "args", "id"?}, "thoughtSignature"?} | {"functionResponse": {"name",
                   "response": {"output": text}, "id"?}}]}],
     "tools"?: [{"functionDeclarations": [{"name", "description", "parameters"?}]}],
     "generationConfig"?: {"maxOutputTokens"?, "temperature"?, "thinkingConfig"?}}

Stream: each SSE ``data`` is a ``GenerateContentResponse``::

    {"candidates": [{"content": {"role": "model", "parts": [...]}, "finishReason"?}],
     "usageMetadata"?: {"promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount"?},
     "modelVersion", "responseId", "promptFeedback"?: {"blockReason"}}   or   {"error": {...}}

Images (https://ai.google.dev/gemini-api/docs/image-understanding, "Passing images inline"):
``{"inlineData": {"mimeType", "data"}}`` parts, after the text of a user content; the images of a
run of tool results follow its ``functionResponse`` parts in the same user content, each after a
text part with its caption (``FunctionResponse.parts`` carries media only from Gemini 3 on; parts
beside the responses work for every version).

Translation:

- ``text`` parts -> TextChunk; ``thought: true`` parts -> ReasoningChunk (as they arrive).
- ``functionCall`` parts -> one ToolCallChunk each, emitted when the call is whole. Gemini 3 may
  stream one call over several parts: an opening part ``{"name", "willContinue": true}``, parts
  ``{"partialArgs": [{"jsonPath", "<type>Value", "willContinue"?}], "willContinue": true}``
  (string values for the same path are concatenated while ``willContinue`` is set) and a closing
  ``{}``. Gemini usually sends no call id: ids are made up per answer
  (``gemini_<responseId>_<n>``) and never sent back; a vendor ``id`` is kept and sent back.
- ``usageMetadata`` (cumulative; the last one wins) -> one UsageChunk: input
  ``promptTokenCount``, output ``candidatesTokenCount + thoughtsTokenCount``.
- One StateChunk (only when the answer carried a ``thoughtSignature`` or a vendor call id):
  ``{"gemini": {"parts": [...]}}``, the answer's part layout: ``{"text": n}`` / ``{"thought": n}``
  (characters of text / reasoning in that part), ``{"call": id}``, each with its
  ``thoughtSignature`` where one came and ``"vendorId": true`` for vendor ids. The next request
  rebuilds the model content from it, so every signature lands on the part it came with.
- ``finishReason`` (Gemini's own word, e.g. ``STOP``) and ``modelVersion`` -> FinishChunk; a
  prompt refused with ``promptFeedback.blockReason`` finishes with that reason. A stream that
  ends with neither is StreamCut. An ``error`` object in the stream raises its ProviderError.
  Each payload is validated against ``wire/gemini.py`` (strict types) before it is read: a
  field of the wrong type is MalformedStream.

Errors: Gemini answers a wrong key with 400 ``API key not valid`` (AuthenticationError here) and
an over-long prompt with 400 ``The input token count (...) exceeds the maximum number of tokens
allowed`` (ContextOverflowError), sometimes as escaped JSON inside another error's message (the
inner message is used). 429 bodies carry ``google.rpc.RetryInfo.retryDelay``, read by the shared
core as ``retry_after``. The key only travels in the header and is redacted from every error.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from totem_engine import json_in
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
from totem_engine.vocab.tools import ToolCall, ToolSpec, arguments_object

from .base import ModelInfo
from .errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    MalformedStream,
    ProviderError,
    StreamCut,
)
from .http import HttpEndpoint, aiter_sse_data, error_from_payload, redact
from .wire import gemini as wire
from .wire.decode import SHOWN, decode

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
STATE_KEY = "gemini"
MODELS_PAGE_SIZE = 1000  # the documented maximum per page
MAX_MODEL_PAGES = 50  # a bound against a server that keeps sending page tokens

# Gemini 2.5 thinking budgets (tokens) per reasoning level. "none" turns thinking off where the
# model allows it (Flash, Flash-Lite); 2.5 Pro cannot switch it off, 128 is its minimum.
THINKING_BUDGETS = {"minimal": 128, "low": 1024, "medium": 8192, "high": 24576}
PRO_MIN_BUDGET = 128
LITE_MIN_BUDGET = 512  # Flash-Lite: 0 (off) or 512..24576
REASONING_LEVELS = frozenset({"none", "minimal", "low", "medium", "high"})


class GeminiProvider:
    """A configured Gemini endpoint; implements ``base.Provider``.

    ``base_url`` includes the version, e.g. ``https://generativelanguage.googleapis.com/v1beta``.
    ``headers`` are sent on every request. When ``client`` is given it is used as is and not
    closed by ``aclose``.
    """

    kind = "gemini"  # the wire it speaks (base.Provider.kind)

    def __init__(
        self,
        name: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        headers: dict | None = None,
        timeout: float = 300.0,
        request_timeout: float | None = None,
        client: httpx.AsyncClient | None = None,
        models_page_size: int = MODELS_PAGE_SIZE,
    ):
        self.name = name
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._models_page_size = models_page_size
        # The key travels only in this header, never in the URL.
        self._http = HttpEndpoint(
            api_key, headers=headers, timeout=timeout, request_timeout=request_timeout, client=client, key_header="x-goog-api-key"
        )

    def __repr__(self) -> str:
        return f"GeminiProvider(name={self.name!r}, base_url={redact(self.base_url)!r})"

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        """Stream one answer; raises ProviderError subclasses (providers.errors)."""
        url = f"{self.base_url}/{model_path(request.model)}:streamGenerateContent?alt=sse"
        async with _gemini_errors():
            async with self._http.post(url, build_body(request)) as response:
                async with aclosing(aiter_sse_data(response)) as payloads:
                    async for chunk in parse_stream(payloads, secrets=self._http.secrets):
                        yield chunk

    async def models(self) -> list[ModelInfo]:
        """``GET {base_url}/models?pageSize=N[&pageToken=T]``, following ``nextPageToken``."""
        entries: list[Any] = []
        token: str | None = None
        seen: set[str] = set()
        async with _gemini_errors():
            for _ in range(MAX_MODEL_PAGES):
                query = {"pageSize": str(self._models_page_size)}
                if token:
                    query["pageToken"] = token
                data = await self._http.get_json(f"{self.base_url}/models?{urlencode(query)}")
                if not isinstance(data, dict):
                    raise MalformedStream(f"model list is not an object: {str(data)[:200]!r}")
                page = data.get("models") or []
                if not isinstance(page, list):
                    raise MalformedStream(f"models is not a list: {str(page)[:200]!r}")
                entries.extend(page)
                token = data.get("nextPageToken") or None
                if not isinstance(token, str) or token in seen:
                    break
                seen.add(token)
        return parse_models(entries, self.name)

    async def aclose(self) -> None:
        await self._http.aclose()


# ---------------------------------------------------------------------------------------------
# Errors: Gemini's own wording
# ---------------------------------------------------------------------------------------------

_OVERFLOW = re.compile(
    r"input token count.{0,80}exceeds|exceeds the maximum number of tokens|"
    r"exceeds the maximum input tokens|request payload size exceeds",
    re.IGNORECASE | re.DOTALL,
)
_BAD_KEY = re.compile(r"api key not valid|api_key_invalid|api key expired", re.IGNORECASE)


@asynccontextmanager
async def _gemini_errors() -> AsyncIterator[None]:
    """Re-read the shared core's errors with Gemini's wording (see ``refine_error``)."""
    try:
        yield
    except ProviderError as exc:
        refined = refine_error(exc)
        if refined is exc:
            raise
        raise refined from None


def refine_error(exc: ProviderError) -> ProviderError:
    """``exc`` with Gemini's wording taken into account.

    A message that is itself an error JSON (a proxy wrapping Gemini's answer as escaped text) is
    replaced by the inner message; 400 ``API key not valid`` is AuthenticationError; an input
    over the model's token limit is ContextOverflowError.
    """
    message = _inner_message(exc.message)
    cls: type[ProviderError] = type(exc)
    if isinstance(exc, InvalidRequestError) and not isinstance(exc, ContextOverflowError):
        flat = exc.message.replace("\\", "")
        if _BAD_KEY.search(flat):
            cls = AuthenticationError
        elif _OVERFLOW.search(flat):
            cls = ContextOverflowError
    if cls is type(exc) and message == exc.message:
        return exc
    return cls(message, status=exc.status, retry_after=exc.retry_after)


def _inner_message(message: str) -> str:
    for _ in range(3):  # unwrap a few levels at most
        try:
            data = json_in.loads(message, what="the error message")
        except (ValueError, TypeError):
            return message
        if isinstance(data, list) and len(data) == 1:
            data = data[0]
        error = data.get("error") if isinstance(data, dict) else None
        inner = error.get("message") if isinstance(error, dict) else None
        if not isinstance(inner, str) or not inner:
            return message
        message = inner
    return message


# ---------------------------------------------------------------------------------------------
# Request translation
# ---------------------------------------------------------------------------------------------


def model_path(model: str) -> str:
    """``models/<id>`` for a bare id; ``models/...`` and ``tunedModels/...`` kept; quoted."""
    path = model if "/" in model else f"models/{model}"
    return quote(path, safe="/-._~")


def build_body(request: ChatRequest) -> dict[str, Any]:
    """The ``streamGenerateContent`` body for ``request`` (shape in the module docstring)."""
    body: dict[str, Any] = {"contents": build_contents(request.messages)}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    if request.tools:
        body["tools"] = [{"functionDeclarations": [function_declaration(t) for t in request.tools]}]
    config: dict[str, Any] = {}
    if request.max_tokens is not None:
        config["maxOutputTokens"] = request.max_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    thinking = thinking_config(request.model, getattr(request, "reasoning", None))
    if thinking:
        config["thinkingConfig"] = thinking
    if config:
        body["generationConfig"] = config
    return body


_VERSION = re.compile(r"gemini-(\d+)(?:\.(\d+))?")


def _gemini_version(model: str) -> tuple[int, int] | None:
    match = _VERSION.search(model.lower())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def thinking_config(model: str, reasoning: str | None) -> dict[str, Any] | None:
    """``generationConfig.thinkingConfig`` for a reasoning level on this model, or None.

    Gemini 3 and later: ``thinkingLevel`` ("none"/"minimal" -> ``minimal`` on Flash, ``low`` on
    Pro, which cannot stop thinking; "medium" -> ``medium`` on Flash, ``high`` on Pro). Gemini
    2.5: ``thinkingBudget`` (low 1024, medium 8192, high 24576; "none" 0, or 128 on Pro). Other
    Gemini ids without a version (``gemini-flash-latest``) get the budget form, which newer
    models also accept; 1.x/2.0 models and non-Gemini ids get nothing. ``includeThoughts`` is on
    whenever thinking is, so the thought summaries stream as reasoning.
    """
    level = reasoning.strip().lower() if isinstance(reasoning, str) and reasoning.strip() else None
    if level is not None and level not in REASONING_LEVELS:
        raise InvalidRequestError(
            f"unknown reasoning level {reasoning!r} (expected one of {sorted(REASONING_LEVELS)})"
        )
    name = model.lower()
    version = _gemini_version(name)
    pro = "pro" in name
    off = level in ("none",)
    if version is not None and version >= (3, 0):
        if level is None:
            return {"includeThoughts": True}
        if level in ("none", "minimal"):
            value = "low" if pro else "minimal"
        elif level == "medium":
            value = "high" if pro else "medium"
        else:
            value = level
        return {"thinkingLevel": value, "includeThoughts": not off}
    budget_form = (version is not None and version >= (2, 5)) or (
        version is None and "gemini" in name
    )
    if not budget_form:
        return None
    if level is None:
        return {"includeThoughts": True} if version is not None else None
    if off:
        budget = PRO_MIN_BUDGET if pro else 0
    else:
        budget = THINKING_BUDGETS[level]
        if "lite" in name:
            budget = max(budget, LITE_MIN_BUDGET)
    return {"thinkingBudget": budget, "includeThoughts": budget > 0 and not off}


# JSON-schema keys the ``parameters`` Schema (an OpenAPI 3.0 subset) accepts; anything else
# (``additionalProperties``, ``$schema``, ``$ref``, ``definitions``, ``const``, ...) is rejected.
_SCHEMA_KEYS = frozenset(
    {
        "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
        "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
        "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
        "maximum",
    }
)


def clean_schema(schema: Any) -> Any:
    """A JSON schema reduced to what Gemini's ``parameters`` accept, recursively.

    Unknown keys are dropped; ``"type": ["string", "null"]`` becomes ``"type": "string"`` with
    ``nullable``; ``const`` becomes a one-value ``enum``; non-string enums are dropped (Gemini
    enums are strings); ``required`` keeps only names that are properties.
    """
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _SCHEMA_KEYS:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: clean_schema(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = clean_schema(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [clean_schema(sub) for sub in value]
        elif key == "type" and isinstance(value, list):
            kinds = [k for k in value if k != "null"]
            if len(kinds) < len(value):
                out["nullable"] = True
            if kinds:
                out["type"] = kinds[0]
        elif key == "enum":
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                out[key] = value
        else:
            out[key] = value
    if "const" in schema and isinstance(schema["const"], str) and "enum" not in out:
        out["enum"] = [schema["const"]]
    if isinstance(out.get("required"), list) and isinstance(out.get("properties"), dict):
        out["required"] = [n for n in out["required"] if n in out["properties"]]
    return out


def function_declaration(tool: ToolSpec) -> dict[str, Any]:
    """One ``functionDeclarations`` entry; ``parameters`` left out for a tool without inputs."""
    entry: dict[str, Any] = {"name": tool.name, "description": tool.description}
    params = clean_schema(tool.parameters or {})
    if isinstance(params, dict) and params.get("properties"):
        entry["parameters"] = params
    return entry


def build_contents(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The ``contents`` list: user/model turns; consecutive tool results become one user content
    of ``functionResponse`` parts in the order of the calls they answer. Adjacent contents of
    the same role are merged (Gemini expects turns to alternate)."""
    contents: list[dict[str, Any]] = []
    messages = list(messages)
    last_calls: tuple[ToolCall, ...] = ()
    vendor_ids: set[str] = set()
    i = 0
    while i < len(messages):
        message = messages[i]
        if message.role == "user":
            _append(contents, "user", [{"text": message.text}, *map(inline_data, message.images)])
            i += 1
        elif message.role == "assistant":
            parts, ids = model_parts(message)
            vendor_ids |= ids
            last_calls = message.tool_calls
            if parts:
                _append(contents, "model", parts)
            i += 1
        elif message.role == "tool":
            run = []
            while i < len(messages) and messages[i].role == "tool":
                run.append(messages[i])
                i += 1
            images = [part for result in run for image in result.images for part in ({"text": image.caption}, inline_data(image))]
            _append(contents, "user", function_responses(run, last_calls, vendor_ids) + images)
        else:
            raise ValueError(f"unknown message role {message.role!r}")
    return contents


def inline_data(image: Image) -> dict[str, Any]:
    return {"inlineData": {"mimeType": image.mime_type, "data": image.data}}


def _append(contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": list(parts)})


def function_responses(
    results: list[Message], calls: tuple[ToolCall, ...], vendor_ids: set[str]
) -> list[dict[str, Any]]:
    """``functionResponse`` parts for tool results, ordered like ``calls``; results for calls
    not in ``calls`` follow in their own order. The id goes back only when Gemini sent it."""
    order = {call.id: n for n, call in enumerate(calls)}
    names = {call.id: call.name for call in calls}
    ranked = sorted(
        enumerate(results),
        key=lambda item: (order.get(item[1].tool_call_id or "", len(order)), item[0]),
    )
    parts = []
    for _, result in ranked:
        call_id = result.tool_call_id or ""
        response: dict[str, Any] = {
            "name": names.get(call_id) or result.name or "unknown",
            "response": {"output": result.text},
        }
        if call_id in vendor_ids:
            response["id"] = call_id
        parts.append({"functionResponse": response})
    return parts


def _function_call_part(call: ToolCall, layout: dict[str, Any] | None) -> dict[str, Any]:
    fc: dict[str, Any] = {"name": call.name, "args": arguments_object(call.arguments) or {}}
    if layout and layout.get("vendorId"):
        fc["id"] = call.id
    part: dict[str, Any] = {"functionCall": fc}
    if layout and isinstance(layout.get("thoughtSignature"), str):
        part["thoughtSignature"] = layout["thoughtSignature"]
    return part


def _layout(message: Message) -> list[dict[str, Any]] | None:
    replay = message.replay
    if not isinstance(replay, dict):
        return None
    state = replay.get(STATE_KEY)
    parts = state.get("parts") if isinstance(state, dict) else None
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        return None
    return parts


def model_parts(message: Message) -> tuple[list[dict[str, Any]], set[str]]:
    """The ``model`` content parts for an assistant message, and the vendor call ids in it.

    With a replay layout (this provider's StateChunk) whose text and reasoning lengths still
    match the message, the parts are rebuilt one for one, each signature on its own part;
    signed thought parts are sent back, unsigned ones are not. Without one (or if the text no
    longer matches): one text part (carrying the first text signature, if any) and one
    ``functionCall`` part per call, each with its own signature.
    """
    layout = _layout(message)
    by_id = {
        entry["call"]: entry for entry in layout or () if isinstance(entry.get("call"), str)
    }
    vendor_ids = {cid for cid, entry in by_id.items() if entry.get("vendorId")}
    calls = {call.id: call for call in message.tool_calls}
    parts: list[dict[str, Any]] = []
    if layout is not None and _lengths_match(layout, message):
        text_at = thought_at = 0
        used: set[str] = set()
        for entry in layout:
            sig = entry.get("thoughtSignature") if isinstance(entry.get("thoughtSignature"), str) else None
            if isinstance(entry.get("text"), int):
                chunk = message.text[text_at : text_at + entry["text"]]
                text_at += entry["text"]
                if chunk or sig:
                    part: dict[str, Any] = {"text": chunk}
                    if sig:
                        part["thoughtSignature"] = sig
                    parts.append(part)
            elif isinstance(entry.get("thought"), int):
                chunk = message.reasoning[thought_at : thought_at + entry["thought"]]
                thought_at += entry["thought"]
                if sig:
                    parts.append({"text": chunk, "thought": True, "thoughtSignature": sig})
            elif isinstance(entry.get("call"), str) and entry["call"] in calls:
                if entry["call"] in used:
                    continue
                used.add(entry["call"])
                parts.append(_function_call_part(calls[entry["call"]], entry))
        parts.extend(
            _function_call_part(call, by_id.get(call.id))
            for call in message.tool_calls
            if call.id not in used
        )
        return parts, vendor_ids
    text_sig = next(
        (
            e["thoughtSignature"]
            for e in layout or ()
            if isinstance(e.get("text"), int) and isinstance(e.get("thoughtSignature"), str)
        ),
        None,
    )
    if message.text or text_sig:
        part = {"text": message.text}
        if text_sig:
            part["thoughtSignature"] = text_sig
        parts.append(part)
    parts.extend(_function_call_part(call, by_id.get(call.id)) for call in message.tool_calls)
    return parts, vendor_ids


def _lengths_match(layout: list[dict[str, Any]], message: Message) -> bool:
    text = sum(e["text"] for e in layout if isinstance(e.get("text"), int))
    thought = sum(e["thought"] for e in layout if isinstance(e.get("thought"), int))
    return text == len(message.text) and thought == len(message.reasoning)


# ---------------------------------------------------------------------------------------------
# Stream parsing
# ---------------------------------------------------------------------------------------------


_NO_VALUE = object()


def _partial_value(partial: wire.PartialArg) -> Any:
    if "stringValue" in partial:
        return partial["stringValue"]
    if "numberValue" in partial:
        number = partial["numberValue"]
        if isinstance(number, float) and math.isfinite(number) and number.is_integer():
            return int(number)
        return number
    if "boolValue" in partial:
        return partial["boolValue"]
    if "nullValue" in partial:
        return None
    return _NO_VALUE


_PATH_NAME = re.compile(r"\.([A-Za-z0-9_$\-]+)")
# An index of more than 9 digits is no list Gemini streams (and int() refuses 4,300 digits).
_PATH_INDEX = re.compile(r"\[(\d{1,9})\]")
_PATH_QUOTED = re.compile(r"""\[(['"])((?:\\.|(?!\1).)*)\1\]""")


def parse_json_path(path: str) -> list[str | int]:
    """``$.a.b[0]['c d']`` -> ``["a", "b", 0, "c d"]`` (the RFC 9535 forms Gemini uses)."""
    if not isinstance(path, str) or not path.startswith("$"):
        raise MalformedStream(f"partial argument path is not a JSON path: {path!r:.200}")
    steps: list[str | int] = []
    at = 1
    while at < len(path):
        for pattern in (_PATH_NAME, _PATH_INDEX, _PATH_QUOTED):
            match = pattern.match(path, at)
            if match:
                break
        else:
            raise MalformedStream(f"unsupported JSON path {path!r:.200}")
        if pattern is _PATH_NAME:
            steps.append(match.group(1))
        elif pattern is _PATH_INDEX:
            steps.append(int(match.group(1)))
        else:
            steps.append(re.sub(r"\\(.)", r"\1", match.group(2)))
        at = match.end()
    return steps


def _get(container: Any, step: str | int) -> Any:
    if isinstance(step, int):
        return container[step] if isinstance(container, list) and step < len(container) else None
    return container.get(step) if isinstance(container, dict) else None


def _set(root: dict[str, Any], steps: list[str | int], value: Any) -> None:
    if not steps:
        if isinstance(value, dict):
            root.clear()
            root.update(value)
        return
    node: Any = root
    for step, following in zip(steps, steps[1:]):
        child = _get(node, step)
        if not isinstance(child, (dict, list)):
            child = [] if isinstance(following, int) else {}
            _put(node, step, child)
        node = child
    _put(node, steps[-1], value)


MAX_INDEX_GAP = 1024
"""How far past a list's end a partial argument may write. Gemini streams list items in order
(give or take one); filling the gap up to ``$.a[99999999]`` would take gigabytes."""


def _put(node: Any, step: str | int, value: Any) -> None:
    if isinstance(step, int):
        if not isinstance(node, list):
            raise MalformedStream(f"partial argument index {step} into a non-list")
        if step > len(node) + MAX_INDEX_GAP:
            raise MalformedStream(f"partial argument index {step} far past the end of a list of {len(node)}")
        while len(node) <= step:
            node.append(None)
        node[step] = value
    else:
        if not isinstance(node, dict):
            raise MalformedStream(f"partial argument key {step!r} into a non-object")
        node[step] = value


@dataclass
class _PendingCall:
    name: str
    id: str
    vendor_id: bool
    signature: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    # Strings still streaming (``willContinue``), by JSON path: their pieces, joined once when the
    # string closes or the call ends (joining at every piece made long arguments quadratic).
    open_strings: dict[str, list[str]] = field(default_factory=dict)

    def merge(self, fc: wire.FunctionCall) -> None:
        args = fc.get("args")
        if args:
            self.args.update(args)
        for partial in fc.get("partialArgs") or ():
            path = partial.get("jsonPath", "$")
            steps = parse_json_path(path)
            value = _partial_value(partial)
            if value is _NO_VALUE:
                continue
            pieces = self.open_strings.pop(path, None)
            if isinstance(value, str) and pieces is not None:
                pieces.append(value)
                value = None
            elif isinstance(value, str):
                pieces = [value]
                _set(self.args, steps, value)  # in place now, so keys keep the order they came in
            if isinstance(pieces, list) and partial.get("willContinue"):
                self.open_strings[path] = pieces
            elif pieces is not None:
                _set(self.args, steps, "".join(pieces))
            else:
                _set(self.args, steps, value)

    def arguments(self) -> str:
        """The call's arguments as JSON text, every string still open joined."""
        for path, pieces in self.open_strings.items():
            _set(self.args, parse_json_path(path), "".join(pieces))
        self.open_strings.clear()
        return json.dumps(self.args)


class _Answer:
    """What one stream has said so far (see ``parse_stream``)."""

    def __init__(self) -> None:
        self.layout: list[dict[str, Any]] = []
        self.pending: _PendingCall | None = None
        self.calls = 0
        self.token: str | None = None
        self.usage: UsageChunk | None = None
        self.finish: str | None = None
        self.model: str | None = None

    def new_id(self, vendor_id: str | None) -> tuple[str, bool]:
        if vendor_id:
            return vendor_id, True
        if self.token is None:
            self.token = uuid.uuid4().hex[:16]
        self.calls += 1
        return f"gemini_{self.token}_{self.calls}", False

    def add_text(self, kind: str, text: str, signature: str | None) -> None:
        last = self.layout[-1] if self.layout else None
        if last is not None and kind in last and not (signature and "thoughtSignature" in last):
            last[kind] += len(text)
            if signature:
                last["thoughtSignature"] = signature
        elif text or signature:
            entry: dict[str, Any] = {kind: len(text)}
            if signature:
                entry["thoughtSignature"] = signature
            self.layout.append(entry)

    def call_part(self, fc: wire.FunctionCall, signature: str | None) -> list[ToolCallChunk]:
        """Feed one ``functionCall``; returns the ToolCallChunks of calls that just became whole
        (a named part while a call is open closes that one and starts the next)."""
        done: list[ToolCallChunk] = []
        name = fc.get("name") or ""
        named = bool(name)
        if named and self.pending is not None:
            done.append(self.close())
        if self.pending is None:
            if not named:
                if fc.get("partialArgs") or fc.get("args"):
                    raise MalformedStream(f"function call arguments without a call: {fc!r:.200}")
                return done  # a stray closing {}
            call_id, vendor = self.new_id(fc.get("id"))
            self.pending = _PendingCall(name=name, id=call_id, vendor_id=vendor)
        if signature and not self.pending.signature:
            self.pending.signature = signature
        self.pending.merge(fc)
        if not fc.get("willContinue"):
            done.append(self.close())
        return done

    def close(self) -> ToolCallChunk:
        call, self.pending = self.pending, None
        assert call is not None
        entry: dict[str, Any] = {"call": call.id}
        if call.signature:
            entry["thoughtSignature"] = call.signature
        if call.vendor_id:
            entry["vendorId"] = True
        self.layout.append(entry)
        return ToolCallChunk(ToolCall(id=call.id, name=call.name, arguments=call.arguments()))

    def state(self) -> StateChunk | None:
        if any("thoughtSignature" in e or e.get("vendorId") for e in self.layout):
            return StateChunk({STATE_KEY: {"parts": [dict(e) for e in self.layout]}})
        return None


def decode_payload(data: str) -> wire.Response:
    """One ``data:`` payload as a validated response (``wire.gemini``; a list of one is
    unwrapped), or MalformedStream saying what arrived."""
    payload = decode(wire.PAYLOAD, data, "stream payload")
    if isinstance(payload, list):
        if len(payload) != 1:
            raise MalformedStream(f"stream payload is not a JSON object: {data[:SHOWN]!r}")
        return payload[0]
    return payload


async def parse_stream(
    payloads: AsyncIterator[str], *, secrets: tuple[str | None, ...] = ()
) -> AsyncIterator[StreamChunk]:
    """``GenerateContentResponse`` payloads (SSE ``data`` strings) -> StreamChunks.

    Text and reasoning are yielded as they arrive, each tool call when whole; then one
    UsageChunk (the last usage seen), the StateChunk (when there is state) and a FinishChunk.
    """
    answer = _Answer()
    async for data in payloads:
        payload = decode_payload(data)
        if payload.get("error"):
            raise refine_error(error_from_payload(payload["error"], secrets=secrets))
        if answer.token is None and "responseId" in payload:
            answer.token = payload["responseId"] or None
        if payload.get("modelVersion"):
            answer.model = payload["modelVersion"]
        answer.usage = _usage(payload.get("usageMetadata")) or answer.usage
        feedback = payload.get("promptFeedback")
        if feedback and "blockReason" in feedback:
            answer.finish = feedback["blockReason"]
        candidates = payload.get("candidates")
        if not candidates:
            continue
        candidate = candidates[0]
        content = candidate.get("content") or {}
        for part in content.get("parts") or ():
            signature = part.get("thoughtSignature") or None
            if "functionCall" in part:
                for done in answer.call_part(part["functionCall"], signature):
                    yield done
            elif "text" in part:
                text = part["text"]
                if part.get("thought"):
                    answer.add_text("thought", text, signature)
                    if text:
                        yield ReasoningChunk(text)
                else:
                    answer.add_text("text", text, signature)
                    if text:
                        yield TextChunk(text)
        if candidate.get("finishReason"):
            answer.finish = candidate["finishReason"]
    if answer.finish is None:
        raise StreamCut("the stream ended before the answer was complete (no finishReason)")
    if answer.pending is not None:
        yield answer.close()
    if answer.usage is not None:
        yield answer.usage
    state = answer.state()
    if state is not None:
        yield state
    yield FinishChunk(reason=answer.finish, model=answer.model)


def _usage(value: wire.UsageMetadata | None) -> UsageChunk | None:
    if not value:
        return None
    prompt, candidates, thoughts = (value.get(k) for k in ("promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount"))
    if prompt is None and candidates is None and thoughts is None:
        return None
    return UsageChunk(input_tokens=prompt or 0, output_tokens=(candidates or 0) + (thoughts or 0))


# ---------------------------------------------------------------------------------------------
# Model listing
# ---------------------------------------------------------------------------------------------

_CHAT_METHODS = frozenset({"generateContent", "streamGenerateContent"})


def parse_models(entries: list[Any], provider: str) -> list[ModelInfo]:
    """``Model`` objects -> ModelInfo: id without ``models/``, ``inputTokenLimit`` as the
    window, ``thinking`` as reasoning (None when absent). Models that list
    ``supportedGenerationMethods`` without ``generateContent`` (embedding, TTS-only...) are left
    out: they cannot chat."""
    models = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        methods = entry.get("supportedGenerationMethods")
        if isinstance(methods, list) and not _CHAT_METHODS.intersection(methods):
            continue
        name = entry["name"]
        window = entry.get("inputTokenLimit")
        thinking = entry.get("thinking")
        models.append(
            ModelInfo(
                id=name.removeprefix("models/"),
                provider=provider,
                context_window=window if isinstance(window, int) and window > 0 else None,
                reasoning=thinking if isinstance(thinking, bool) else None,
                extra={k: v for k, v in entry.items() if k != "name"},
            )
        )
    return models


__all__ = [
    "DEFAULT_BASE_URL",
    "GeminiProvider",
    "build_body",
    "build_contents",
    "clean_schema",
    "model_parts",
    "parse_json_path",
    "parse_models",
    "parse_stream",
    "refine_error",
    "thinking_config",
]
