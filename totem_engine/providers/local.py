"""Model servers on this computer, found by asking the usual ports of loopback.

Each template with a ``probe`` (``providers/templates.py``) is asked once, all at the same time,
with a short timeout (0.5 s), so a search costs at most about half a second:

==========  =====  ===============  =====================================
template    port   path             answer
==========  =====  ===============  =====================================
ollama      11434  ``/api/tags``    ``{"models": [{"name": ...}]}``
litellm     4000   ``/v1/models``   ``{"data": [{"id": ...}]}``
vllm        8000   ``/v1/models``   same
lmstudio    1234   ``/v1/models``   same
llamacpp    8080   ``/v1/models``   same
==========  =====  ===============  =====================================

A 200 with that shape means "there, with these models". A 401 or 403 means "there, needs a key"
(a LiteLLM proxy with a master key answers 401; it is added with ``totem providers add litellm``
and its key). Anything else (no answer, another status, a body of another shape, e.g. some other
web server on 8080) means "not there". No key is ever sent: this is a search, not a use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import httpx

from totem_engine import json_in
from .templates import ProviderTemplate, local_templates

PROBE_TIMEOUT = 0.5
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class LocalServer:
    """A server that answered. ``address`` is ``http://127.0.0.1:<port>``, without a path."""

    template: str
    label: str
    address: str
    status: Literal["ok", "needs_key"]
    models: tuple[str, ...] = ()


async def find_local_servers(
    ports: Mapping[str, int] | None = None,
    *,
    host: str = LOOPBACK,
    timeout: float = PROBE_TIMEOUT,
    templates: Iterable[ProviderTemplate] | None = None,
) -> list[LocalServer]:
    """The servers that answered, in template order. ``ports`` replaces a template's usual port
    (``{"ollama": 11500}``), for servers started elsewhere and for tests."""
    chosen = [t for t in (templates if templates is not None else local_templates()) if t.probe is not None]
    ports = dict(ports or {})
    results: list[LocalServer | None] = [None] * len(chosen)
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=False) as client:

        async def probe(index: int, template: ProviderTemplate) -> None:
            assert template.probe is not None
            port = ports.get(template.name, template.probe.port)
            with anyio.move_on_after(timeout * 2):
                results[index] = await _probe(client, template, f"http://{host}:{port}")

        async with anyio.create_task_group() as group:
            for index, template in enumerate(chosen):
                group.start_soon(probe, index, template)
    return [found for found in results if found is not None]


async def _probe(client: httpx.AsyncClient, template: ProviderTemplate, address: str) -> LocalServer | None:
    assert template.probe is not None
    try:
        response = await client.get(address + template.probe.path, headers={"Accept": "application/json"})
    except httpx.HTTPError:
        return None
    if response.status_code in (401, 403):
        return LocalServer(template.name, template.label, address, "needs_key")
    if response.status_code != 200:
        return None
    try:
        models = _model_names(json_in.loads(response.content, what="the model list"), native_ollama=template.probe.path == "/api/tags")
    except ValueError:
        return None
    if models is None:
        return None
    return LocalServer(template.name, template.label, address, "ok", tuple(models))


def _model_names(data: Any, *, native_ollama: bool) -> list[str] | None:
    """Model names from an Ollama ``/api/tags`` or OpenAI ``/v1/models`` body; None when the body
    has neither shape (so it is some other server)."""
    key, field = ("models", "name") if native_ollama else ("data", "id")
    entries = data.get(key) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    return [e[field] for e in entries if isinstance(e, dict) and isinstance(e.get(field), str)]


__all__ = ["LOOPBACK", "PROBE_TIMEOUT", "LocalServer", "find_local_servers"]
