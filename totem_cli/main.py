"""The ``totem`` command: its parser, and which module runs each command (``run``, ``retry``,
``regenerate``, ``undo``, ``rewind``, ``sessions``, ``models``, ``lsp``, ``acp``, ``mcp`` ...).

Every engine refusal is mapped to an exit code in one place (exits.py): 0 finished, 1 error,
2 usage or config error or a session another process runs, 3 ended by the step limit or a guard,
130 aborted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Which module runs a command, and its function (each a coroutine but the two sync ones), imported
# only when the command is the one given: a light start (tests/unit/test_cli_startup.py).
COMMANDS = {
    "run": ("totem_cli.run", "run_command"),
    "retry": ("totem_cli.run", "retry_command"),
    "regenerate": ("totem_cli.run", "regenerate_command"),
    "undo": ("totem_cli.actions", "history_command"),
    "redo": ("totem_cli.actions", "history_command"),
    "rewind": ("totem_cli.actions", "rewind_command"),
    "sessions": ("totem_cli.sessions", "sessions_command"),
    "models": ("totem_cli.models", "models_command"),
    "agents": ("totem_cli.agents", "run"),
    "hooks": ("totem_cli.hooks", "run"),
    "mcp": ("totem_cli.mcp", "run"),
    "trust": ("totem_cli.main", "trust_command"),
}
SYNC_COMMANDS = {"local": ("totem_cli.local", "run"), "providers": ("totem_cli.providers", "run"), "auth": ("totem_cli.providers", "run")}


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

    run = sub.add_parser("run", help="run one turn of the agent")
    _common(run)
    _turn_options(run)
    run.add_argument("--session", help="continue this session")
    run.add_argument("--max-steps", type=_steps, default=None, help="step limit (0: none; 1-9 are raised to 10)")
    run.add_argument(
        "--attach", metavar="FILE", type=Path, action="append", default=[],
        help="attach an image (PNG, JPEG, GIF, WebP) to the prompt; may be repeated",
    )
    run.add_argument("prompt", nargs="+", help="what to do")

    retry = sub.add_parser("retry", help="take up the session's failed last turn from its last completed step")
    regenerate = sub.add_parser("regenerate", help="a new answer to the last request (the earlier one stays, a variant)")
    for turn in (retry, regenerate):
        _common(turn, session=True)
        _turn_options(turn)
    regenerate.add_argument("--message", metavar="MESSAGE_ID", help="answer the request this message is, or answers, again")

    lsp = sub.add_parser("lsp", help="run the language server (stdio by default)")
    lsp.add_argument("--tcp", metavar="HOST:PORT", help="listen on a loopback address instead (a token is required)")
    lsp.add_argument("--token", help="the token clients must send in initializationOptions.token (default: generated)")

    sub.add_parser("acp", help="run as an Agent Client Protocol agent on stdio (Zed, JetBrains, CodeCompanion, ...)")

    models = sub.add_parser("models", help="list the models of the configured providers and of local servers")
    _common(models)
    from totem_cli.models import add_local_arguments
    from totem_cli.providers import add_subcommands

    add_local_arguments(models)
    add_subcommands(sub, command)  # providers add|templates, auth set|remove
    from totem_cli.local import add_subcommands as add_local_subcommands

    add_local_subcommands(sub, command)  # local setup|start|stop|status
    from totem_cli.agents import add_subcommands as add_agents_subcommands

    add_agents_subcommands(sub, command)  # agents list|show|new|edit|remove
    from totem_cli.hooks import add_subcommands as add_hooks_subcommands

    add_hooks_subcommands(sub, command)  # hooks list
    from totem_cli.mcp import add_subcommands as add_mcp_subcommands

    add_mcp_subcommands(sub, command)  # mcp list|serve

    for name, what in (("undo", "restore the files of the last turn that changed something"), ("redo", "re-apply the last undone turn")):
        _common(sub.add_parser(name, help=what), session=True)
    rewind = sub.add_parser("rewind", help="go back before the last request(s): the conversation, and the files unless --chat-only")
    _common(rewind, session=True)
    back = rewind.add_mutually_exclusive_group()
    back.add_argument("turns", nargs="?", type=_turns, default=1, metavar="N", help="how many requests back (default: 1)")
    back.add_argument("--to", metavar="MESSAGE_ID", help="back before this message (it and all after it are set aside)")
    rewind.add_argument("--chat-only", action="store_true", help="leave the files as they are")
    rewind.add_argument("--dry-run", action="store_true", help="say what would happen, do nothing")

    trust = sub.add_parser("trust", help="trust a project, so its own config may choose providers and allow actions")
    trust.add_argument("dir", nargs="?", type=Path, default=None, help="project root (default: the current directory)")

    sessions = sub.add_parser("sessions", help="list, show, export, fork or diff stored sessions")
    if command == "sessions":
        from totem_cli.sessions import add_actions

        add_actions(sessions)
    return parser


def _common(p: argparse.ArgumentParser, *, session: bool = False) -> None:
    p.add_argument("--cwd", type=Path, default=None, help="project root (default: the current directory)")
    p.add_argument("--config", type=Path, default=None, help="a config file applied after the others")
    if session:
        p.add_argument("--session", help="the session (default: the newest session of the project; its own project without --cwd)")


def _turn_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help='"provider/model id" (default: the session\'s, else the config\'s)')
    p.add_argument("--mode", choices=["build", "plan"], default=None)
    p.add_argument("--yes", action="store_true", help="answer every permission question with allow once")
    p.add_argument("--json", action="store_true", help="write the event stream as NDJSON on stdout")


def _steps(value: str) -> int:
    try:
        steps = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if steps < 0:
        raise argparse.ArgumentTypeError("must be 0 (no limit) or more")
    return steps


def _turns(value: str) -> int:
    steps = _steps(value)
    if steps < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
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
    import importlib

    from totem_cli.exits import refused
    from totem_engine.api.errors import EngineError

    try:
        if args.command in SYNC_COMMANDS:
            module, name = SYNC_COMMANDS[args.command]
            return getattr(importlib.import_module(module), name)(args)
        import anyio

        module, name = COMMANDS[args.command]
        return anyio.run(getattr(importlib.import_module(module), name), args)
    except EngineError as exc:
        return refused(exc)


async def trust_command(args: argparse.Namespace) -> int:
    from totem_cli.exits import usage
    from totem_engine.api.setup import trust

    root = (args.dir or Path.cwd()).resolve()
    if not root.is_dir():
        return usage(f"{root} is not a directory")
    await trust(root)
    print(f"trusted {root}")
    return 0


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
