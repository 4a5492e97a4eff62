"""``totem mcp serve``: the server on stdio, or on a loopback HTTP address with a bearer token.

Over HTTP the token is ``mcp_serve_token`` from the user's config (or ``--config``), else a new
one, printed once on stderr with the URL; nothing else ever shows it. SIGINT, SIGTERM and
SIGHUP stop the server: running turns are aborted (the partial answers kept), then the engines
and the store closed. stdout carries the protocol alone (stdio); everything else goes to stderr.

Exit codes: 0 served and stopped, 2 usage or config error.
"""

from __future__ import annotations

import logging
import secrets
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import anyio

from totem_engine.api.secrets import know, learn, user_config
from totem_mcp_server.app import build
from totem_mcp_server.service import Service
from totem_mcp_server.transports import loopback_address, serve_http, serve_stdio

EXIT_USAGE = 2


def say(message: str) -> None:
    print(f"totem mcp serve: {message}", file=sys.stderr, flush=True)


async def serve(*, root: Path, config_file: Path | None, http: str | None) -> int:
    """Raises ConfigError (a config that does not load)."""
    address = None
    if http is not None:
        try:
            address = loopback_address(http)
        except ValueError as exc:
            say(str(exc))
            return EXIT_USAGE
    # Before the SDK's own logging set-up (which only fills an empty root logger): warnings and
    # refusals on stderr, no per-request lines.
    logging.basicConfig(level=logging.WARNING, format="totem mcp serve: %(message)s", stream=sys.stderr)
    config = user_config(config_file)
    token = None
    if address is not None:
        configured = config.mcp_serve_token
        token = configured.get_secret_value() if configured is not None else secrets.token_urlsafe(32)
        if configured is None:
            say(f"token {token}")  # printed this once; send it as Authorization: Bearer <token>
    know([token])  # no result carries it, nor a key of the configs the server loads (learn)
    learn(config)
    async with Service(root=root, config_file=config_file) as service:
        server = build(service)
        async with anyio.create_task_group() as group:
            if address is None:
                group.start_soon(_stop_on_signal, group.cancel_scope.cancel)
                await serve_stdio(server)
            else:
                assert token is not None

                def stop_with_signals(stop: Callable[[], None]) -> None:
                    group.start_soon(_stop_on_signal, stop)

                await serve_http(server, *address, token, lambda url: say(f"listening on {url}"), stop_with_signals)
            group.cancel_scope.cancel()
    return 0


async def _stop_on_signal(stop: Callable[[], None]) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for _ in signals:
            stop()
            return
