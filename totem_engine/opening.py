"""Opening and closing one project's runtime, behind ``api.engine.open_project`` (the one way a
front end opens a project).

``open_runtime`` loads the config layers, restricts an untrusted project's own layer (asking the
user when the front end can; a project with agent or command files or MCP servers is asked
like one with a config: each can start a program or widen permissions), puts Totem's local
model in when no model is configured, and builds the ``Runtime``; leaving it closes what it opened: the providers, its own store (not one that
was passed in) and its lease on the local model's server.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from totem_engine.agents import project_files
from totem_engine.config import load_config
from totem_engine.local import LocalLease, with_local_default
from totem_engine.mcp.specs import ServerSpec, project_mcp_path
from totem_engine.runtime import Runtime
from totem_engine.store import Store
from totem_engine.tools.command_runner import CommandRunner
from totem_engine.trust import AskTrust, apply_trust, is_trusted
from totem_engine.workspace.files import Workspace


@contextlib.asynccontextmanager
async def open_runtime(
    root: Path,
    *,
    config_file: Path | None = None,
    editor_settings: dict[str, Any] | None = None,
    ask_trust: AskTrust | None = None,
    model: str | None = None,
    start_local: bool = True,
    store: Store | None = None,
    workspace: Workspace | None = None,
    holder: str = "totem",
    command_runner: CommandRunner | None = None,
    mcp_servers: list[ServerSpec] | None = None,
    extra_roots: Sequence[Path] = (),
) -> AsyncIterator[Runtime]:
    """The engine of the project at ``root``, open for the ``async with`` block.

    ``config_file`` (``--config``) and ``editor_settings`` are the front end's config layers
    (config.load_config). ``ask_trust(root, reasons)`` asks whether to trust the project; None
    leaves an untrusted project restricted; the notice to show is ``runtime.trust_notice``.
    ``model`` is the front end's choice of model over the config's: when it is None or
    ``local/...`` and ``start_local``, the local model is used if the config names no model of its
    own and setup has finished (its server started if needed, for as long as the block runs).
    ``store`` is shared and left open; without one the runtime opens and closes its own.
    ``holder`` names the front end in the leases its turns take ("totem run"; leases.py).
    ``command_runner``: where the session's commands run instead of in Totem (an ACP client's
    terminal); ``mcp_servers``: the client's own servers, beside the config's; ``extra_roots``:
    the folders the session reaches besides ``root`` (Runtime).

    Raises ConfigError (a config that does not load) and LocalServerError (the local model's
    server cannot be started).
    """
    files = await anyio.to_thread.run_sync(
        lambda: [*project_files(root, "agents"), *project_files(root, "commands"), *_mcp_file(root)]
    )
    read = load_config(root, config_file=config_file, editor_settings=editor_settings)
    loaded, notice = await apply_trust(root, read, ask_trust, files=files)
    trusted = await is_trusted(root)
    lease: LocalLease | None = None
    if start_local and (model is None or model.startswith("local/")):
        found = await anyio.to_thread.run_sync(with_local_default, loaded.config, model)
        if found is not None:
            config, _spec, lease = found
            loaded = replace(loaded, config=config)
    try:
        runtime = Runtime(
            root, loaded, store=store, workspace=workspace, trust_notice=notice, trusted=trusted, holder=holder,
            command_runner=command_runner, read_layers=read.layers, extra_roots=extra_roots,
        )
        runtime.mcp.join(mcp_servers or [])
        try:
            yield runtime
        finally:
            with anyio.CancelScope(shield=True):
                await (runtime.close_providers() if store is not None else runtime.aclose())
    finally:
        if lease is not None:
            lease.release()


def _mcp_file(root: Path) -> list[str]:
    """``.totem/mcp.json`` when the project has one: its servers are programs it would start."""
    return [".totem/mcp.json"] if project_mcp_path(root).is_file() else []
