"""``totem run``: one turn of the agent in the terminal, Ctrl-C aborting it cleanly."""

from __future__ import annotations

import argparse
import signal
import sys

import anyio

from totem_cli.main import EXIT_CODES, project_root
from totem_cli.terminal import TerminalFrontEnd
from totem_engine.config import MIN_MAX_STEPS, ConfigError, load_config
from totem_engine.local import apply_local_default, release_local_provider
from totem_engine.local.server import LocalServerError
from totem_engine.runtime import Runtime
from totem_engine.trust import apply_trust


async def run_command(args: argparse.Namespace) -> int:
    root = project_root(args)
    interactive = sys.stdin.isatty()
    frontend = TerminalFrontEnd(
        json_mode=args.json, assume_yes=args.yes, interactive=interactive, hold_text=not sys.stdout.isatty()
    )
    loaded, trust_notice = await apply_trust(
        root, load_config(root, config_file=args.config), frontend.ask_trust if interactive else None
    )
    if args.model is None or args.model.startswith("local/"):
        # No model configured: the model installed by `totem local setup`, started for this run.
        try:
            await anyio.to_thread.run_sync(apply_local_default, loaded.config, args.model)
        except LocalServerError as exc:
            print(f"totem: {exc}", file=sys.stderr)
            return 1
    runtime = Runtime(root, loaded)
    try:
        for note in [*loaded.config.notes, *([trust_notice] if trust_notice else [])]:
            print(f"! {note}", file=sys.stderr)
        prompt = " ".join(args.prompt).strip()
        if not prompt:
            raise ConfigError("the prompt is empty: say what to do")
        if args.session is not None and not args.session.strip():
            raise ConfigError("--session needs a session id (totem sessions list shows them)")
        if args.max_steps is not None and 0 < args.max_steps < MIN_MAX_STEPS:
            print(f"! --max-steps {args.max_steps} was raised to {MIN_MAX_STEPS}, the smallest cap that leaves room to read, edit and check", file=sys.stderr)
        await runtime.snapshots.prune()
        model = runtime.resolve_model(args.model)
        mode = args.mode or loaded.config.mode
        session_id = await runtime.open_session(args.session, model=model, mode=mode)
        turn = runtime.turn(prompt, frontend, session_id=session_id, model=model, mode=mode, max_steps=args.max_steps)
        async with anyio.create_task_group() as group:
            group.start_soon(_abort_on_interrupt, turn, group.cancel_scope)
            result = await turn.run()
            group.cancel_scope.cancel()
        if not args.json:
            print(f"session {result.session_id}", file=sys.stderr)
        return EXIT_CODES[result.stop_reason]
    finally:
        await runtime.aclose()
        release_local_provider()


async def _abort_on_interrupt(turn, scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            turn.abort()
