"""The checks of a project: the built-in Total.js rules (in Total.js projects, unless
``conventions = false``) and the project's own commands."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from totem_engine.checks.base import CheckResult, Checker
from totem_engine.checks.project import CommandCheck
from totem_engine.checks.totaljs import TotalJsChecker
from totem_engine.config import Config


def checkers_from_config(config: Config, *, totaljs: bool) -> list[Checker]:
    """``totaljs``: the project is a Total.js project (decided once per session, see detect.py)."""
    checkers: list[Checker] = []
    if totaljs and config.conventions:
        checkers.append(TotalJsChecker())
    checkers += [CommandCheck(name, c.command, format=c.format, files=c.files) for name, c in config.checks.items()]
    return checkers


async def run_checks(checkers: list[Checker], root: Path, rel: str, text: str, *, external: bool = True) -> CheckResult:
    """Every checker's findings and notes for one file; ``external=False`` skips command checks."""
    findings, notes = [], []
    for checker in checkers:
        if checker.external and not external:
            continue
        result = await checker.check(root, rel, text)
        findings += [replace(f, external=True) for f in result.findings] if checker.external else result.findings
        notes += result.notes
    return CheckResult(findings, notes)
