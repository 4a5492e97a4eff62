"""Who decides whether a call runs: rules, the session's own answers, and the built-in defaults.

Among the rules that match a call, order does not matter: deny beats ask beats allow. The
session's "always" answers rank between the configured denies and everything else. Only when no
rule matches do the defaults decide. A call with several patterns (a compound shell command)
needs every one of them allowed: the strictest decision wins.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from totem_engine.api.events import RuleRef

Action = Literal["allow", "ask", "deny"]
_RANK: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}

# Built-in defaults, by permission family. Anything not listed asks.
DEFAULTS: dict[str, Action] = {
    "read": "allow",
    "todo": "allow",
    "ask": "allow",
    "skill": "allow",
    "task": "allow",  # starting an agent changes nothing; its own calls ask like any other
    "job": "allow",  # reading, waiting for, stopping the session's own jobs; starting one is "bash"
    "terminal": "allow",  # typing into, reading, stopping the session's own terminals; starting one is "bash"
    "edit": "ask",
    "bash": "ask",
    "fetch": "ask",
    "mcp": "ask",  # an MCP server's tool (pattern NAME__tool): it may do anything its server can
    "mcp-start": "ask",  # starting an MCP server (pattern: its name; mcp/start.py)
    "mcp-prompts": "allow",  # listing the running servers' prompts: nothing is sent to them
    "mcp-schema": "allow",  # a deferred MCP tool's schema, as its server listed it: nothing is sent
}

# Reading these asks first, whatever the read default says: they hold keys and passwords.
SECRET_FILES = (".env", ".env.*", "*.pem", "*.key", "id_*", "credentials", "credentials.*", "*.credentials", ".netrc")
NOT_SECRET = ("*.example", "*.sample", "*.template", "id_*.pub")


# Changing these can give the agent power: the project's own Totem config (permissions, commands
# to run) and git's (hooks, filters; a ".git" file in a worktree or submodule says where the
# repository is). A configured "allow" does not reach them; they always ask. They are path
# components, matched at any depth (a nested repository has its own hooks) and without case
# (git on a case-insensitive disk takes ".GIT" for ".git").
PROTECTED = (".totem", ".git")


def is_protected(path: str) -> bool:
    """Whether ``path`` (project-relative, "/"-separated; a pattern too) is or is under a protected folder."""
    return any(part.casefold() in PROTECTED for part in path.replace("\\", "/").split("/"))


# fnmatchcase's own translation, each list joined into one regex: grep asks once per file, and
# ten fnmatchcase calls a file were a tenth of a search with matches in 1,700 files.
_SECRET = re.compile("|".join(map(fnmatch.translate, SECRET_FILES)))
_NOT_SECRET = re.compile("|".join(map(fnmatch.translate, NOT_SECRET)))


def is_secret(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return _SECRET.match(name) is not None and _NOT_SECRET.match(name) is None


def default_decision(permission: str, value: str, *, changes: bool) -> Decision:
    """What decides when no rule matches: read-only commands run, secret files ask, the rest by family.

    ``changes`` is about this one pattern: for a compound command, whether this part may change.
    """
    if permission == "bash" and not changes:
        return Decision("allow", RuleRef(source="default", permission=permission, pattern="read-only command", action="allow"))
    if permission == "read" and is_secret(value):
        return Decision("ask", RuleRef(source="default", permission=permission, pattern="secret file", action="ask"))
    action = DEFAULTS.get(permission, "ask")
    return Decision(action, RuleRef(source="default", permission=permission, pattern="*", action=action))


@dataclass(frozen=True)
class Decision:
    action: Action
    rule: RuleRef


def rules_from_config(table: Mapping[str, object], source: str) -> list[RuleRef]:
    """``{permission: action}`` or ``{permission: {pattern: action}}`` as a flat list of rules."""
    rules: list[RuleRef] = []
    for permission, value in table.items():
        if isinstance(value, str):
            rules.append(RuleRef(source=source, permission=permission, pattern="*", action=value))
        elif isinstance(value, Mapping):
            for pattern, action in value.items():
                rules.append(RuleRef(source=source, permission=permission, pattern=pattern, action=action))
    return rules


def matches(pattern: str, value: str) -> bool:
    """Glob match; a pattern that names a command also matches that command with more arguments."""
    return fnmatch.fnmatchcase(value, pattern) or fnmatch.fnmatchcase(value, pattern + " *")


def strictest(decisions: list[Decision]) -> Decision:
    """deny over ask over allow; of equals, the first."""
    return max(decisions, key=lambda d: _RANK[d.action])


@dataclass
class Policy:
    """The rules in force for one session, plus the answers the user gave in it."""

    rules: list[RuleRef] = field(default_factory=list)
    session: list[RuleRef] = field(default_factory=list)
    plan_mode: bool = False

    def reads_unasked(self, *names: str) -> bool:
        """Whether a file known by ``names`` (project-relative: as it was named, and as it
        resolves) may be read without asking: the ``read`` tool's own rule, a secret file asks
        unless a rule or an answer allows it. What sends a file's content to a model without a
        ``read`` call (the files a small model's request names, an attachment, mentions.py and
        turn/request.py) shows it only when this says yes; the read tool asks through ``decide``."""
        return self.decide("read", list(names), changes=False).action == "allow"

    def remember(self, permission: str, pattern: str, action: Action) -> RuleRef:
        rule = RuleRef(source="session", permission=permission, pattern=pattern, action=action)
        self.session.append(rule)
        return rule

    def decide(
        self, permission: str, patterns: Iterable[str], *, changes: bool, safe: frozenset[str] | None = None,
        unconfined: bool = False,
    ) -> Decision:
        """``changes``: the call may change the project (its tool says so, ``Tool.may_change``);
        plan mode denies those. ``safe`` (commands only): the patterns that need no asking, so
        ``cd src && npm test`` asks about ``npm test`` alone and ``cat .env`` (read-only, but a
        secret) asks. ``unconfined`` (commands only): it runs without the sandbox, so each part
        that may change could write the protected folders: it asks as an edit of them does, and
        no allow rule or "always" answer reaches it (source ``protected``)."""
        if self.plan_mode and changes:
            return Decision("deny", RuleRef(source="mode", permission=permission, pattern="*", action="deny"))
        values = list(patterns) or ["*"]
        decisions = []
        for value in values:
            part_changes = (value not in safe) if safe is not None else changes
            decisions.append(self._decide_one(permission, value, changes=part_changes, unconfined=unconfined and part_changes))
        return max(decisions, key=lambda d: _RANK[d.action])

    def _decide_one(self, permission: str, value: str, *, changes: bool, unconfined: bool = False) -> Decision:
        configured = [r for r in self.rules if r.permission in (permission, "*") and matches(r.pattern, value)]
        denies = [r for r in configured if r.action == "deny"]
        if denies:
            return Decision("deny", denies[0])
        protected = unconfined or (permission == "edit" and is_protected(value))
        answered = [
            r for r in self.session
            if r.permission == permission and matches(r.pattern, value)
            and (not protected or (not unconfined and is_protected(r.pattern)))
        ]
        if answered:
            strongest = max(answered, key=lambda r: _RANK[r.action])
            return Decision(strongest.action, strongest)
        if protected:
            # Only an answer about that very folder (".git/*"), never a broad "*", reaches it.
            return Decision("ask", RuleRef(source="protected", permission=permission, pattern=value, action="ask"))
        if configured:
            strongest = max(configured, key=lambda r: _RANK[r.action])
            return Decision(strongest.action, strongest)
        return default_decision(permission, value, changes=changes)


def with_hook(decision: Decision, said: Action | None, *, permission: str) -> Decision:
    """The rules' ``decision`` on a call, with what a PreToolUse hook ``said`` of it (None:
    nothing). A hook's deny denies and its ask asks; its allow spares the user a question only
    where the built-in defaults would ask, as a configured allow rule would: it never lifts a
    deny, a configured ``ask``, the protected folders, plan mode or the project boundary."""
    if said is None or decision.action == "deny":
        return decision
    rule = RuleRef(source="hook", permission=permission, pattern="PreToolUse", action=said)
    if said == "deny" or (said == "ask" and decision.action == "allow"):
        return Decision(said, rule)
    if said == "allow" and decision.action == "ask" and decision.rule.source == "default":
        return Decision("allow", rule)
    return decision
