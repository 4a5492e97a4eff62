"""The hooks the user configured: which command runs at which lifecycle point, and the config
file each came from.

They are gathered layer by layer, not from the merged config: arrays replace each other when
layers merge, and a user's audit hook must not vanish because the project declares one of its
own (Claude Code runs the hooks of every settings file too). Order: the layers' order, then the
file's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import get_args

from totem_engine.config import ConfigLayer, HookConfig, HookEvent

EVENTS: tuple[str, ...] = get_args(HookEvent)


@dataclass(frozen=True)
class Hook:
    """One configured hook. ``source``: the config file (or "editor settings") it came from."""

    event: str
    command: str
    matcher: str | None
    timeout: float
    source: str

    def matches(self, names: Iterable[str]) -> bool:
        """Whether the matcher takes any of ``names`` (a tool's names; an event's subject), whole
        and without case, so ``Edit|Write`` written for Claude Code matches ``edit``. No matcher,
        "" or "*": every one; an event with nothing to match (``names`` empty) runs every hook."""
        if self.matcher in (None, "", "*"):
            return True
        names = list(names)
        return not names or any(re.fullmatch(self.matcher, name, re.IGNORECASE) for name in names)


def hooks_from_layers(layers: Iterable[ConfigLayer]) -> list[Hook]:
    """Every hook the layers declare, in order. The layers are already validated (config.py)."""
    found: list[Hook] = []
    for layer in layers:
        table = layer.data.get("hooks") or {}
        for event in EVENTS:
            for entry in table.get(event, ()):
                spec = HookConfig.model_validate(entry)
                found.append(Hook(event, spec.command, spec.matcher, spec.timeout, layer.source))
    return found
