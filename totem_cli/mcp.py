"""``totem mcp list|login|logout|serve``: the MCP servers Totem uses, and Totem as one.

``totem mcp serve [--cwd DIR] [--config FILE] [--http HOST:PORT]`` serves Totem's sessions to
other agents over MCP (totem_mcp_server, docs/mcp-server.md): stdio, or streamable HTTP on a
loopback address with a bearer token.

``totem mcp list [--cwd DIR] [--config FILE] [--yes]``: each declared MCP server, whether it
started, and its tools.

The servers are started as a run starts them (totem_engine/mcp/servers.py; in a Total.js
project the built-in Forge too, mcp/forge.py): an untrusted
project's are not, and each start asks first, on the terminal, or is allowed by ``--yes`` (not
one whose URL leaves this machine). Then one line per server (``NAME<TAB>what became of
it<TAB>its command line or URL<TAB>the file that declares it``) and one indented line per tool
(``NAME__tool<TAB>the first line of its description``); every server is stopped before it exits.

``totem mcp login NAME [--cwd DIR]``: log in to the URL server ``NAME`` that wants an OAuth
login (docs/config.md "MCP servers"): the browser opens the authorization page (``webbrowser``,
which honours ``BROWSER``); the URL is printed too, for a terminal without a browser. The token
is kept like an API key and refreshed by the runs that use it. ``totem mcp logout NAME`` forgets it.

Exit codes: 0 listed (served and stopped, logged in or out), 1 the login failed, 2 usage or
config error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_subcommands(sub: argparse._SubParsersAction, command: str | None) -> None:
    """``mcp``; its action only when it is the ``command`` given (main.build_parser)."""
    mcp = sub.add_parser("mcp", help="the MCP servers Totem uses (list), and Totem as an MCP server (serve)")
    if command != "mcp":
        return
    actions = mcp.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="each declared server, whether it started, and its tools")
    listing.add_argument("--cwd", type=Path, default=None, help="project root (default: the current directory)")
    listing.add_argument("--config", type=Path, default=None, help="a config file applied after the others")
    listing.add_argument("--yes", action="store_true", help="allow each start once (not a server outside this machine)")
    for action, what in (("login", "log in to a URL server that wants an OAuth login"), ("logout", "forget its login")):
        login = actions.add_parser(action, help=what)
        login.add_argument("name", help="the server's name in mcp.json")
        login.add_argument("--cwd", type=Path, default=None, help="project root (default: the current directory)")
    serve = actions.add_parser("serve", help="serve Totem's sessions to other agents over MCP (stdio by default)")
    serve.add_argument("--cwd", type=Path, default=None, help="the project a tool means when it names none (default: the current directory)")
    serve.add_argument("--config", type=Path, default=None, help="a config file applied after the others, for every project")
    serve.add_argument(
        "--http", metavar="HOST:PORT",
        help="serve streamable HTTP on a loopback address instead (port 0: a free one; a bearer token is required)",
    )


async def run(args: argparse.Namespace) -> int:
    from totem_cli.target import project_root

    if args.action == "serve":
        from totem_mcp_server.main import serve

        return await serve(root=project_root(args), config_file=args.config, http=args.http)
    if args.action in ("login", "logout"):
        return await _login(args)
    return await _list(args)


async def _login(args: argparse.Namespace) -> int:
    import asyncio
    import webbrowser

    from totem_cli.target import project_root
    from totem_engine.api.mcp_login import LoginFailed, log_in, log_out

    async def show_url(url: str) -> None:
        print(f"Log in to {args.name} in your browser; if it did not open, open this URL:\n  {url}", file=sys.stderr)
        try:
            # In a thread: a console browser (BROWSER=lynx) holds webbrowser.open until it exits,
            # and the redirect it follows needs this loop's listener to answer.
            await asyncio.to_thread(webbrowser.open, url)
        except webbrowser.Error:
            pass  # the URL is printed

    try:
        if args.action == "logout":
            gone = log_out(project_root(args), args.name)
            print(f"Logged out of {args.name}." if gone else f"There was no login for {args.name}.", file=sys.stderr)
            return 0
        done = await log_in(project_root(args), args.name, show_url)
    except LoginFailed as exc:
        print(f"totem: {exc}", file=sys.stderr)
        return 1
    print(f"Logged in to {done.server} ({done.url}); {len(done.tools)} tools.", file=sys.stderr)
    return 0


async def _list(args: argparse.Namespace) -> int:
    from totem_cli.target import project_root, say_notices
    from totem_cli.terminal import TerminalFrontEnd
    from totem_engine.api.engine import open_project

    interactive = sys.stdin.isatty()
    frontend = TerminalFrontEnd(json_mode=False, assume_yes=args.yes, interactive=interactive)

    async def say(level: str, message: str, *, call_id: str | None = None) -> None:
        if level != "info":
            print(f"! {message}", file=sys.stderr)

    async with open_project(
        project_root(args), holder="totem mcp list", config_file=args.config,
        ask_trust=frontend.ask_trust if interactive else None, start_local=False,
    ) as engine:
        say_notices(engine)
        listing = await engine.mcp_servers(frontend, say)
        if not listing.servers:
            print("No MCP server is declared (docs/config.md \"MCP servers\": .totem/mcp.json, or mcp.json beside config.toml).",
                  file=sys.stderr)
        for server in listing.servers:
            print(f"{server.name}\t{server.status}\t{server.target}\t{server.path}")
            for name, description in server.tools:
                print(f"  {name}\t{_first_line(description)}")
        if listing.prompts_of:
            print(f"  mcp_prompts\tthe prompts of {', '.join(listing.prompts_of)}")
    return 0


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= 100 else line[:99] + "…"
