"""``totem sessions list|show|export|fork|diff``: the stored sessions.

``list``, ``show``, ``export`` and ``fork`` read the store alone (``History``: no config, no
project opened, so they start fast, tests/unit/test_cli_startup.py); ``diff`` opens the session's
project (``Engine.diff``) and prints the unified diff of what the session, or one turn of it,
changed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from totem_cli.target import project_of, project_root


def add_actions(sessions: argparse.ArgumentParser) -> None:
    actions = sessions.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="the project's sessions, newest first")
    listing.add_argument("--cwd", type=Path, default=None, help="project root (default: the current directory)")
    listing.add_argument("--all", action="store_true", help="every project's sessions, with the project of each")
    show = actions.add_parser("show", help="a session's messages")
    show.add_argument("session_id")
    export = actions.add_parser("export", help="a session as JSON")
    export.add_argument("session_id")
    fork = actions.add_parser("fork", help="a new session holding a copy of this one up to a message")
    fork.add_argument("session_id")
    fork.add_argument("--at", metavar="MESSAGE_ID", help="the last message to copy (default: the last one)")
    diff = actions.add_parser("diff", help="the unified diff of what a session changed in its project")
    diff.add_argument("session_id")
    diff.add_argument("--turn", metavar="TURN_ID", help="only this turn's changes (trn_..., from the turnEnd event)")
    diff.add_argument("--cwd", type=Path, default=None, help="project root (default: the session's own)")
    diff.add_argument("--config", type=Path, default=None, help="a config file applied after the others")


async def sessions_command(args: argparse.Namespace) -> int:
    if args.action == "diff":
        return await _diff(args)
    from totem_engine.api.history import History

    async with History() as history:
        if args.action == "list":
            _list(args, await history.sessions(None if args.all else project_root(args)))
        elif args.action == "show":
            from totem_cli.transcript import render_session

            session = await history.session(args.session_id)
            print(render_session(session, await history.messages(session.id, include_discarded=True)))
        elif args.action == "fork":
            print((await history.fork(args.session_id, args.at)).id)
        else:
            import json

            print(json.dumps(await history.export(args.session_id), indent=2, ensure_ascii=False))
    return 0


def _list(args: argparse.Namespace, sessions: list) -> None:
    """One line a session: id, when, model, (with ``--all`` its project,) title."""
    for session in sessions:
        where = f"{session.cwd}\t" if args.all else ""
        print(f"{session.id}\t{_when(session.updated_at)}\t{session.model}\t{where}{session.title or ''}")
    if not args.all and not sessions:
        print(f"no session in {project_root(args)} (totem sessions list --all lists every project's)", file=sys.stderr)


async def _diff(args: argparse.Namespace) -> int:
    """The session's changes as one unified diff; a binary file or one whose stored state was
    pruned is a line saying so."""
    from totem_engine.api.engine import open_project

    root = await project_of(args, args.session_id)
    async with open_project(root, holder="totem sessions diff", config_file=args.config, start_local=False) as engine:
        diffs = await engine.diff(args.session_id, turn_id=args.turn)
    for diff in diffs:
        if diff.missing:
            print(f"{diff.path}: {diff.change}; its stored content was pruned, so no diff")
        elif diff.binary:
            print(f"Binary file {diff.path} {diff.change}")
        elif diff.diff:
            sys.stdout.write(diff.diff if diff.diff.endswith("\n") else diff.diff + "\n")
    if not diffs:
        print(f"session {args.session_id} changed no file" + (f" in turn {args.turn}" if args.turn else ""), file=sys.stderr)
    return 0


def _when(timestamp: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")
