"""Totem's own local model: llama.cpp's ``llama-server`` built on this machine and a small coding
model, all under ``local_dir`` (docs/local.md).

- ``build``: ``totem local setup``, in resumable stages;
- ``model``: what is installed and where (``LocalPaths``), the model's checks;
- ``server``: the server process, its state file and the leases of Totem processes.

The embedded default: with no model configured (or ``model = "local/..."`` and no
``[providers.local]`` of the user's) and a finished setup, ``ensure_local_provider`` starts the
server when none runs and returns a ``local`` provider of kind ``openai`` at its address;
``release_local_provider`` at the end of the run stops it when this process started it and no
other Totem process holds a lease (docs/decisions.md).
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path

from totem_engine.config import Config, ModelOverride, ProviderConfig

from .model import DEFAULT_CTX, MODEL_ID, SetupError, installed, local_dir_from
from .server import LocalServerError, acquire_lease, release_lease
from .server import start as start_server

PROVIDER_NAME = "local"

__all__ = [
    "MODEL_ID",
    "PROVIDER_NAME",
    "LocalServerError",
    "SetupError",
    "apply_local_default",
    "ensure_local_provider",
    "release_local_provider",
    "wants_local",
]

# local_dir roots this process holds a lease on.
_held: set[Path] = set()


def wants_local(config: Config, spec: str | None = None) -> str | None:
    """The model id to serve locally when ``spec`` (default ``config.model``) asks for the
    built-in local provider: no model at all (the default model's id), or ``"local/<id>"``
    while the config has no ``[providers.local]`` of its own. Otherwise None."""
    spec = spec if spec is not None else config.model
    if PROVIDER_NAME in config.providers:
        return None
    if spec is None:
        return ""
    provider, _, model_id = spec.partition("/")
    return model_id if provider == PROVIDER_NAME and model_id else None


def ensure_local_provider(config: Config, spec: str | None = None) -> tuple[str, ProviderConfig, str] | None:
    """``("local", ProviderConfig(kind="openai", base_url=...), model id)`` when the local model
    should serve this run (``wants_local``) and setup has finished; None otherwise.

    Starts the server when none answers (blocking, 1-2 s with the default model; call it through
    ``anyio.to_thread.run_sync`` from async code) and takes a lease for this process; call
    ``release_local_provider`` when done (it is also registered with atexit).
    Raises LocalServerError when the server cannot be started."""
    wanted = wants_local(config, spec)
    if wanted is None:
        return None
    root = local_dir_from(config)
    install = installed(root)
    if install is None:
        return None
    ctx = getattr(config, "local_ctx", None) or DEFAULT_CTX
    acquire_lease(root)
    if not _held:
        atexit.register(release_local_provider)
    _held.add(root)
    try:
        state, _started = start_server(root, install, port=getattr(config, "local_port", None), ctx=ctx, owner=os.getpid())
    except BaseException:
        release_local_provider()
        raise
    settings = ProviderConfig(kind="openai", base_url=state.base_url, temperature=config.local_temperature)
    return PROVIDER_NAME, settings, wanted or state.model_id


def apply_local_default(config: Config, spec: str | None = None) -> str | None:
    """``ensure_local_provider``, then put its result into ``config`` (``providers.local``, a
    ``models."local/<id>"`` window of ``local_ctx`` unless one is set, and ``model`` when none
    was set). Returns the model spec to use, or None when the local model does not apply."""
    found = ensure_local_provider(config, spec)
    if found is None:
        return None
    name, settings, model_id = found
    full = f"{name}/{model_id}"
    config.providers[name] = settings
    if full not in config.models:
        config.models[full] = ModelOverride(context_window=getattr(config, "local_ctx", None) or DEFAULT_CTX)
    if config.model is None:
        config.model = full
    return full


def release_local_provider() -> None:
    """Release this process's leases; stops a server it started when no one else uses it."""
    while _held:
        root = _held.pop()
        try:
            release_lease(root)
        except OSError:
            pass
