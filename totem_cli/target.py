"""Which project and which session a ``totem`` command acts on: the project is ``--cwd`` (else
the current directory), or a named session's own project when ``--cwd`` is not given; the
session is ``--session``, else the project's newest."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

TYPE_CHECKING = False  # as in main.py: typing costs every start
if TYPE_CHECKING:
    from totem_engine.api.engine import Engine


def project_root(args: argparse.Namespace) -> Path:
    """``--cwd`` or the current directory, which must be a directory (ConfigError: exit 2)."""
    root = (args.cwd or Path.cwd()).resolve()
    if not root.is_dir():
        from totem_engine.config_error import ConfigError

        raise ConfigError(f"{root} is not a directory")
    return root


async def project_of(args: argparse.Namespace, session_id: str | None) -> Path:
    """The project a command on ``session_id`` works in: ``--cwd`` when given (the engine then
    refuses a session of another project), else the session's own, wherever the command runs."""
    if args.cwd is None and session_id:
        from totem_engine.api.history import History

        async with History() as history:
            return Path((await history.session(session_id)).cwd)
    return project_root(args)


async def session_or_newest(engine: Engine, session_id: str | None) -> str:
    """``session_id``, or the project's newest session (NothingToDo, exit 2, when it has none)."""
    if session_id is not None:
        check_session_id(session_id)
        return session_id
    newest = await engine.history.newest(engine.root)
    if newest is None:
        from totem_engine.api.errors import NothingToDo

        raise NothingToDo(f"no session in {engine.root} (totem sessions list --all lists every project's)")
    return newest.id


def check_session_id(session_id: str | None) -> None:
    if session_id is not None and not session_id.strip():
        from totem_engine.config_error import ConfigError

        raise ConfigError("--session needs a session id (totem sessions list shows them)")


@contextlib.asynccontextmanager
async def session_engine(args: argparse.Namespace, holder: str, **options) -> AsyncIterator[tuple[Engine, str]]:
    """The engine of the project ``--session`` (or the newest session) belongs to, opened for
    the block with ``--config`` and ``options`` (``open_project``'s), and the session's id. The
    project's notices go to stderr."""
    from totem_engine.api.engine import open_project

    root = await project_of(args, args.session)
    async with open_project(root, holder=holder, config_file=args.config, **options) as engine:
        say_notices(engine)
        yield engine, await session_or_newest(engine, args.session)


def say_notices(engine: Engine) -> None:
    for note in engine.notices:
        print(f"! {note}", file=sys.stderr)
