"""Totem's own local model: llama.cpp's ``llama-server`` built on this machine and a small coding
model, all under ``local_dir`` (docs/local.md).

- ``build``: ``totem local setup``, in resumable stages;
- ``model``: what is installed and where (``LocalPaths``), the model's checks;
- ``server``: the server process, its state file and the leases of Totem processes.

The embedded default: with no model configured (or ``model = "local/..."`` and no
``[providers.local]`` of the user's) and a finished setup, ``ensure_local_provider`` starts the
server when none runs and returns a ``local`` provider of kind ``openai`` at its address, with a
``LocalLease``; releasing the lease when what opened it closes stops the server when this process
started it and no other Totem process holds a lease (docs/decisions.md).
"""

from __future__ import annotations

import atexit
import os
from collections import Counter
from pathlib import Path

from totem_engine.config import Config, ModelOverride, ProviderConfig

from .errors import LocalServerError
from .model import DEFAULT_CTX, MODEL_ID, SetupError, installed, local_dir_from

PROVIDER_NAME = "local"

__all__ = [
    "MODEL_ID",
    "PROVIDER_NAME",
    "LocalLease",
    "LocalServerError",
    "SetupError",
    "ensure_local_provider",
    "wants_local",
    "with_local_default",
]

# Open leases of this process per local_dir: its lease file (one per pid, server.py) goes when
# the last of them is released, so one opened project closing cannot stop another's server.
_open: Counter[Path] = Counter()


class LocalLease:
    """One opened project's hold on the local server of ``root`` (a ``local_dir``).

    ``release()`` drops it (once; later calls do nothing); the last release of this process
    drops its lease file, which stops a server this process started when no other Totem process
    holds a lease. A lease still held when the process exits is released then (atexit).
    """

    def __init__(self, root: Path):
        self.root = root
        if not _open[root]:
            from .server import acquire_lease

            acquire_lease(root)
        _open[root] += 1
        self._held = True
        atexit.register(self.release)

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        atexit.unregister(self.release)
        _open[self.root] -= 1
        if _open[self.root]:
            return
        del _open[self.root]
        from .server import release_lease

        try:
            release_lease(self.root)
        except OSError:
            pass


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


def ensure_local_provider(config: Config, spec: str | None = None) -> tuple[str, ProviderConfig, str, LocalLease] | None:
    """``("local", ProviderConfig(kind="openai", base_url=...), model id, lease)`` when the local
    model should serve this run (``wants_local``) and setup has finished; None otherwise.

    Starts the server when none answers (blocking, 1-2 s with the default model; call it through
    ``anyio.to_thread.run_sync`` from async code) and takes a lease, which the caller releases
    when done with the server. Raises LocalServerError when the server cannot be started."""
    wanted = wants_local(config, spec)
    if wanted is None:
        return None
    root = local_dir_from(config)
    install = installed(root)
    if install is None:
        return None
    # Here, not at the top: a run of a hosted model never loads the server's process code.
    from .server import start as start_server

    ctx = getattr(config, "local_ctx", None) or DEFAULT_CTX
    lease = LocalLease(root)
    try:
        state, _started = start_server(root, install, port=getattr(config, "local_port", None), ctx=ctx, owner=os.getpid())
    except BaseException:
        lease.release()
        raise
    settings = ProviderConfig(kind="openai", base_url=state.base_url, temperature=config.local_temperature)
    return PROVIDER_NAME, settings, wanted or state.model_id, lease


def with_local_default(config: Config, spec: str | None = None) -> tuple[Config, str, LocalLease] | None:
    """``ensure_local_provider``, then a copy of ``config`` with its result (``providers.local``,
    a ``models."local/<id>"`` window of ``local_ctx`` unless one is set, and ``model`` when none
    was set), the model spec to use and the lease. None when the local model does not apply;
    ``config`` itself is left as it was."""
    found = ensure_local_provider(config, spec)
    if found is None:
        return None
    name, settings, model_id, lease = found
    full = f"{name}/{model_id}"
    models = dict(config.models)
    models.setdefault(full, ModelOverride(context_window=getattr(config, "local_ctx", None) or DEFAULT_CTX))
    update = {"providers": {**config.providers, name: settings}, "models": models}
    if config.model is None:
        update["model"] = full
    return config.model_copy(update=update), full, lease
