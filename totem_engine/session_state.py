"""What a session remembers between turns besides its messages, kept in the session's ``meta``.

The user's "always" answers (rules of this session), what the agent has read (content hashes
of files seen, the nested AGENTS.md files already attached), the files Totem's undo or redo
changed since the last turn (the model is told at the next), the visible todo list, whether it is
a Total.js project, the thinking effort chosen for it, and how its provider's token counts compare with the engine's estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from totem_engine.context import Calibration
from totem_engine.api.events import RuleRef
from totem_engine.tools.base import ReadLedger


@dataclass
class SessionState:
    rules: list[RuleRef] = field(default_factory=list)
    reads: ReadLedger = field(default_factory=ReadLedger)
    todos: list[dict] = field(default_factory=list)
    # Project-relative path -> "restored" | "deleted": what undo or redo did to it since the last turn.
    restored: dict[str, str] = field(default_factory=dict)
    totaljs: bool | None = None  # a Total.js project, decided at the session's first turn
    calibration: Calibration = field(default_factory=Calibration)  # reported / estimated tokens
    # The thinking effort the user chose for this session (none/low/medium/high); None: the config's.
    reasoning: str | None = None

    @classmethod
    def from_meta(cls, meta: dict) -> "SessionState":
        return cls(
            rules=[RuleRef.model_validate(r) for r in meta.get("rules", [])],
            reads=ReadLedger(seen=dict(meta.get("seen", {})), instructions=set(meta.get("instructions", []))),
            todos=list(meta.get("todos", [])),
            restored=dict(meta.get("restored", {})),
            totaljs=meta.get("totaljs"),
            calibration=Calibration.from_meta(meta),
            reasoning=meta.get("reasoning"),
        )

    def to_meta(self) -> dict:
        return {
            "rules": [r.model_dump(by_alias=True) for r in self.rules],
            "seen": self.reads.seen,
            "instructions": sorted(self.reads.instructions),
            "todos": self.todos,
            "restored": self.restored,
            "totaljs": self.totaljs,
            "reasoning": self.reasoning,
            **self.calibration.to_meta(),
        }
