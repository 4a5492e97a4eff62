"""The project's checks as an editor shows them (diagnostics and their fixes): running checkers
on a file's text and the findings they give, positions in UTF-16 code units as LSP counts them.
The checkers themselves come from ``Engine.editor_checkers()``; the engine's own types and
functions, named here for the doors."""

from totem_engine.checks.base import CheckResult, Finding, Fix
from totem_engine.checks.positions import utf16_units
from totem_engine.checks.registry import run_checks

__all__ = ["CheckResult", "Finding", "Fix", "run_checks", "utf16_units"]
