"""``totem local setup|start|stop|status``: Totem's own local model (docs/local.md).

Exit codes: 0 done (``status``: the server runs), 1 a failure (setup, start), 2 usage or config
error, 3 ``status`` when the server does not run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_NOT_RUNNING = 3


def add_subcommands(sub: argparse._SubParsersAction, command: str | None) -> None:
    """``local``; its actions only when it is the ``command`` given (main.build_parser)."""
    local = sub.add_parser("local", help="build and run Totem's own local model (llama-server and a small coding model)")
    local.add_argument("--config", type=Path, default=None, help="a config file applied after the user's")
    if command != "local":
        return
    actions = local.add_subparsers(dest="action", required=True)
    setup = actions.add_parser("setup", help="build llama-server, install the model and measure its speed (resumable; the build takes minutes)")
    setup.add_argument("--gguf", type=Path, default=None, help="use this GGUF model file instead of downloading the default one")
    setup.add_argument("--jobs", type=int, default=None, help="parallel build jobs (default: every core)")
    start = actions.add_parser("start", help="start the local server on loopback and wait until it is ready")
    start.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: local_port, else a free one)")
    actions.add_parser("stop", help="stop the local server")
    actions.add_parser("status", help="what is installed, its disk use and measured speed, and whether the server runs")


def run(args: argparse.Namespace) -> int:
    from totem_engine.api.local import local_dir_from
    from totem_engine.api.setup import load_config

    config = load_config(None, config_file=args.config).config
    root = local_dir_from(config)
    return {"setup": _setup, "start": _start, "stop": _stop, "status": _status}[args.action](args, config, root)


def _setup(args: argparse.Namespace, config, root: Path) -> int:
    from totem_engine.api.local import BenchmarkError, Setup, SetupError, benchmark

    print(f"totem local setup: into {root}", file=sys.stderr)
    try:
        install = Setup(root, gguf=args.gguf, jobs=args.jobs).run()
    except SetupError as exc:
        print(f"totem local setup: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ntotem local setup: interrupted; run it again to resume", file=sys.stderr)
        return 130
    print(f"ready: local/{install.model_id}")
    print(f"  server  {install.binary}")
    print(f"  model   {install.model}")
    print(f"  disk    {_disk_line(root, install)}")
    print("measuring the server's speed on this machine (a short benchmark)...", file=sys.stderr)
    try:
        speed = benchmark(root, install, port=config.local_port, ctx=config.local_ctx)
        print(f"  speed   {speed.line()}")
    except BenchmarkError as exc:
        if not exc.server_ran:
            # A server that does not start here is not ready, whatever the build said.
            print(f"totem local setup: the server was built but does not run on this machine: {exc}", file=sys.stderr)
            return 1
        print(f"  speed   not measured: {exc}")
    print("With no model configured, `totem run` and `totem lsp` now use it; `totem local start` keeps it running.")
    return 0


def _disk_line(root: Path, install) -> str:
    """``1.1 GB (model 1.1 GB, server 9 MB)``: what ``local_dir`` holds, and a model of the
    user's (``--gguf``) kept elsewhere."""
    from totem_engine.api.local import LocalPaths, disk_use, human_size

    paths = LocalPaths(root)
    model = install.model if install is not None else None
    inside = model is not None and model.is_relative_to(root)
    parts = [
        ("model", disk_use(model) if inside else 0),
        ("server", disk_use(paths.server_binary)),
        ("downloads, sources and build", sum(disk_use(path) for path in paths.setup_leftovers())),
    ]
    line = human_size(disk_use(root))
    shown = ", ".join(f"{name} {human_size(size)}" for name, size in parts if size)
    line += f" ({shown})" if shown else ""
    if model is not None and not inside:
        line += f"; the model, outside it: {human_size(disk_use(model))}"
    return line


def _start(args: argparse.Namespace, config, root: Path) -> int:
    from totem_engine.api.local import LocalServerError, adopt, installed, start

    install = installed(root)
    if install is None:
        print(f"totem local start: nothing is set up in {root}; run `totem local setup` first", file=sys.stderr)
        return 1
    try:
        state, started = start(root, install, port=args.port or config.local_port, ctx=config.local_ctx, owner=None)
    except LocalServerError as exc:
        print(f"totem local start: {exc}", file=sys.stderr)
        return 1
    if not started and state.owner is not None:
        state = adopt(root, state)  # started on demand by a run: the user's from now on
    verb = "started" if started else "already running"
    print(f"{verb}: local/{state.model_id} at {state.base_url} (pid {state.pid}, context {state.ctx})")
    return 0


def _stop(args: argparse.Namespace, config, root: Path) -> int:
    from totem_engine.api.local import stop

    print("stopped" if stop(root) else "not running")
    return 0


def _status(args: argparse.Namespace, config, root: Path) -> int:
    from totem_engine.api.local import (
        LocalPaths,
        installed,
        last_speed,
        live_leases,
        status,
    )

    paths = LocalPaths(root)
    install = installed(root)
    print(f"local_dir  {root}")
    if install is None:
        done = [s for s in ("source", "extract", "configure", "build", "download", "model") if paths.read_marker(s)]
        print("installed  no" + (f" (finished stages: {', '.join(done)}; `totem local setup` resumes)" if done else " (run `totem local setup`)"))
    else:
        print(f"installed  local/{install.model_id}")
        print(f"  server   {install.binary}")
        print(f"  model    {install.model}")
    if root.is_dir():
        print(f"disk       {_disk_line(root, install)}")
    if install is not None:
        speed = last_speed(root)
        print(f"speed      {speed.line()}" if speed else "speed      not measured (`totem local setup` measures it)")
    current = status(root)
    if current.state is None or not current.alive:
        print("server     not running")
        return EXIT_NOT_RUNNING
    state = current.state
    health = "ready" if current.healthy else "not answering /health"
    owner = "started by `totem local start`" if state.owner is None else f"started on demand by pid {state.owner}"
    print(f"server     {health} at {state.base_url} (pid {state.pid}, context {state.ctx}, {owner})")
    leases = live_leases(root)
    if leases:
        print(f"  used by  pids {', '.join(map(str, leases))}")
    return 0 if current.healthy else EXIT_NOT_RUNNING
