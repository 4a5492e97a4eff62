"""``totem models``: the models each configured provider serves (``Engine.models()``), Totem's own
local model when it is set up, and the model servers found on this computer that are not
configured yet (``--no-local``: not looked for).

One line a model, ``provider/model<TAB>context window``. Exit codes: 0 listed, 1 nothing to list
(no provider answered, nothing local), 2 usage or config error.
"""

from __future__ import annotations

import argparse
import sys

from totem_cli.exits import EXIT_ERROR


async def models_command(args: argparse.Namespace) -> int:
    from totem_cli.target import project_root, say_notices
    from totem_engine.api.engine import open_project

    async with open_project(project_root(args), holder="totem models", config_file=args.config, start_local=False) as engine:
        say_notices(engine)
        providers = engine.config.providers
        own = _installed_local_line(engine.config)
        if own:
            print(own)
        local = await _local_servers(args, providers)
        if not providers:
            _print_local(local)
            if local or own:
                return 0
            print("No providers configured. Add a [providers.<name>] table to your config (see docs/config.md),"
                  " or run: totem providers add TEMPLATE NAME", file=sys.stderr)
            return EXIT_ERROR
        failures = 0
        for name, found in (await engine.models()).items():
            if isinstance(found, Exception):
                failures += 1
                print(f"{name}: {type(found).__name__}: {getattr(found, 'message', None) or found}", file=sys.stderr)
                continue
            for info in found:
                window = f"\t{info.context_window}" if info.context_window else ""
                print(f"{name}/{info.id}{window}")
        _print_local(local)
    return EXIT_ERROR if failures == len(providers) and not local and not own else 0


def local_port(value: str) -> tuple[str, int]:
    """``--local-port TEMPLATE=PORT`` as an argparse type."""
    from totem_engine.api.setup import find_template

    name, sep, port = value.partition("=")
    template = find_template(name)
    if not sep or template is None or template.probe is None or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(
            f'"{value}": expected TEMPLATE=PORT with TEMPLATE one of ollama, lmstudio, llamacpp, vllm, litellm'
        )
    return template.name, int(port)


def add_local_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-local", action="store_true", help="do not look for model servers on this computer")
    parser.add_argument(
        "--local-port",
        type=local_port,
        action="append",
        default=[],
        metavar="TEMPLATE=PORT",
        help="look for TEMPLATE's server on PORT instead of its usual port (repeatable)",
    )


async def _local_servers(args: argparse.Namespace, providers: dict) -> list:
    """The servers of this computer that answered and are not configured already."""
    if getattr(args, "no_local", False):
        return []
    from totem_engine.api.local import find_local_servers

    found = await find_local_servers(dict(getattr(args, "local_port", []) or []))
    return [server for server in found if not _configured(server, providers)]


def _installed_local_line(config) -> str | None:
    """Totem's own local model when it is set up and not replaced by a ``[providers.local]``:
    ``local/<id>\t<ctx>\t<where it runs>``, the form of the configured models' lines."""
    from totem_engine.api.local import PROVIDER_NAME, installed, local_dir_from, status

    if PROVIDER_NAME in config.providers:
        return None
    root = local_dir_from(config)
    install = installed(root)
    if install is None:
        return None
    now = status(root)
    where = f"running at {now.state.address}" if now.healthy and now.state else "starts on demand"
    default = " (the default: no model configured)" if config.model is None else ""
    return f"{PROVIDER_NAME}/{install.model_id}\t{config.local_ctx}\t{where}{default}"


def _print_local(servers: list) -> None:
    if not servers:
        return
    print("local:")
    for server in servers:
        what = " ".join(server.models) if server.status == "ok" else "needs a key"
        print(f"  {server.template}\t{server.address}\t{what or '(no models)'}")
    print("  add one with: totem providers add TEMPLATE NAME [--base-url URL]")


_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
_KIND_DEFAULT_PORT = {"ollama": 11434, "litellm": 4000}


def _configured(server, providers: dict) -> bool:
    """True when a configured provider already points at ``server`` (same loopback port)."""
    from urllib.parse import urlsplit

    port = urlsplit(server.address).port
    for settings in providers.values():
        if settings.base_url:
            parts = urlsplit(settings.base_url)
            if parts.hostname in _LOOPBACK_HOSTS and parts.port == port:
                return True
        elif _KIND_DEFAULT_PORT.get(settings.kind) == port:
            return True
    return False
