"""``totem undo``, ``totem redo``, ``totem rewind``: a session's changes put back, without a turn.

Each works on ``--session`` or the project's newest session, in ``--cwd`` or the session's own
project. What became of each file is one tab-separated line, ``ACTION<TAB>PATH[<TAB>REASON]``
(restored, deleted, conflict, unrestorable); exit 1 when a file was left alone (a conflict:
the user changed it since; or what a command changed that was not kept).
"""

from __future__ import annotations

import argparse

from totem_cli.exits import EXIT_ERROR
from totem_cli.target import session_engine


async def history_command(args: argparse.Namespace) -> int:
    """``totem undo`` / ``totem redo``: the files of the last turn that changed something put
    back, or the last undone change put back again."""
    async with session_engine(args, f"totem {args.command}", start_local=False) as (engine, session_id):
        reply = await (engine.undo if args.command == "undo" else engine.redo)(session_id)
    if not reply.files:
        print(f"nothing to {args.command}")
    _print_files(reply.files)
    return 0 if reply.ok else EXIT_ERROR


async def rewind_command(args: argparse.Namespace) -> int:
    """``totem rewind [N | --to MESSAGE_ID] [--chat-only] [--dry-run]``: the conversation goes on
    from before the last N requests (or the message), and the files go back to that point
    unless ``--chat-only``; the messages set aside stay in the session's history."""
    async with session_engine(args, "totem rewind", start_local=False) as (engine, session_id):
        target = args.to or await engine.request_id(session_id, args.turns)
        done = await engine.rewind(session_id, target, files=not args.chat_only, dry_run=args.dry_run)
    count = f"{len(done.messages)} message{'s' if len(done.messages) != 1 else ''}"
    if args.dry_run:
        print(f"would rewind session {session_id} to before {target}: {count} set aside; nothing done")
    else:
        print(f"rewound session {session_id} to before {target}: {count} set aside (they stay in the session's history)")
    if args.chat_only:
        print("the files are left as they are (--chat-only)")
    _print_files(done.files)
    return 0 if args.dry_run or not any(f.action in ("conflict", "unrestorable") for f in done.files) else EXIT_ERROR


def _print_files(files) -> None:
    for outcome in files:
        print(f"{outcome.action}\t{outcome.path}" + (f"\t{outcome.reason}" if outcome.reason else ""))
