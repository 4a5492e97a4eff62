"""Formatting: tabs for indentation, semicolons at the end of statements, single quotes."""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from totem_engine.checks.totaljs.engine import STYLE_URL, Hit, Rule, Source, rule

RULES: list[Rule] = []

SHORT_STRING = 80  # characters between the quotes; longer strings are left as they are

# Statements that end with a semicolon (tree-sitter-javascript node types).
_TERMINATED = {
    "expression_statement",
    "variable_declaration",
    "lexical_declaration",
    "return_statement",
    "throw_statement",
    "break_statement",
    "continue_statement",
    "debugger_statement",
    "import_statement",
    "export_statement",
}
# Nodes whose inside may span lines verbatim: their lines are not code lines.
_VERBATIM = {"template_string", "string", "comment", "regex"}


@rule(RULES, "TJS001", "warning", "indent with tabs, not spaces", STYLE_URL)
def indentation(src: Source) -> Iterator[Hit]:
    """A code line indented with spaces (also tabs followed by alignment spaces).

    Source: Total.js coding style, "Tabs, not spaces (tab width 4)" (totaljs/aicontext
    totaljs/style.md) and the Total.js Guide, "use tabs (tab width 4) instead of spaces"
    (totaljs/guidelines). Lines inside template literals, multi-line strings and block comments
    are not code lines and are left alone; blank lines are not indentation.

    Fix: the leading whitespace becomes tabs, one per indentation level; the level of spaces is
    the file's smallest space indentation (2, 3, 4 or 8; else 4), rounded to the nearest level (half a level is
    alignment and is dropped).
    """
    code = src.code
    verbatim = _outermost(
        [(n.start_byte, n.end_byte) for n in src.nodes(*_VERBATIM) if b"\n" in code[n.start_byte : n.end_byte]]
    )
    lines = []  # (offset of the line, its leading whitespace)
    offset = 0 if src.base == 0 or src.data[src.base - 1 : src.base] == b"\n" else None
    while True:
        if offset is not None:
            end = len(code) - len(code[offset:].lstrip(b" \t"))
            rest = code[end : end + 1]
            if rest not in (b"\n", b"\r", b"") and not _inside(verbatim, offset):
                lines.append((offset, code[offset:end]))
        newline = code.find(b"\n", offset or 0)
        if newline < 0:
            break
        offset = newline + 1
    widths = [len(ws) for _, ws in lines if ws and not ws.strip(b" ")]
    unit = min((w for w in widths if w >= 2), default=4)
    if unit not in (2, 3, 4, 8):
        unit = 4
    for start, ws in lines:
        if b" " not in ws:
            continue
        tabs = ws.count(b"\t")
        levels = tabs + (ws.count(b" ") + unit // 2 - 1) // unit  # nearest; a half rounds down
        yield Hit(
            start,
            start + len(ws),
            "Indent with tabs, not spaces (Total.js style, tab width 4).",
            ("Indent with tabs", start, start + len(ws), "\t" * levels),
        )


def _outermost(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans not inside another (a string in a template's substitution is inside it)."""
    kept: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if kept and end <= kept[-1][1]:
            continue
        kept.append((start, end))
    return kept


def _inside(spans: list[tuple[int, int]], offset: int) -> bool:
    """Whether ``offset`` is strictly inside one of the disjoint, sorted ``spans``."""
    index = bisect.bisect_left(spans, (offset, -1)) - 1
    return index >= 0 and spans[index][1] > offset


@rule(RULES, "TJS002", "warning", "end statements with a semicolon", STYLE_URL)
def semicolons(src: Source) -> Iterator[Hit]:
    """A statement that relies on automatic semicolon insertion.

    Source: Total.js coding style, "Semicolons at the end of statements" (totaljs/aicontext
    totaljs/style.md); the Total.js Guide shows ``someobj.somefn = function() {};`` and
    ``var a;`` (totaljs/guidelines). Not checked in a file that does not parse.

    Range: the statement's last token. Fix: insert ``;`` after it.
    """
    if src.root.has_error:
        return
    for node in src.nodes(*_TERMINATED):
        if node.type == "export_statement" and node.child_by_field_name("declaration") is not None:
            continue  # the declaration it exports carries its own semicolon, if it needs one
        if node.type == "export_statement" and any(c.type in ("function_expression", "class") for c in node.children):
            continue  # export default function () {}
        last = node.children[-1] if node.children else None
        if last is None or last.type == ";":
            continue
        token = last
        while token.children:
            token = token.children[-1]
        yield Hit(
            token.start_byte,
            token.end_byte,
            "End the statement with a semicolon.",
            ("Add the semicolon", node.end_byte, node.end_byte, ";"),
        )


@rule(RULES, "TJS003", "warning", "short strings in single quotes", STYLE_URL)
def quotes(src: Source) -> Iterator[Hit]:
    """A short string in double quotes.

    Source: Total.js coding style, "Short strings in single quotes '...'" (totaljs/aicontext
    totaljs/style.md); Total.js Guide: ``var str = 'Total.js';`` (totaljs/guidelines,
    "short strings should be always wrapped in ' apostrophes"). Short: at most 80 characters
    between the quotes. A string that contains an apostrophe is left alone (it would need an
    escape).

    Fix: the same string in single quotes (``\\"`` becomes ``"``).
    """
    for node in src.nodes("string"):
        raw = src.text(node)
        if len(raw) < 2 or raw[0] != '"' or "'" in raw or len(raw) - 2 > SHORT_STRING:
            continue
        yield Hit(
            node.start_byte,
            node.end_byte,
            f"Write short strings in single quotes: '{_unescape_double(raw[1:-1])}'.",
            ("Use single quotes", node.start_byte, node.end_byte, "'" + _unescape_double(raw[1:-1]) + "'"),
        )


def _unescape_double(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append('"' if body[i + 1] == '"' else body[i : i + 2])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)

