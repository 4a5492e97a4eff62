"""What a hook's exit code and output mean, read as Claude Code's hook contract reads them
(https://docs.claude.com/en/docs/claude-code/hooks, "Hook Output"), so existing scripts work.

- exit 0: success. Plain stdout is context for the events that take it (UserPromptSubmit,
  SessionStart; PostToolUse too in Totem, see docs/decisions.md); stdout that is a JSON object
  is read as the structured output below.
- exit 2: a block. Its stderr is the reason: the model reads it for a tool call, the user for a
  blocked prompt, and at the end of a turn it tells the model to go on.
- anything else, a timeout or a command that cannot start: an error shown to the user and
  otherwise ignored.

Structured output (exit 0, stdout a JSON object): ``continue: false`` stops the turn with
``stopReason``; ``decision: "block"`` with ``reason`` blocks (``"approve"``, the old spelling, allows
a tool call); ``systemMessage`` is shown to the user; ``hookSpecificOutput`` carries
``permissionDecision`` (allow | deny | ask) with ``permissionDecisionReason`` before a tool call, and
``additionalContext``. Fields Totem does not act on (``suppressOutput``, ``updatedInput``) are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from totem_engine.hooks.process import Ran
from totem_engine.hooks.spec import Hook

Permission = Literal["allow", "deny", "ask"]
_RANK = {"allow": 0, "ask": 1, "deny": 2}

# Events whose plain stdout (exit 0) is context for the model.
TAKES_CONTEXT = frozenset({"UserPromptSubmit", "SessionStart", "PostToolUse"})


@dataclass(frozen=True)
class Outcome:
    """One hook's run, read. ``block``: it blocked (exit 2, ``decision: "block"``, or a deny);
    ``reason``: why, for whoever the block is shown to; ``permission``: its decision on a tool
    call; ``context``: text for the model; ``stop``: ``continue: false``'s reason (the turn ends);
    ``message``: for the user; ``error``: what went wrong with the hook itself."""

    hook: Hook
    block: bool = False
    reason: str = ""
    permission: Permission | None = None
    context: str = ""
    stop: str | None = None
    message: str | None = None
    error: str | None = None


def read_outcome(hook: Hook, ran: Ran) -> Outcome:
    if ran.failed is not None:
        return Outcome(hook, error=ran.failed)
    if ran.timed_out:
        return Outcome(hook, error=f"killed after its timeout of {hook.timeout:g} s")
    if ran.exit_code == 2:
        return Outcome(hook, block=True, reason=ran.stderr.strip() or "(the hook gave no reason)", permission="deny")
    if ran.exit_code != 0:
        said = ran.stderr.strip() or ran.stdout.strip()
        return Outcome(hook, error=f"exited with {ran.exit_code}" + (f": {said}" if said else ""))
    structured = _json_object(ran.stdout)
    if structured is None:
        return Outcome(hook, context=ran.stdout.strip() if hook.event in TAKES_CONTEXT else "")
    return _structured(hook, structured)


def _json_object(text: str) -> dict | None:
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _structured(hook: Hook, out: dict) -> Outcome:
    specific = out.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    reason = _text(out.get("reason"))
    permission: Permission | None = None
    decision = out.get("decision")
    if decision == "block":
        permission = "deny"
    elif decision == "approve":
        permission = "allow"
    asked = specific.get("permissionDecision")
    if asked in _RANK:
        permission = asked
        reason = _text(specific.get("permissionDecisionReason")) or reason
    stop = None
    if out.get("continue") is False:
        stop = _text(out.get("stopReason")) or "a hook said not to continue"
    return Outcome(
        hook,
        block=permission == "deny",
        reason=reason,
        permission=permission,
        context=_text(specific.get("additionalContext")),
        stop=stop,
        message=_text(out.get("systemMessage")) or None,
    )


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


@dataclass(frozen=True)
class Verdict:
    """The outcomes of one event's hooks (they run together), joined: any block blocks, the
    strictest permission wins (deny over ask over allow), every context and reason is kept."""

    outcomes: tuple[Outcome, ...] = field(default_factory=tuple)

    @property
    def blocked(self) -> bool:
        return any(o.block for o in self.outcomes)

    @property
    def permission(self) -> Permission | None:
        decided = [o.permission for o in self.outcomes if o.permission is not None]
        return max(decided, key=_RANK.__getitem__) if decided else None

    @property
    def reason(self) -> str:
        return _joined(o.reason for o in self.outcomes if o.block or o.permission is not None)

    @property
    def context(self) -> str:
        return _joined(o.context for o in self.outcomes)

    @property
    def stop(self) -> str | None:
        return next((o.stop for o in self.outcomes if o.stop is not None), None)


def _joined(texts: Iterable[str]) -> str:
    return "\n".join(t for t in texts if t)
