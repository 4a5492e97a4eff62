"""A LiteLLM proxy (https://docs.litellm.ai/docs/simple_proxy), kind ``litellm``.

Chat goes to the proxy's OpenAI-compatible address, ``{root}/v1/chat/completions``, with the
OpenAI wire of ``providers/openai.py``. ``base_url`` is the proxy's root, e.g.
``http://127.0.0.1:4000``; a trailing ``/v1`` is accepted and dropped. Default: port 4000 of
this computer.

Model list: ``GET {root}/model/info`` (https://docs.litellm.ai/docs/proxy/model_management)::

    {"data": [{"model_name": "qwen-small",
               "litellm_params": {"model": "ollama_chat/qwen2.5:1.5b", ...},
               "model_info": {"max_input_tokens": int|null, "max_tokens": int|null,
                              "max_output_tokens": int|null,
                              "supports_function_calling": bool|null,
                              "supports_reasoning": bool|null, "supports_vision": bool|null,
                              "input_cost_per_token": float|null,
                              "output_cost_per_token": float|null,
                              "litellm_provider": str|null, ...}}, ...]}

One entry per deployment, so a name balanced over several deployments appears several times;
the first entry of a name is the one used. ``null`` means the proxy does not know (a model Ollama
serves gets null context, tools and price), and stays None (unknown) in ``ModelInfo``. When
``/model/info`` fails (older proxy, a key limited to the OpenAI routes), ``GET {root}/v1/models``
is listed instead, with nothing but the ids.

Ollama behind the proxy (what a real proxy taught, see the seed "Providers: LiteLLM"): Ollama
cuts the prompt at its own default window (2048 or 4096 tokens) whatever the gateway says, which
drops the system prompt. When ``/model/info`` says the model behind a name is an Ollama one
(``litellm_params.model`` starting ``ollama/`` or ``ollama_chat/``), every request for that name
also carries ``num_ctx`` (the window the proxy reports, else 8192) and ``repeat_penalty`` 1.1,
which LiteLLM passes to Ollama as options; for a small model (4B parameters or fewer, read from
the tag, e.g. ``qwen2.5:1.5b``) without a ``max_tokens`` of the request, ``max_tokens`` is the
proxy's ``max_output_tokens`` or 2048, so a model that starts repeating itself stops.
The catalogue is read once per provider object, at the first request or listing.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from totem_engine.vocab.chat import ChatRequest, StreamChunk

from .base import ModelInfo
from .errors import ConnectionFailed, MalformedStream, ProviderError, ProviderTimeout
from .http import aiter_sse_data, redact
from .openai import OpenAIProvider, build_body, parse_models, parse_stream

DEFAULT_BASE_URL = "http://127.0.0.1:4000"
OLLAMA_NUM_CTX = 8192
OLLAMA_REPEAT_PENALTY = 1.1
SMALL_MODEL_MAX_TOKENS = 2048
SMALL_MODEL_BILLIONS = 4.0

_OLLAMA_PREFIXES = ("ollama/", "ollama_chat/")


@dataclass(frozen=True)
class ProxyModel:
    """One name of the proxy as ``/model/info`` describes it; None fields are unknown."""

    name: str
    underlying: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    tools: bool | None = None
    reasoning: bool | None = None
    vision: bool | None = None
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None

    @property
    def underlying_provider(self) -> str | None:
        """The LiteLLM provider prefix of the model behind the name: ``ollama_chat``, ``openai``..."""
        if self.underlying and "/" in self.underlying:
            return self.underlying.split("/", 1)[0]
        return None

    @property
    def is_ollama(self) -> bool:
        return bool(self.underlying and self.underlying.startswith(_OLLAMA_PREFIXES))

    def to_model_info(self, provider: str) -> ModelInfo:
        extra = {
            "underlying": self.underlying,
            "underlying_provider": self.underlying_provider,
            "max_output_tokens": self.max_output_tokens,
            "input_cost_per_token": self.input_cost_per_token,
            "output_cost_per_token": self.output_cost_per_token,
        }
        return ModelInfo(
            id=self.name,
            provider=provider,
            context_window=self.context_window,
            tools=self.tools,
            reasoning=self.reasoning,
            vision=self.vision,
            extra={k: v for k, v in extra.items() if v is not None},
        )


def proxy_root(base_url: str | None) -> str:
    """The proxy's root address: ``base_url`` without a trailing ``/`` or ``/v1``."""
    root = (base_url or DEFAULT_BASE_URL).rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


class LiteLLMProvider(OpenAIProvider):
    """A LiteLLM proxy; implements ``base.Provider``. See the module docstring."""

    kind = "litellm"  # the wire it speaks (base.Provider.kind)

    def __init__(
        self,
        name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        headers: dict | None = None,
        timeout: float = 300.0,
        request_timeout: float | None = None,
        client: httpx.AsyncClient | None = None,
    ):
        self.root = proxy_root(base_url)
        super().__init__(
            name, self.root + "/v1", api_key, headers=headers, timeout=timeout, request_timeout=request_timeout, client=client
        )
        self._catalogue: dict[str, ProxyModel] | None = None
        self._catalogue_lock = anyio.Lock()

    def __repr__(self) -> str:
        return f"LiteLLMProvider(name={self.name!r}, base_url={redact(self.root)!r})"

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        """Stream one answer, with the Ollama options when the name is an Ollama model."""
        body = build_body(request)
        body.update(ollama_options(await self._describe(request.model), request))
        async with self._http.post(f"{self.base_url}/chat/completions", body) as response:
            async with aclosing(aiter_sse_data(response)) as payloads:
                async for chunk in parse_stream(payloads, secrets=self._http.secrets, asked=request.model):
                    yield chunk

    async def models(self) -> list[ModelInfo]:
        """``/model/info`` with what it knows of each name; ``/v1/models`` when it fails."""
        try:
            catalogue = await self._fetch_catalogue()
        except ProviderError:
            data = await self._http.get_json(f"{self.base_url}/models")
            return parse_models(data, self.name)
        return [model.to_model_info(self.name) for model in catalogue.values()]

    async def _describe(self, model: str) -> ProxyModel | None:
        """What ``/model/info`` says of ``model``; None when unknown or the proxy cannot say.

        Read once. A proxy that cannot be reached is asked again next time (the chat request
        that follows reports the failure); any other failure is remembered as "no catalogue".
        """
        async with self._catalogue_lock:
            if self._catalogue is None:
                try:
                    await self._fetch_catalogue()
                except (ConnectionFailed, ProviderTimeout):
                    return None
                except ProviderError:
                    self._catalogue = {}
        return (self._catalogue or {}).get(model)

    async def _fetch_catalogue(self) -> dict[str, ProxyModel]:
        data = await self._http.get_json(f"{self.root}/model/info")
        self._catalogue = parse_model_info(data)
        return self._catalogue


# ---------------------------------------------------------------------------------------------
# /model/info
# ---------------------------------------------------------------------------------------------


def parse_model_info(data: Any) -> dict[str, ProxyModel]:
    """``/model/info``'s body -> name -> ProxyModel, first entry of each name kept.

    Raises MalformedStream (a ProviderError) when ``data`` is not a list, so ``models`` falls
    back to ``/v1/models``.
    """
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise MalformedStream(f"/model/info did not answer a list: {str(data)[:200]!r}")
    found: dict[str, ProxyModel] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("model_name"), str):
            continue
        name = entry["model_name"]
        if name in found:
            continue
        params = entry.get("litellm_params") if isinstance(entry.get("litellm_params"), dict) else {}
        info = entry.get("model_info") if isinstance(entry.get("model_info"), dict) else {}
        underlying = params.get("model") if isinstance(params.get("model"), str) else None
        found[name] = ProxyModel(
            name=name,
            underlying=underlying or None,
            context_window=_positive_int(info.get("max_input_tokens")) or _positive_int(info.get("max_tokens")),
            max_output_tokens=_positive_int(info.get("max_output_tokens")),
            tools=_flag(info.get("supports_function_calling")),
            reasoning=_flag(info.get("supports_reasoning")),
            vision=_flag(info.get("supports_vision")),
            input_cost_per_token=_number(info.get("input_cost_per_token")),
            output_cost_per_token=_number(info.get("output_cost_per_token")),
        )
    return found


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


# ---------------------------------------------------------------------------------------------
# Ollama behind the proxy
# ---------------------------------------------------------------------------------------------

_SIZE = re.compile(r"(?<![0-9.])(\d+(?:\.\d+)?)b(?![a-z0-9])", re.IGNORECASE)


def parameter_billions(model: str) -> float | None:
    """The parameter count in billions written in a model name (``qwen2.5:1.5b`` -> 1.5,
    ``llama3.1:8b-instruct-q4`` -> 8), or None when the name does not say."""
    tag = model.rsplit("/", 1)[-1]
    sizes = [float(m.group(1)) for m in _SIZE.finditer(tag)]
    return sizes[-1] if sizes else None


def ollama_options(model: ProxyModel | None, request: ChatRequest) -> dict[str, Any]:
    """The extra request fields for a name served by Ollama (empty for anything else)."""
    if model is None or not model.is_ollama:
        return {}
    num_ctx = model.context_window or OLLAMA_NUM_CTX
    options: dict[str, Any] = {"num_ctx": num_ctx, "repeat_penalty": OLLAMA_REPEAT_PENALTY}
    size = parameter_billions(model.underlying or "")
    if request.max_tokens is None:
        limit = model.max_output_tokens
        if limit is None and size is not None and size <= SMALL_MODEL_BILLIONS:
            limit = SMALL_MODEL_MAX_TOKENS
        if limit is not None:
            # Never more than half the window: the prompt needs the rest.
            options["max_tokens"] = min(limit, max(1, num_ctx // 2))
    return options


__all__ = [
    "DEFAULT_BASE_URL",
    "LiteLLMProvider",
    "ProxyModel",
    "ollama_options",
    "parameter_billions",
    "parse_model_info",
    "proxy_root",
]
