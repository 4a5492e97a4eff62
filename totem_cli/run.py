"""``totem run``: one turn of the agent in the terminal, Ctrl-C aborting it cleanly."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from pathlib import Path

import anyio

from totem_cli.main import EXIT_CODES, EXIT_USAGE, project_root
from totem_cli.terminal import TerminalFrontEnd
from totem_engine.config import MIN_MAX_STEPS, ConfigError
from totem_engine.local.errors import LocalServerError
from totem_engine.opening import open_runtime as open_project


async def run_command(args: argparse.Namespace) -> int:
    root = project_root(args)
    images = await anyio.to_thread.run_sync(attached_images, args.attach)
    interactive = sys.stdin.isatty()
    frontend = TerminalFrontEnd(
        json_mode=args.json, assume_yes=args.yes, interactive=interactive, hold_text=not sys.stdout.isatty()
    )
    async with contextlib.AsyncExitStack() as stack:
        try:
            # With no model configured, the model `totem local setup` installed, started for this run.
            runtime = await stack.enter_async_context(
                open_project(
                    root, config_file=args.config, ask_trust=frontend.ask_trust if interactive else None, model=args.model,
                    holder="totem run",
                )
            )
        except LocalServerError as exc:
            print(f"totem: {exc}", file=sys.stderr)
            return 1
        for note in [*runtime.config.notes, *([runtime.trust_notice] if runtime.trust_notice else [])]:
            print(f"! {note}", file=sys.stderr)
        prompt = " ".join(args.prompt).strip()
        if not prompt:
            raise ConfigError("the prompt is empty: say what to do")
        if args.session is not None and not args.session.strip():
            raise ConfigError("--session needs a session id (totem sessions list shows them)")
        if args.max_steps is not None and 0 < args.max_steps < MIN_MAX_STEPS:
            print(f"! --max-steps {args.max_steps} was raised to {MIN_MAX_STEPS}, the smallest cap that leaves room to read, edit and check", file=sys.stderr)
        await runtime.snapshots.prune()
        prepared = runtime.prepare(prompt)  # a slash command expanded (commands.py)
        if prepared.action == "undo":
            return await _undo(runtime, args.session)
        if prepared.action == "compact":
            return await _compact(runtime, args.session)
        model = runtime.resolve_model(args.model or prepared.model)
        mode = args.mode or runtime.config.mode
        session = await runtime.open_session(args.session, model=model, mode=mode, text=prompt)
        turn = runtime.turn(
            prepared.text, frontend, session=session, model=model, mode=mode, max_steps=args.max_steps,
            typed=prompt if prepared.command else None, as_agent=prepared.agent, images=images,
        )
        result = await _run_until_interrupted(turn)
        if not args.json:
            print(f"session {result.session_id}", file=sys.stderr)
        return EXIT_CODES[result.stop_reason]


def attached_images(files: list[Path]) -> tuple:
    """``--attach FILE`` as images (totem_engine/images.py), read before the project is opened;
    ConfigError (exit 2) for a file that cannot be read or is not an image the wires take."""
    from totem_engine.images import (
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


async def _latest(runtime, session_id: str | None) -> str | None:
    """``--session``, or the project's newest session; None (said) when it has none."""
    if session_id is not None:
        return session_id
    sessions = await runtime.store.list_sessions(cwd=str(runtime.root))
    if not sessions:
        print("totem: no session in this project", file=sys.stderr)
        return None
    return sessions[0].id


async def _undo(runtime, session_id: str | None) -> int:
    """``/undo``: the files of the session's last changing turn put back (``totem undo``)."""
    session_id = await _latest(runtime, session_id)
    if session_id is None:
        return EXIT_USAGE
    outcomes = await runtime.undo(session_id)
    if not outcomes:
        print("nothing to undo")
    for outcome in outcomes:
        print(f"{outcome.action}\t{outcome.path}" + (f"\t{outcome.reason}" if outcome.reason else ""))
    return 1 if any(o.action in ("conflict", "unrestorable") for o in outcomes) else 0


async def _compact(runtime, session_id: str | None) -> int:
    """``/compact``: the session so far summarised into a checkpoint that later turns start from."""
    session_id = await _latest(runtime, session_id)
    if session_id is None:
        return EXIT_USAGE
    checkpoint = await runtime.compact(session_id)
    if checkpoint is None:
        print("nothing new to compact")
    else:
        count = f"{checkpoint.messages} message{'s' if checkpoint.messages != 1 else ''}"
        print(f"compacted {count} of session {session_id} into a checkpoint:")
        print(checkpoint.text)
    return 0


async def _run_until_interrupted(turn):
    """The turn's result, a signal aborting it; what the turn raises (``SessionInUse``: another
    process runs the session) is raised as it is, not inside an ExceptionGroup."""
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_abort_on_interrupt, turn, group.cancel_scope)
            result = await turn.run()
            group.cancel_scope.cancel()
        return result
    except BaseExceptionGroup as caught:
        if len(caught.exceptions) == 1:  # the signal watcher never raises: the turn's alone
            raise caught.exceptions[0] from None
        raise


async def _abort_on_interrupt(turn, scope: anyio.CancelScope) -> None:
    # SIGHUP: the terminal closed. Left to its default, it would end the process with its jobs alive.
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for _ in signals:
            turn.abort()
