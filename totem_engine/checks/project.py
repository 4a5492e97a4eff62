"""The project's own checks: commands it already has, whose output becomes findings.

``[checks.<name>]`` in config: ``command`` (``{file}`` is replaced by the file's path, quoted),
``format`` and ``files`` (a glob on the project-relative path). Commands run on the saved file
on disk, in the project root, in their own process group, with a time limit (checks/process.py);
a file whose editor buffer differs from the disk is skipped with a note. A check that fails to
start, times out, or prints what its format cannot read gives a note, never an exception.

Formats (every position goes through checks/positions.py):

- ``lines``: ``path:line:col: message`` or ``path:line: message`` lines (GNU style, as most
  linters print); columns in characters.
- ``ruff-json``: ``ruff check --output-format=json``: a list of ``{code, message, filename,
  location: {row, column}, end_location, fix: {message, applicability, edits: [{content,
  location, end_location}]}}``, 1-based rows and character columns. A fix with one edit becomes
  the quick fix; ``display-only`` fixes are not offered.
- ``eslint-json``: ESLint's ``json`` formatter: a list of ``{filePath, messages: [{ruleId,
  severity (1 warning, 2 error), message, line, column, endLine, endColumn, fix: {range, text}}]}}``;
  columns in UTF-16 code units, ``fix.range`` in UTF-16 offsets into the file.
- ``sarif``: SARIF 2.1.0: ``runs[].results[]`` with ``ruleId``, ``level``, ``message.text`` and
  ``locations[0].physicalLocation`` (``artifactLocation.uri``, ``region`` with ``startLine``,
  ``startColumn``, ``endLine``, ``endColumn``); columns in the run's ``columnKind`` (UTF-16 code
  units unless it says ``unicodeCodePoints``). A result's single replacement becomes the quick fix.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio

from totem_engine import json_in
from totem_engine.checks.base import CheckResult, Finding, Fix, Position, Range, Severity
from totem_engine.checks.positions import (
    from_line_column,
    from_utf16_line_column,
    from_utf16_offset,
    utf16_units,
)
from totem_engine.checks.process import run_command, with_file

TIMEOUT = 60.0  # seconds
_LINE = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<message>.+)$")
_SEVERITY = re.compile(r"^(error|warning|info|note|hint)\b[:\s]*", re.IGNORECASE)


class OutputError(ValueError):
    """Output that its declared format cannot read."""


class CommandCheck:
    external = True

    def __init__(self, name: str, command: str, *, format: str = "lines", files: str = "*"):
        self.name = name
        self.command = command
        self.format = format
        self.files = files

    def applies_to(self, rel: str) -> bool:
        return fnmatch.fnmatchcase(rel, self.files) or fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], self.files)

    async def check(self, root: Path, rel: str, text: str) -> CheckResult:
        if not self.applies_to(rel):
            return CheckResult([], [])
        path = root / rel
        try:
            on_disk = await anyio.Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return CheckResult([], [f"{self.name}: {rel} is not on disk yet; checked after it is saved."])
        if on_disk != text:
            return CheckResult([], [f"{self.name}: {rel} has unsaved changes; checked after it is saved."])
        result = await run_command(root, with_file(self.command, path), timeout=TIMEOUT)
        if result.problem:
            return CheckResult([], [f"{self.name}: {result.problem}"])
        parse = PARSERS.get(self.format, parse_lines)
        output = result.stdout if self.format != "lines" else _joined(result.stdout, result.stderr)
        try:
            findings = parse(output, rel, text, self.name)
        except OutputError as exc:
            detail = result.first_error_line() if result.returncode not in (0, 1) else str(exc)
            return CheckResult([], [f"{self.name}: could not read its output as {self.format} ({detail})"])
        if not findings and result.returncode not in (0, 1):
            # Linters exit 1 when they found something; other codes are failures (127: not found).
            detail = result.first_error_line()
            return CheckResult([], [f"{self.name}: exited with {result.returncode}" + (f": {detail}" if detail else "")])
        return CheckResult(findings, [])


def _joined(stdout: str, stderr: str) -> str:
    return stdout if not stderr else stdout + ("\n" if stdout and not stdout.endswith("\n") else "") + stderr


def parse_lines(output: str, rel: str, text: str, source: str) -> list[Finding]:
    """``path:line[:col]: [severity:] message`` lines about ``rel`` as findings."""
    lines = text.split("\n")
    findings = []
    for raw in output.splitlines():
        match = _LINE.match(raw.strip())
        if not match or not _same_file(match["path"], rel):
            continue
        message = match["message"].strip()
        severity: Severity = "warning"
        level = _SEVERITY.match(message)
        if level:
            severity = {"error": "error", "warning": "warning", "hint": "hint"}.get(level[1].lower(), "information")
            message = message[level.end() :]
        start = from_line_column(lines, int(match["line"]), int(match["col"] or 1))
        end = from_line_column(lines, int(match["line"]), len(lines[start.line]) + 1 if lines else 1)
        findings.append(Finding(code=source, message=message, severity=severity, range=Range(start, end), source=source))
    return findings


def _same_file(reported: str, rel: str) -> bool:
    reported = reported.replace("\\", "/").removeprefix("./")
    return reported == rel or reported.endswith("/" + rel)


def _load_json(output: str) -> Any:
    """The JSON document in ``output`` (None when there is nothing); OutputError when it is not JSON."""
    stripped = output.strip()
    if not stripped:
        return None
    try:
        return json_in.loads(stripped, what="the output")
    except ValueError as exc:
        raise OutputError(str(exc)) from None


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _end_of_line(lines: list[str], position: Position) -> Position:
    return Position(position.line, utf16_units(lines[position.line]) if lines else 0)


# How ruff names a syntax error: a null code (before 0.5), E999, then "invalid-syntax". Those are
# errors; rule findings are warnings (ruff's own "severity" field says "error" for every one).
_RUFF_SYNTAX = frozenset({"E999", "invalid-syntax"})


def parse_ruff_json(output: str, rel: str, text: str, source: str) -> list[Finding]:
    """``ruff check --output-format=json`` about ``rel`` as findings."""
    data = _load_json(output)
    if data is None:
        return []
    if not isinstance(data, list):
        raise OutputError("expected a JSON list of diagnostics")
    lines = text.split("\n")
    findings = []
    for item in data:
        if not isinstance(item, dict) or not _same_file(str(item.get("filename", "")), rel):
            continue
        location = item.get("location") or {}
        end_location = item.get("end_location") or location
        start = from_line_column(lines, _int(location.get("row"), 1), _int(location.get("column"), 1))
        end = from_line_column(lines, _int(end_location.get("row"), 1), _int(end_location.get("column"), 1))
        code = item.get("code")
        fix = _ruff_fix(item.get("fix"), lines, code or source)
        findings.append(
            Finding(
                code=str(code) if code else source,
                message=str(item.get("message", "")),
                severity="error" if not code or code in _RUFF_SYNTAX else "warning",
                range=Range(start, end),
                source=source,
                fix=fix,
            )
        )
    return findings


def _ruff_fix(fix: Any, lines: list[str], code: str) -> Fix | None:
    if not isinstance(fix, dict) or fix.get("applicability") == "display-only":
        return None
    edits = fix.get("edits")
    if not isinstance(edits, list) or len(edits) != 1 or not isinstance(edits[0], dict):
        return None  # a Fix is one replacement; several edits are not offered
    edit = edits[0]
    location, end_location = edit.get("location") or {}, edit.get("end_location") or {}
    start = from_line_column(lines, _int(location.get("row"), 1), _int(location.get("column"), 1))
    end = from_line_column(lines, _int(end_location.get("row"), 1), _int(end_location.get("column"), 1))
    if (end_location.get("row") or 0) > len(lines):  # an edit that runs to the end of the file
        end = _end_of_line(lines, Position(len(lines) - 1, 0))
    return Fix(title=str(fix.get("message") or f"Fix {code}"), range=Range(start, end), new_text=str(edit.get("content", "")))


def parse_eslint_json(output: str, rel: str, text: str, source: str) -> list[Finding]:
    """ESLint's ``json`` formatter output about ``rel`` as findings."""
    data = _load_json(output)
    if data is None:
        return []
    if not isinstance(data, list):
        raise OutputError("expected a JSON list of file results")
    lines = text.split("\n")
    body = text.removeprefix("\ufeff")  # ESLint's offsets leave the byte order mark out
    shift = len(text) - len(body)
    findings = []
    for result in data:
        if not isinstance(result, dict) or not _same_file(str(result.get("filePath", "")), rel):
            continue
        for message in result.get("messages") or []:
            if not isinstance(message, dict):
                continue
            line, column = _int(message.get("line"), 1), _int(message.get("column"), 1)
            start = from_utf16_line_column(lines, line, column)
            if isinstance(message.get("endLine"), int):
                end = from_utf16_line_column(lines, message["endLine"], _int(message.get("endColumn"), column))
            else:
                end = _end_of_line(lines, start)
            rule = message.get("ruleId")
            fix = None
            raw_fix = message.get("fix")
            if isinstance(raw_fix, dict) and isinstance(raw_fix.get("range"), list) and len(raw_fix["range"]) == 2:
                first, last = (_int(v, 0) + shift for v in raw_fix["range"])
                fix = Fix(
                    title=f"Fix {rule}" if rule else "Fix",
                    range=Range(from_utf16_offset(text, first), from_utf16_offset(text, last)),
                    new_text=str(raw_fix.get("text", "")),
                )
            findings.append(
                Finding(
                    code=str(rule) if rule else source,
                    message=str(message.get("message", "")),
                    severity="error" if message.get("severity") == 2 or message.get("fatal") else "warning",
                    range=Range(start, end),
                    source=source,
                    fix=fix,
                )
            )
    return findings


_SARIF_LEVELS: dict[str, Severity] = {"error": "error", "warning": "warning", "note": "information", "none": "hint"}


def parse_sarif(output: str, rel: str, text: str, source: str) -> list[Finding]:
    """SARIF 2.1.0 results about ``rel`` as findings."""
    data = _load_json(output)
    if data is None:
        return []
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise OutputError("expected a SARIF log with runs")
    lines = text.split("\n")
    findings = []
    for run in data["runs"]:
        if not isinstance(run, dict):
            continue
        position = from_line_column if run.get("columnKind") == "unicodeCodePoints" else from_utf16_line_column
        rules = _sarif_rules(run)
        for result in run.get("results") or []:
            if not isinstance(result, dict):
                continue
            locations = result.get("locations") or []
            physical = (locations[0] or {}).get("physicalLocation") if locations and isinstance(locations[0], dict) else None
            if not isinstance(physical, dict):
                continue
            uri = ((physical.get("artifactLocation") or {}).get("uri")) or ""
            if not _same_file(_path_of_uri(str(uri)), rel):
                continue
            region = physical.get("region") or {}
            range_ = _sarif_range(region, lines, position)
            if range_ is None:
                continue
            rule_id = result.get("ruleId") or (result.get("rule") or {}).get("id")
            rule = rules.get(rule_id, {})
            level = result.get("level") or ((rule.get("defaultConfiguration") or {}).get("level")) or "warning"
            findings.append(
                Finding(
                    code=str(rule_id) if rule_id else source,
                    message=_sarif_message(result, rule),
                    severity=_SARIF_LEVELS.get(level, "warning"),
                    range=range_,
                    source=source,
                    fix=_sarif_fix(result, rel, lines, position),
                )
            )
    return findings


def _sarif_rules(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    driver = (run.get("tool") or {}).get("driver") or {}
    return {r["id"]: r for r in driver.get("rules") or [] if isinstance(r, dict) and "id" in r}


def _sarif_message(result: dict[str, Any], rule: dict[str, Any]) -> str:
    message = result.get("message") or {}
    if message.get("text"):
        return str(message["text"])
    template = (rule.get("messageStrings") or {}).get(message.get("id"), {}).get("text")
    if template:
        arguments = message.get("arguments") or []
        return re.sub(r"\{(\d+)\}", lambda m: str(arguments[int(m[1])]) if int(m[1]) < len(arguments) else m[0], template)
    return str(rule.get("shortDescription", {}).get("text") or message.get("id") or "")


def _sarif_range(region: dict[str, Any], lines: list[str], position: Callable[[list[str], int, int], Position]) -> Range | None:
    if not isinstance(region.get("startLine"), int):
        return None  # a region given only in offsets is not placed
    start_line = region["startLine"]
    start = position(lines, start_line, _int(region.get("startColumn"), 1))
    end_line = _int(region.get("endLine"), start_line)
    if isinstance(region.get("endColumn"), int):
        end = position(lines, end_line, region["endColumn"])
    else:  # SARIF: no endColumn means to the end of the end line
        end = _end_of_line(lines, position(lines, end_line, 1))
    return Range(start, end)


def _sarif_fix(result: dict[str, Any], rel: str, lines: list[str], position) -> Fix | None:
    fixes = result.get("fixes") or []
    if len(fixes) != 1 or not isinstance(fixes[0], dict):
        return None
    changes = fixes[0].get("artifactChanges") or []
    if len(changes) != 1 or not isinstance(changes[0], dict):
        return None
    if not _same_file(_path_of_uri(str((changes[0].get("artifactLocation") or {}).get("uri") or "")), rel):
        return None
    replacements = changes[0].get("replacements") or []
    if len(replacements) != 1 or not isinstance(replacements[0], dict):
        return None
    range_ = _sarif_range(replacements[0].get("deletedRegion") or {}, lines, position)
    if range_ is None:
        return None
    inserted = (replacements[0].get("insertedContent") or {}).get("text", "")
    title = ((fixes[0].get("description") or {}).get("text")) or f"Fix {result.get('ruleId') or ''}".strip()
    return Fix(title=str(title), range=range_, new_text=str(inserted))


def _path_of_uri(uri: str) -> str:
    if uri.startswith("file:"):
        return unquote(urlparse(uri).path)
    return unquote(uri)


PARSERS: dict[str, Callable[[str, str, str, str], list[Finding]]] = {
    "lines": parse_lines,
    "ruff-json": parse_ruff_json,
    "eslint-json": parse_eslint_json,
    "sarif": parse_sarif,
}
FORMATS = tuple(PARSERS)
