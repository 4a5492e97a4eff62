"""Total.js conventions as findings: the rule engine, project detection and the checker.

``TotalJsChecker`` is a ``Checker`` (checks/base.py) for ``.js`` files and the ``<script>``
blocks of ``.html`` pages; ``is_totaljs_project`` decides once per session whether a project
gets it. The rules, their sources and examples are in docs/conventions.md.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from totem_engine.checks.base import CheckResult
from totem_engine.checks.totaljs.detect import is_totaljs_project
from totem_engine.checks.totaljs.check import check_text, rules
from totem_engine.checks.totaljs.engine import Rule, applies_to


class TotalJsChecker:
    """The Total.js rules, run in process on the text the agent or the editor has."""

    name = "totaljs"
    external = False

    async def check(self, root: Path, rel: str, text: str) -> CheckResult:
        # Parsing is CPU work: off the event loop (each worker thread keeps its own parser).
        return await anyio.to_thread.run_sync(check_text, rel.replace("\\", "/"), text)


__all__ = ["Rule", "TotalJsChecker", "applies_to", "check_text", "is_totaljs_project", "rules"]
