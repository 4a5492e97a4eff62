"""Python files a small model writes, checked in process with pyflakes for what cannot run.

Only mistakes that make the code fail are reported: a syntax error, a name used but never
defined or imported (a forgotten import, a renamed function still called by its old name), an
undefined name in ``__all__``, a repeated argument, ``return``/``yield``/``break``/``continue``
out of place, and the imports that break across files (checks/imports.py). Style and unused imports are not, so a finding always means "this breaks"; aider
feeds the same class of errors (flake8's E9/F82x/F7xx) back to weak models, which fix most of
them on the next round (docs/decisions.md, "Small models").
"""

from __future__ import annotations

import ast
from pathlib import Path

import anyio
from pyflakes import checker, messages

from totem_engine.checks.base import CheckResult, Finding, Range
from totem_engine.checks.imports import import_findings
from totem_engine.checks.positions import from_line_column

# The breaking messages, with the codes flake8 gives them (its pyflakes plugin's table).
BREAKING = {
    messages.UndefinedName: "F821",
    messages.UndefinedExport: "F822",
    messages.UndefinedLocal: "F823",
    messages.DuplicateArgument: "F831",
    messages.ReturnOutsideFunction: "F706",
    messages.YieldOutsideFunction: "F704",
    messages.ContinueOutsideLoop: "F702",
    messages.BreakOutsideLoop: "F701",
}


def check_python(rel: str, text: str, root: Path | None = None) -> CheckResult:
    """The breaking findings of one Python file's text, with flake8's codes (E999: syntax); with
    the project's ``root``, those of its imports too (pylint's codes, checks/imports.py)."""
    lines = text.splitlines()
    try:
        tree = ast.parse(text, filename=rel)
    except SyntaxError as exc:
        at = from_line_column(lines, exc.lineno or 1, exc.offset or 1)
        return CheckResult([Finding("E999", f"SyntaxError: {exc.msg}", "error", Range(at, at), source="python")], [])
    findings = []
    for message in checker.Checker(tree, filename=rel).messages:
        code = BREAKING.get(type(message))
        if code is not None:
            at = from_line_column(lines, message.lineno, message.col + 1)
            findings.append(Finding(code, message.message % message.message_args, "error", Range(at, at), source="python"))
    if root is not None:
        findings += import_findings(root, rel, tree, lines)
    return CheckResult(findings, [])


class PythonChecker:
    name = "python"
    external = False

    async def check(self, root, rel: str, text: str) -> CheckResult:
        if not rel.endswith(".py"):
            return CheckResult([], [])
        return await anyio.to_thread.run_sync(check_python, rel, text, root)
