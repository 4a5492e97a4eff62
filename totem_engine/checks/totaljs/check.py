"""A file checked against every Total.js rule: the catalogue of rule families and the run.

The families (style, declarations, modules, runtime, responses, data, naming) register their
rules with the engine's ``rule`` decorator and import the engine; this module imports them all,
so the engine itself imports no family.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from totem_engine.checks.base import CheckResult, Finding
from totem_engine.checks.positions import ByteOffsets
from totem_engine.checks.totaljs import data, declarations, modules, naming, responses, runtime, style
from totem_engine.checks.totaljs.engine import SYNTAX, Role, Rule, Source, applies_to, parser

_SCRIPT = re.compile(rb"<script\b([^>]*)>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_SCRIPT_TYPE = re.compile(rb"""\btype\s*=\s*["']?([^"'\s>]+)""", re.IGNORECASE)
_JS_TYPES = {b"text/javascript", b"application/javascript", b"module", b"text/babel"}


@functools.cache
def rules() -> tuple[Rule, ...]:
    """Every rule of every family, in code order."""
    found = [*SYNTAX, *style.RULES, *declarations.RULES, *modules.RULES, *runtime.RULES]
    found += [*responses.RULES, *data.RULES, *naming.RULES]
    return tuple(sorted(found, key=lambda r: r.code))


def check_text(rel: str, text: str, *, only: Iterable[str] | None = None) -> CheckResult:
    """The findings of the Total.js rules for one file (``only``: just these codes)."""
    if not applies_to(rel):
        return CheckResult([], [])
    try:
        ts_parser = parser()
    except ImportError:
        return CheckResult([], ["totaljs: the tree-sitter packages are not installed; Total.js rules not checked."])
    encoded = text.encode("utf-8", errors="surrogatepass")
    role = Role.of(rel)
    segments = _segments(encoded) if rel.endswith(".html") else [(0, encoded)]
    wanted = set(only) if only is not None else None
    positions = ByteOffsets(encoded)
    findings: list[Finding] = []
    notes: list[str] = []
    for base, code in segments:
        src = Source(rel, encoded, base, code, ts_parser.parse(code), role, positions)
        for r in rules():
            if wanted is not None and r.code not in wanted:
                continue
            if r.code == "TJS060" and base != segments[0][0]:
                continue  # the file name is reported once per file
            findings += [src.finding(r, hit) for hit in r.run(src)]
        if src.root.has_error:
            notes.append(f"totaljs: {rel} has a syntax error; TJS002 (semicolons) was not checked.")
    findings.sort(key=lambda f: (f.range.start.line, f.range.start.character, f.code))
    return CheckResult(findings, notes)


def _segments(page: bytes) -> list[tuple[int, bytes]]:
    """The inline JavaScript blocks of a page: ``(offset in the file, code)``."""
    found = []
    for match in _SCRIPT.finditer(page):
        attrs = match.group(1)
        if re.search(rb"\bsrc\s*=", attrs, re.IGNORECASE):
            continue
        kind = _SCRIPT_TYPE.search(attrs)
        if kind and kind.group(1).lower() not in _JS_TYPES:
            continue  # jComponent templates: type="text/html"
        found.append((match.start(2), match.group(2)))
    return found or [(0, b"")]
