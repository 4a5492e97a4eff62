"""What a check reports: ``Finding``s with LSP ranges, from any ``Checker``.

Ranges are LSP's (0-based lines, UTF-16 code-unit characters), converted once in positions.py
from whatever a checker measures in; tool results show the model 1-based ``line:col``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

Severity = Literal["error", "warning", "information", "hint"]


@dataclass(frozen=True)
class Position:
    line: int  # 0-based
    character: int  # UTF-16 code units


@dataclass(frozen=True)
class Range:
    start: Position
    end: Position


@dataclass(frozen=True)
class Fix:
    """A mechanical fix: replace ``range`` with ``new_text``."""

    title: str
    range: Range
    new_text: str


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    severity: Severity
    range: Range
    source: str = "totem"
    fix: Fix | None = None
    external: bool = False  # found by a project command on the saved file (set by run_checks)

    def for_model(self) -> str:
        return f"{self.range.start.line + 1}:{self.range.start.character + 1} {self.code} {self.message}"


@dataclass(frozen=True)
class CheckResult:
    findings: list[Finding]
    notes: list[str]  # what could not be checked, and why


class Checker(Protocol):
    """A check of one file. ``external`` checkers run commands on the saved file on disk."""

    name: str
    external: bool

    async def check(self, root, rel: str, text: str) -> CheckResult: ...
