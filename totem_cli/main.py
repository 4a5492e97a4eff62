"""The ``totem`` command: ``run``, ``lsp``, ``acp``, ``models``, ``sessions``, ``mcp`` ...

Exit codes of ``totem run``: 0 finished, 1 error, 2 usage or config error, 3 ended by the step
limit or a guard, 130 aborted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Not `from typing import TYPE_CHECKING`: typing costs about 3 ms of every start, --help too
# (type checkers read any name TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from totem_engine.runtime import Runtime

EXIT_CODES = {"finished": 0, "error": 1, "step_limit": 3, "guard": 3, "aborted": 130}
EXIT_USAGE = 2


class SubcommandParser(argparse.ArgumentParser):
    """A parser whose subcommands' parsers are of its own kind, and whose unknown arguments are
    its own error. argparse hands a subcommand's unknown arguments up to the top-level parser,
    which then prints its own usage ("totem [-h] {run,...}") for ``totem run --bogus``; here the
    subcommand that was given them prints its usage (``totem run [-h] [--cwd CWD] ...``)."""

    def parse_known_args(self, args=None, namespace=None):
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def build_parser(command: str | None) -> argparse.ArgumentParser:
    """The parser of ``totem COMMAND ...``: the actions of a command that has them (``sessions
    list``, ``local setup`` ...) are added only for that command, ``command`` (the first
    argument that is not an option; None for ``totem --help``). Each ArgumentParser costs about
    0.5 ms (argparse looks its messages up through gettext), a third of ``--help``'s own time."""
    parser = argparse.ArgumentParser(prog="totem", description="A coding agent for your editor and your terminal.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=SubcommandParser)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--cwd", type=Path, default=None, help="project root (default: the current directory)")
        p.add_argument("--config", type=Path, default=None, help="a config file applied after the others")

    run = sub.add_parser("run", help="run one turn of the agent")
    common(run)
    run.add_argument("--model", help='"provider/model id" (default: model from the config)')
    run.add_argument("--mode", choices=["build", "plan"], default=None)
    run.add_argument("--yes", action="store_true", help="answer every permission question with allow once")
    run.add_argument("--json", action="store_true", help="write the event stream as NDJSON on stdout")
    run.add_argument("--session", help="continue this session")
    run.add_argument("--max-steps", type=_steps, default=None, help="step limit (0: none; 1-9 are raised to 10)")
    run.add_argument(
        "--attach", metavar="FILE", type=Path, action="append", default=[],
        help="attach an image (PNG, JPEG, GIF, WebP) to the prompt; may be repeated",
    )
    run.add_argument("prompt", nargs="+", help="what to do")

    lsp = sub.add_parser("lsp", help="run the language server (stdio by default)")
    lsp.add_argument("--tcp", metavar="HOST:PORT", help="listen on a loopback address instead (a token is required)")
    lsp.add_argument("--token", help="the token clients must send in initializationOptions.token (default: generated)")

    sub.add_parser("acp", help="run as an Agent Client Protocol agent on stdio (Zed, JetBrains, CodeCompanion, ...)")

    models = sub.add_parser("models", help="list the models of the configured providers and of local servers")
    common(models)
    from totem_cli.providers import add_local_arguments, add_subcommands

    add_local_arguments(models)
    add_subcommands(sub, command)  # providers add|templates, auth set|remove
    from totem_cli.local import add_subcommands as add_local_subcommands

    add_local_subcommands(sub, command)  # local setup|start|stop|status
    from totem_cli.agents import add_subcommands as add_agents_subcommands

    add_agents_subcommands(sub, command)  # agents list|show|new|edit|remove
    from totem_cli.mcp import add_subcommands as add_mcp_subcommands

    add_mcp_subcommands(sub, command)  # mcp list

    for name, what in (("undo", "restore the files of the last turn that changed something"), ("redo", "re-apply the last undone turn")):
        history = sub.add_parser(name, help=what)
        common(history)
        history.add_argument("--session", help="the session (default: the newest session of the project)")

    trust = sub.add_parser("trust", help="trust a project, so its own config may choose providers and allow actions")
    trust.add_argument("dir", nargs="?", type=Path, default=None, help="project root (default: the current directory)")

    sessions = sub.add_parser("sessions", help="list, show or export stored sessions")
    if command == "sessions":
        _sessions_actions(sessions)
    return parser


def _sessions_actions(sessions: argparse.ArgumentParser) -> None:
    sessions_sub = sessions.add_subparsers(dest="action", required=True)
    listing = sessions_sub.add_parser("list", help="the project's sessions, newest first")
    listing.add_argument("--cwd", type=Path, default=None, help="project root (default: the current directory)")
    listing.add_argument("--all", action="store_true", help="every project's sessions, with the project of each")
    show = sessions_sub.add_parser("show", help="a session's messages")
    show.add_argument("session_id")
    export = sessions_sub.add_parser("export", help="a session as JSON")
    export.add_argument("session_id")
    fork = sessions_sub.add_parser("fork", help="a new session holding a copy of this one up to a message")
    fork.add_argument("session_id")
    fork.add_argument("--at", metavar="MESSAGE_ID", help="the last message to copy (default: the last one)")


def _steps(value: str) -> int:
    try:
        steps = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if steps < 0:
        raise argparse.ArgumentTypeError("must be 0 (no limit) or more")
    return steps


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(next((a for a in argv if not a.startswith("-")), None)).parse_args(argv)
    if args.command == "lsp":
        # Before anything heavy is imported: the editor waits for initialize.
        from totem_cli.lsp import lsp_command

        return lsp_command(args)
    if args.command == "acp":
        from totem_acp.command import acp_command

        return acp_command(args)
    import anyio

    # Light modules only: what the command needs is imported by the command.
    from totem_engine.config_error import ConfigError
    from totem_engine.store import MessageNotFound, SessionNotFound, SessionUnavailable

    try:
        if args.command == "local":
            from totem_cli.local import run as local_run

            return local_run(args)
        if args.command in ("providers", "auth"):
            from totem_cli.providers import run as providers_run

            return providers_run(args)
        if args.command == "agents":
            from totem_cli.agents import run as agents_run

            return agents_run(args)
        if args.command == "mcp":
            from totem_cli.mcp import run as mcp_run

            return anyio.run(mcp_run, args)
        if args.command == "run":
            from totem_cli.run import run_command

            return anyio.run(run_command, args)
        if args.command == "models":
            return anyio.run(models_command, args)
        if args.command == "trust":
            return anyio.run(trust_command, args)
        if args.command in ("undo", "redo"):
            return anyio.run(history_command, args)
        return anyio.run(sessions_command, args)
    except ConfigError as exc:
        print(f"totem: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (SessionNotFound, MessageNotFound, SessionUnavailable) as exc:  # another project's, or running elsewhere
        print(f"totem: {exc}", file=sys.stderr)
        return EXIT_USAGE


def project_root(args: argparse.Namespace) -> Path:
    root = (args.cwd or Path.cwd()).resolve()
    if not root.is_dir():
        from totem_engine.config import ConfigError

        raise ConfigError(f"{root} is not a directory")
    return root


async def models_command(args: argparse.Namespace) -> int:
    from totem_engine.opening import open_runtime as open_project

    async with open_project(project_root(args), config_file=args.config, start_local=False) as runtime:
        if runtime.trust_notice:
            print(f"! {runtime.trust_notice}", file=sys.stderr)
        return await _list_models(args, runtime)


async def _list_models(args: argparse.Namespace, runtime: "Runtime") -> int:
    from totem_cli.providers import installed_local_line, local_servers, print_local
    from totem_engine.providers.errors import ProviderError

    failures = 0
    own = installed_local_line(runtime.config)
    if own:
        print(own)
    local = await local_servers(args, runtime.config.providers)
    if not runtime.config.providers:
        print_local(local)
        if local or own:
            return 0
        print("No providers configured. Add a [providers.<name>] table to your config (see docs/config.md),"
              " or run: totem providers add TEMPLATE NAME", file=sys.stderr)
        return 1
    for name in runtime.config.providers:
        try:
            found = await runtime.provider(name).models()
        except ProviderError as exc:
            failures += 1
            print(f"{name}: {type(exc).__name__}: {exc.message}", file=sys.stderr)
            continue
        for info in found:
            window = f"\t{info.context_window}" if info.context_window else ""
            print(f"{name}/{info.id}{window}")
    print_local(local)
    return 1 if failures == len(runtime.config.providers) and not local and not own else 0


async def history_command(args: argparse.Namespace) -> int:
    """``totem undo`` / ``totem redo``: one line per file, and exit 1 when a file was left alone
    (a conflict, or what a command changed that was not kept)."""
    from totem_engine.opening import open_runtime as open_project

    root = project_root(args)
    if args.session and args.cwd is None:
        # A session knows its project: undo there, wherever the command runs from.
        from totem_engine.store import Store

        async with Store() as store:
            root = Path((await store.get_session(args.session)).cwd)
    async with open_project(root, config_file=args.config, start_local=False, holder=f"totem {args.command}") as runtime:
        session_id = args.session
        if session_id is None:
            sessions = await runtime.store.list_sessions(cwd=str(runtime.root))
            if not sessions:
                print("totem: no session in this project", file=sys.stderr)
                return EXIT_USAGE
            session_id = sessions[0].id
        outcomes = await (runtime.undo if args.command == "undo" else runtime.redo)(session_id)
    if not outcomes:
        print(f"nothing to {args.command}")
    for outcome in outcomes:
        print(f"{outcome.action}\t{outcome.path}" + (f"\t{outcome.reason}" if outcome.reason else ""))
    return 1 if any(o.action in ("conflict", "unrestorable") for o in outcomes) else 0


async def trust_command(args: argparse.Namespace) -> int:
    from totem_engine.trust import trust

    root = (args.dir or Path.cwd()).resolve()
    if not root.is_dir():
        print(f"totem: {root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    await trust(root)
    print(f"trusted {root}")
    return 0


async def sessions_command(args: argparse.Namespace) -> int:
    from totem_cli.transcript import render_session
    from totem_engine.store import Store

    store = Store()
    try:
        if args.action == "list":
            return await _list_sessions(store, args)
        elif args.action == "show":
            session = await store.get_session(args.session_id)
            print(render_session(session, await store.messages(session.id, include_discarded=True)))
        elif args.action == "fork":
            at = args.at
            if at is None:
                messages = await store.messages(args.session_id, include_discarded=True)
                if not messages:
                    print(f"totem: session {args.session_id} has no messages to fork", file=sys.stderr)
                    return EXIT_USAGE
                at = messages[-1].id
            print((await store.fork(args.session_id, at)).id)
        else:
            import json

            print(json.dumps(await store.export(args.session_id), indent=2, ensure_ascii=False))
    finally:
        await store.close()
    return 0


async def _list_sessions(store, args: argparse.Namespace) -> int:
    """The sessions of the project (``--cwd`` or the current directory, as ``totem run`` takes
    it), or with ``--all`` of every project, with its folder before the title."""
    root = None if args.all else project_root(args)
    sessions = await store.list_sessions(cwd=None if root is None else str(root))
    for session in sessions:
        where = f"{session.cwd}\t" if root is None else ""
        print(f"{session.id}\t{_when(session.updated_at)}\t{session.model}\t{where}{session.title or ''}")
    if root is not None and not sessions:
        print(f"no session in {root} (totem sessions list --all lists every project's)", file=sys.stderr)
    return 0


def _when(timestamp: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def console() -> int:
    """The `totem` executable (pyproject's ``[project.scripts]``); returns the exit status."""
    if sys.argv[1:2] not in (["lsp"], ["acp"]):
        # Output piped into `head` and the like: end quietly when the reader goes away. Only
        # the executable does this: in-process callers such as tests keep BrokenPipeError, and
        # the language server and the ACP agent shut down through their own transport.
        import signal

        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    return main()


if __name__ == "__main__":
    sys.exit(console())
