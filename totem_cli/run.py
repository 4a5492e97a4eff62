"""``totem run``, ``totem retry``, ``totem regenerate``: a turn of the agent in the terminal,
streamed as it runs, Ctrl-C (or SIGTERM, SIGHUP) aborting it cleanly.

``totem run PROMPT`` hands what was typed to the engine (``Engine.prompt``): a slash command, a
built-in action (``/undo``, ``/compact``, ``/rewind`` ...: its reply printed, exit 1 when a file
could not be put back) or a turn. ``retry`` takes up a session's failed last turn,
``regenerate`` answers a request again (a new variant). Exit codes: exits.py.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

import anyio

from totem_cli.exits import BY_STOP_REASON, EXIT_ERROR
from totem_cli.target import check_session_id, project_root, say_notices, session_engine
from totem_cli.terminal import TerminalFrontEnd
from totem_engine.api.engine import open_project
from totem_engine.api.running import Result, Running
from totem_engine.api.setup import MIN_MAX_STEPS
from totem_engine.config_error import ConfigError


async def run_command(args: argparse.Namespace) -> int:
    root = project_root(args)
    prompt = " ".join(args.prompt).strip()
    if not prompt:
        raise ConfigError("the prompt is empty: say what to do")
    check_session_id(args.session)
    images = await anyio.to_thread.run_sync(attached_images, args.attach)
    frontend = _frontend(args)
    # With no model configured, the model `totem local setup` installed, started for this run.
    async with open_project(
        root, holder="totem run", config_file=args.config, ask_trust=_ask_trust(frontend), model=args.model, mode=args.mode,
    ) as engine:
        say_notices(engine)
        if args.max_steps is not None and 0 < args.max_steps < MIN_MAX_STEPS:
            print(f"! --max-steps {args.max_steps} was raised to {MIN_MAX_STEPS}, the smallest cap that leaves room to read, edit and check", file=sys.stderr)
        running = await engine.prompt(
            prompt, frontend, session_id=args.session, model=args.model, mode=args.mode, max_steps=args.max_steps, images=images,
        )
        return await _finish(running, args)


async def retry_command(args: argparse.Namespace) -> int:
    """``totem retry``: the session's failed last turn taken up from its last completed step."""
    frontend = _frontend(args)
    async with session_engine(args, "totem retry", ask_trust=_ask_trust(frontend), model=args.model, mode=args.mode) as (engine, session_id):
        return await _finish(await engine.retry(session_id, frontend, model=args.model, mode=args.mode), args)


async def regenerate_command(args: argparse.Namespace) -> int:
    """``totem regenerate``: a new answer to the last request (``--message``: to the request that
    message is, or answers); the earlier answer stays in the session, a variant."""
    frontend = _frontend(args)
    async with session_engine(
        args, "totem regenerate", ask_trust=_ask_trust(frontend), model=args.model, mode=args.mode,
    ) as (engine, session_id):
        message_id = args.message or await engine.request_id(session_id)
        return await _finish(await engine.regenerate(session_id, message_id, frontend, model=args.model, mode=args.mode), args)


def attached_images(files: list[Path]) -> tuple:
    """``--attach FILE`` as images (totem_engine/images.py), read before the project is opened;
    ConfigError (exit 2) for a file that cannot be read or is not an image the wires take."""
    from totem_engine.api.images import (
        MAX_IMAGE_BYTES,
        AttachmentError,
        image_from_bytes,
    )

    images = []
    for file in files:
        try:
            if file.stat().st_size > MAX_IMAGE_BYTES:
                raise AttachmentError(f"{file.name} is over the {MAX_IMAGE_BYTES // (1024 * 1024)} MB an image may have")
            images.append(image_from_bytes(file.read_bytes(), file.name))
        except OSError as exc:
            raise ConfigError(f"--attach {file}: {exc.strerror or exc}") from None
        except AttachmentError as exc:
            raise ConfigError(f"--attach {file}: {exc}") from None
    return tuple(images)


def _frontend(args: argparse.Namespace) -> TerminalFrontEnd:
    return TerminalFrontEnd(
        json_mode=args.json, assume_yes=args.yes, interactive=sys.stdin.isatty(), hold_text=not sys.stdout.isatty()
    )


def _ask_trust(frontend: TerminalFrontEnd):
    """Asked on the terminal; without one the project stays restricted (its notice says so)."""
    return frontend.ask_trust if frontend.interactive else None


async def _finish(running: Running, args: argparse.Namespace) -> int:
    """The turn run to its end (or the action's reply printed); the exit code of how it ended."""
    result = await _until_interrupted(running)
    if result.reply is not None:
        print(result.text)
        return 0 if result.reply.ok else EXIT_ERROR
    if not args.json:
        print(f"session {result.session_id}", file=sys.stderr)
    return BY_STOP_REASON[result.stop_reason]


async def _until_interrupted(running: Running) -> Result:
    """The result, a signal aborting the turn; what the turn raises (``SessionInUse``: another
    process runs the session) is raised as it is, not inside an ExceptionGroup."""
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_abort_on_signal, running)
            result = await running.result()
            group.cancel_scope.cancel()
        return result
    except BaseExceptionGroup as caught:
        if len(caught.exceptions) == 1:  # the signal watcher never raises: the turn's alone
            raise caught.exceptions[0] from None
        raise


async def _abort_on_signal(running: Running) -> None:
    # SIGHUP: the terminal closed. Left to its default, it would end the process with its jobs alive.
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for _ in signals:
            running.abort()
