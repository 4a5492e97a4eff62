"""``totem lsp``: the language server over stdio, or on a loopback TCP port with a token."""

from __future__ import annotations

import argparse
import ipaddress
import sys

LOOPBACK_NAMES = ("localhost",)


def lsp_command(args: argparse.Namespace) -> int:
    from totem_lsp.server import create_server

    if args.tcp is None:
        server = create_server()
        server.start_io()
        return server.exit_code
    host, _, port = args.tcp.rpartition(":")
    host = host.strip("[]")
    if not port.isdigit() or not _is_loopback(host):
        print(f"totem: --tcp wants a loopback HOST:PORT (127.0.0.1:PORT or [::1]:PORT), got {args.tcp!r}", file=sys.stderr)
        return 2
    import secrets  # here, not at start-up: it loads hashlib and random

    token = args.token or secrets.token_urlsafe(24)
    if not args.token:
        print(f"totem lsp: token {token}", file=sys.stderr, flush=True)
    server = create_server(token=token)
    server.start_tcp(host, int(port))
    return server.exit_code


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
