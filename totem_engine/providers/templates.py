"""Provider templates: a name the user types that presets a ``kind`` and a base URL.

``totem providers add TEMPLATE NAME`` turns one into a ``[providers.NAME]`` table; nothing else
in the engine reads templates, so a provider added from one is an ordinary provider afterwards.
A template with ``probe`` set is also a server Totem looks for on this computer
(``providers/local.py``, shown by ``totem models``).

``base_url`` None means "the kind's usual address" (the provider module's default), used for the
vendors with a provider of their own (Anthropic, Gemini, Ollama), so the address lives in one
place. Every other template speaks the OpenAI-compatible wire (``kind = "openai"``).

Where each address was checked (2026-11, vendor pages found with the docs search; none has been
tried with a key from Totem):

============  ==========================================  =======================================
template      base URL                                    checked against
============  ==========================================  =======================================
openai        https://api.openai.com/v1                   platform.openai.com API reference
xai           https://api.x.ai/v1                         docs.x.ai (integrations page)
fireworks     https://api.fireworks.ai/inference/v1       Fireworks pages quoted by pipecat,
                                                          strands (not the vendor's own page)
cerebras      https://api.cerebras.ai/v1                  inference-docs.cerebras.ai via BAML,
                                                          pipecat
huggingface   https://router.huggingface.co/v1            huggingface.co Inference Providers docs
nvidia        https://integrate.api.nvidia.com/v1         build.nvidia.com (API catalog)
moonshot      https://api.moonshot.ai/v1                  platform.kimi.ai overview (global host;
                                                          China: api.moonshot.cn/v1)
cohere        https://api.cohere.ai/compatibility/v1      docs.cohere.com/docs/compatibility-api
openrouter    https://openrouter.ai/api/v1                openrouter.ai model API pages
deepseek      https://api.deepseek.com                    api-docs.deepseek.com (first call page;
                                                          /v1 is accepted too)
groq          https://api.groq.com/openai/v1              console.groq.com/docs/openai
lmstudio      http://127.0.0.1:1234/v1                    lmstudio.ai OpenAI-compatible endpoints
llamacpp      http://127.0.0.1:8080/v1                    llama-server docs (default port 8080)
vllm          http://127.0.0.1:8000/v1                    docs.vllm.ai OpenAI-compatible server
litellm       http://127.0.0.1:4000                       docs.litellm.ai proxy (port 4000)
============  ==========================================  =======================================

Quirks are recorded, not yet acted on (``ProviderConfig`` has no field for them): Cohere's
compatibility API is reported (strands-agents docs, not Cohere's) to reject ``stream_options``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from totem_engine.config import ProviderKind


@dataclass(frozen=True)
class LocalProbe:
    """Where a server of this template answers on this computer: a port and a cheap GET path."""

    port: int
    path: str


@dataclass(frozen=True)
class ProviderTemplate:
    name: str
    label: str
    kind: ProviderKind
    base_url: str | None
    needs_key: bool = True
    asks_url: bool = False
    probe: LocalProbe | None = None
    quirks: tuple[str, ...] = ()
    note: str = ""


TEMPLATES: tuple[ProviderTemplate, ...] = (
    ProviderTemplate("openai", "OpenAI", "openai", "https://api.openai.com/v1"),
    ProviderTemplate("anthropic", "Anthropic", "anthropic", None),
    ProviderTemplate("gemini", "Google Gemini", "gemini", None),
    ProviderTemplate(
        "ollama", "Ollama (this computer)", "ollama", None, needs_key=False, probe=LocalProbe(11434, "/api/tags")
    ),
    ProviderTemplate(
        "litellm",
        "LiteLLM proxy",
        "litellm",
        "http://127.0.0.1:4000",
        probe=LocalProbe(4000, "/v1/models"),
        note="the key is the proxy's master key or a virtual key; empty when the proxy has none",
    ),
    ProviderTemplate(
        "vllm", "vLLM", "openai", "http://127.0.0.1:8000/v1", needs_key=False, probe=LocalProbe(8000, "/v1/models")
    ),
    ProviderTemplate("xai", "xAI", "openai", "https://api.x.ai/v1"),
    ProviderTemplate("fireworks", "Fireworks", "openai", "https://api.fireworks.ai/inference/v1"),
    ProviderTemplate("cerebras", "Cerebras", "openai", "https://api.cerebras.ai/v1"),
    ProviderTemplate("huggingface", "Hugging Face Inference Providers", "openai", "https://router.huggingface.co/v1"),
    ProviderTemplate("nvidia", "NVIDIA NIM (API catalog)", "openai", "https://integrate.api.nvidia.com/v1"),
    ProviderTemplate("moonshot", "Moonshot (Kimi)", "openai", "https://api.moonshot.ai/v1"),
    ProviderTemplate(
        "cohere",
        "Cohere (compatibility API)",
        "openai",
        "https://api.cohere.ai/compatibility/v1",
        quirks=("no_stream_options",),
    ),
    ProviderTemplate("openrouter", "OpenRouter", "openai", "https://openrouter.ai/api/v1"),
    ProviderTemplate("deepseek", "DeepSeek", "openai", "https://api.deepseek.com"),
    ProviderTemplate("groq", "Groq", "openai", "https://api.groq.com/openai/v1"),
    ProviderTemplate(
        "lmstudio", "LM Studio", "openai", "http://127.0.0.1:1234/v1", needs_key=False, probe=LocalProbe(1234, "/v1/models")
    ),
    ProviderTemplate(
        "llamacpp",
        "llama.cpp (llama-server)",
        "openai",
        "http://127.0.0.1:8080/v1",
        needs_key=False,
        probe=LocalProbe(8080, "/v1/models"),
    ),
    ProviderTemplate(
        "other",
        "Other OpenAI-compatible server",
        "openai",
        None,
        asks_url=True,
        note="give the address with its version prefix, e.g. http://host:port/v1",
    ),
)

_BY_NAME = {t.name: t for t in TEMPLATES}


def _normal(name: str) -> str:
    # "LM Studio", "lm-studio", "llama.cpp", "Hugging_Face" all find their template.
    return re.sub(r"[^a-z0-9]", "", name.lower())


def find_template(name: str) -> ProviderTemplate | None:
    """The template called ``name`` (case, spaces, dots, dashes and underscores ignored)."""
    return _BY_NAME.get(_normal(name))


def local_templates() -> tuple[ProviderTemplate, ...]:
    """Templates of servers that may run on this computer, in the order they are probed."""
    return tuple(t for t in TEMPLATES if t.probe is not None)


__all__ = ["TEMPLATES", "LocalProbe", "ProviderTemplate", "find_template", "local_templates"]
