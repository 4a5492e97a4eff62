"""Hooks: the user's own commands at the turn's lifecycle points, on Claude Code's contract.

``Hooks`` holds one project runtime's hooks (spec.py) and runs those an event matches, together,
each as process.py runs it, read as verdict.py reads it. Where the turn calls them and what a
verdict does there is turn/hook_points.py's; a hook's permission decision enters the permission
model in one place (permissions.with_hook). docs/config.md "Hooks" is the user's reference.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import anyio

from totem_engine.hooks.process import hook_environ, run_command
from totem_engine.hooks.spec import EVENTS, Hook, hooks_from_layers
from totem_engine.hooks.verdict import Outcome, Verdict, read_outcome

__all__ = ["EVENTS", "Hook", "Hooks", "Listed", "Outcome", "Verdict", "hooks_from_layers", "listed_hooks"]


@dataclass(frozen=True)
class Listed:
    """A configured hook and whether it runs: ``ignored`` says why not (an untrusted project's)."""

    hook: Hook
    ignored: str | None = None

    def to_wire(self) -> dict:
        """``{event, matcher, command, timeout, source, active, ignored}`` (timeout in seconds;
        matcher null: every one), as ``totem/hooks`` answers."""
        hook = self.hook
        return {
            "event": hook.event, "matcher": hook.matcher, "command": hook.command, "timeout": hook.timeout,
            "source": hook.source, "active": self.ignored is None, "ignored": self.ignored,
        }


class Hooks:
    """The hooks of one project. ``active``: those that run; ``listed``: every one configured,
    the ignored ones too (what ``totem hooks list`` shows). ``passed``: credential-looking
    variables a hook keeps all the same (``command_env_pass``)."""

    def __init__(
        self, active: list[Hook], *, root: Path, listed: list[Listed] | None = None, passed: Iterable[str] = (),
    ):
        self.active = active
        self.listed = listed if listed is not None else [Listed(h) for h in active]
        self.root = root
        self._env = hook_environ(root, tuple(passed))
        # The sessions whose SessionStart ran here: each gets its SessionEnd when the runtime closes.
        self.started: set[str] = set()

    def wanted(self, event: str, names: Iterable[str] = ()) -> list[Hook]:
        names = list(names)
        return [h for h in self.active if h.event == event and h.matches(names)]

    async def run(self, event: str, payload: dict, *, names: Iterable[str] = ()) -> Verdict:
        """Run the hooks of ``event`` whose matcher takes one of ``names``, together; their
        stdin is ``payload`` with the fields every event has (``cwd``, ``hook_event_name``,
        ``transcript_path``: null, Totem keeps no transcript file)."""
        hooks = self.wanted(event, names)
        if not hooks:
            return Verdict()
        body = {"cwd": str(self.root), "hook_event_name": event, "transcript_path": None, **payload}
        outcomes: list[Outcome | None] = [None] * len(hooks)

        async def one(index: int, hook: Hook) -> None:
            ran = await run_command(hook.command, body, cwd=self.root, env=self._env, timeout=hook.timeout)
            outcomes[index] = read_outcome(hook, ran)

        async with anyio.create_task_group() as group:
            for index, hook in enumerate(hooks):
                group.start_soon(one, index, hook)
        return Verdict(tuple(o for o in outcomes if o is not None))


def listed_hooks(raw_layers: list, active_layers: list, *, trusted: bool) -> list[Listed]:
    """Every hook the config files declare (``raw_layers``, as read), each marked with why it
    is ignored when the layers in force (``active_layers``, after trust) dropped it."""
    active = hooks_from_layers(active_layers)
    return [
        Listed(hook, None if hook in active else "the project is not trusted" if not trusted else "ignored")
        for hook in hooks_from_layers(raw_layers)
    ]
