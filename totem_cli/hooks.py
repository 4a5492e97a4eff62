"""``totem hooks list``: the hooks the config files declare, in the order they run.

One line each, tab-separated: the event, the matcher ("*" for every one), the command, the
timeout, the file it came from, and "active" or "ignored: why" (an untrusted project's hooks do
not run). Exit codes: 0, 2 when a config file does not load.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_CONFIG = 2


def add_subcommands(sub: argparse._SubParsersAction, command: str | None) -> None:
    """``hooks``; its action only when it is the ``command`` given (main.build_parser)."""
    hooks = sub.add_parser("hooks", help="list the hooks: the user's commands at the turn's lifecycle points")
    if command != "hooks":
        return
    actions = hooks.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every hook: event, matcher, command, timeout, source, whether it runs")
    listing.add_argument("--cwd", type=Path, default=None, help="project root (default: the current directory)")
    listing.add_argument("--config", type=Path, default=None, help="a config file applied after the others")


async def run(args: argparse.Namespace) -> int:
    from totem_engine.api.hooks import project_hooks
    from totem_engine.config_error import ConfigError

    root = (args.cwd or Path.cwd()).resolve()
    try:
        listed = await project_hooks(root, config_file=args.config)
    except ConfigError as exc:
        print(f"totem: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if not listed:
        print("No hooks are configured (docs/config.md, \"Hooks\").", file=sys.stderr)
    for item in listed:
        hook = item.hook
        state = f"ignored: {item.ignored}" if item.ignored else "active"
        print("\t".join([hook.event, hook.matcher or "*", hook.command, f"{hook.timeout:g}s", hook.source, state]))
    return 0
