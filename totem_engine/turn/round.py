"""What one tool round did, as a value: the ``Round`` that ``ToolCalls.run`` (calls.py) returns.

The loop, the policies and the step limit read a round from here, never from state left on the
object that ran it, so a later round (Totem's own test run, small.py) cannot change what an
earlier one is taken to have done.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from totem_engine.vocab.tools import ToolCall


@dataclass(frozen=True)
class CallOutcome:
    """One call of a round as it ended. ``status``: ok, error, denied or interrupted (not run);
    ``output``: what the model is told; ``metadata``: the tool's (bash: ``exit_code``);
    ``changed``: the project-relative paths it changed."""

    call: ToolCall
    status: str
    output: str
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    changed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Round:
    """The calls of one step, in the order the model sent them, and what they came to.

    ``flagged``: the changed files the checks found something in; ``stop``: the reason a guard
    ended the run (None: go on); ``new_information``: some result was new to the turn
    (guards.Novelty), so the round was progress even with no file changed.
    """

    calls: tuple[CallOutcome, ...]
    flagged: tuple[str, ...] = ()
    stop: str | None = None
    new_information: bool = True

    @property
    def changed(self) -> tuple[str, ...]:
        """The files the round changed, each once, in the order they changed."""
        return tuple(dict.fromkeys(path for outcome in self.calls for path in outcome.changed))

    @property
    def ok(self) -> bool:
        """Every call ran and succeeded."""
        return all(outcome.status == "ok" for outcome in self.calls)

    @property
    def clean(self) -> bool:
        """``ok``, and the checks found nothing in what it changed."""
        return self.ok and not self.flagged

    @property
    def last(self) -> CallOutcome | None:
        """The round's last call, or None for an empty round."""
        return self.calls[-1] if self.calls else None
