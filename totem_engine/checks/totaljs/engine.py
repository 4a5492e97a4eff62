"""The Total.js rule engine: a tree-sitter parse of JavaScript, rules and their hits, findings.

Rules measure in tree-sitter's unit, byte offsets into the UTF-8 source; ``Source.finding``
turns them into LSP ranges with ``positions.ByteOffsets`` (``from_byte_offset`` for many
offsets; positions.py is the one place conversions happen). A ``.html`` file is checked in its ``<script>`` blocks (jComponent pages): each block
is parsed on its own and its offsets are shifted by where the block starts in the file.

The grammar is loaded on first use and cached; each thread keeps its own ``Parser`` (parsers are
not shared between threads). Without the ``tree-sitter`` packages the check gives a note.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from totem_engine.checks.base import Finding, Fix, Range, Severity
from totem_engine.checks.positions import ByteOffsets

SOURCE = "totem"
STYLE_URL = "https://github.com/totaljs/aicontext/blob/HEAD/totaljs/style.md"
GUIDELINES_URL = "https://github.com/totaljs/guidelines/blob/HEAD/readme.md"
ANTI_PATTERNS_URL = "https://github.com/totaljs/aicontext/blob/HEAD/totaljs/anti-patterns.md"
ARCHITECTURE_URL = "https://github.com/totaljs/aicontext/blob/HEAD/totaljs/architecture.md"
ACTIONS_URL = "https://github.com/totaljs/aicontext/blob/HEAD/totaljs/actions.md"
ROUTING_URL = "https://github.com/totaljs/aicontext/blob/HEAD/totaljs/controllers-and-routing.md"

FUNCTIONS = {
    "function_declaration",
    "function_expression",
    "function",  # older grammars
    "arrow_function",
    "method_definition",
    "generator_function_declaration",
    "generator_function",
}

# Folders whose code runs outside Total.run(): built-ins and process.env are theirs to use.
_OUTSIDE = {"test", "tests", "scripts", "bin", "migrations", "tools"}
# Start scripts at the project root: require('total5'), process.env.PORT.
_BOOT = {"index.js", "debug.js", "release.js"}


@dataclass(frozen=True)
class Role:
    """Where a file's code runs, from its project-relative path."""

    browser: bool  # public/ or a .html page: runs in the browser
    boot: bool  # the start script at the root
    outside: bool  # tests, scripts, migrations: run outside Total.run()
    definition: bool  # under definitions/

    @property
    def server(self) -> bool:
        """Application code that runs inside Total.run()."""
        return not (self.browser or self.boot or self.outside)

    @classmethod
    def of(cls, rel: str) -> Role:
        parts = PurePosixPath(rel).parts
        folders = parts[:-1]
        return cls(
            browser=rel.endswith(".html") or "public" in folders,
            boot=rel in _BOOT,
            outside=bool(folders and folders[0] in _OUTSIDE) or rel == "test.js",
            definition="definitions" in folders,
        )


@dataclass(frozen=True)
class Hit:
    """What a rule reports, in bytes of its segment; the engine makes a Finding of it."""

    start: int
    end: int
    message: str
    fix: tuple[str, int, int, str] | None = None  # (title, start, end, new text)


@dataclass(frozen=True)
class Rule:
    code: str
    severity: Severity
    summary: str
    source: str  # the URL of the public guidance it follows
    run: Callable[[Source], Iterable[Hit]]


def rule(registry: list[Rule], code: str, severity: Severity, summary: str, source: str):
    """Register the decorated ``run(src) -> Iterable[Hit]`` as a rule in ``registry``."""

    def decorate(run: Callable[[Source], Iterable[Hit]]) -> Callable[[Source], Iterable[Hit]]:
        registry.append(Rule(code, severity, summary, source, run))
        return run

    return decorate


class Source:
    """One JavaScript segment: the whole file, or one ``<script>`` block of a page."""

    def __init__(self, rel: str, data: bytes, base: int, code: bytes, tree, role: Role, positions: ByteOffsets):
        self.rel = rel
        self.data = data  # the whole file, UTF-8
        self.positions = positions  # of ``data``
        self.base = base  # where ``code`` starts in ``data``
        self.code = code
        self.tree = tree
        self.root = tree.root_node
        self.role = role

    # Reading the tree -------------------------------------------------------------------------

    def text(self, node) -> str:
        return self.code[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    def nodes(self, *types: str, under=None) -> Iterator:
        """Every node of one of ``types`` (all nodes when none), depth first, in source order."""
        stack = [under if under is not None else self.root]
        while stack:
            node = stack.pop()
            if not types or node.type in types:
                yield node
            stack.extend(reversed(node.children))

    def line_of(self, offset: int) -> int:
        """The 1-based line of a segment byte offset, for messages."""
        return self.positions.position(self.base + offset).line + 1

    @staticmethod
    def enclosing_function(node):
        parent = node.parent
        while parent is not None:
            if parent.type in FUNCTIONS:
                return parent
            parent = parent.parent
        return None

    def string_value(self, node) -> str | None:
        """The value of a plain string literal (no escapes decoded), or None for anything else."""
        if node is None or node.type != "string":
            return None
        return self.text(node)[1:-1]

    def call_name(self, call) -> str | None:
        """``require`` for ``require(...)``; ``$.json`` for ``$.json(...)``; else None."""
        function = call.child_by_field_name("function")
        if function is None:
            return None
        if function.type == "identifier":
            return self.text(function)
        if function.type == "member_expression":
            obj, prop = function.child_by_field_name("object"), function.child_by_field_name("property")
            if obj is not None and prop is not None and obj.type == "identifier":
                return f"{self.text(obj)}.{self.text(prop)}"
        return None

    @staticmethod
    def arguments(call) -> list:
        args = call.child_by_field_name("arguments")
        return [c for c in args.named_children if c.type != "comment"] if args is not None else []

    # Reporting --------------------------------------------------------------------------------

    def range(self, start: int, end: int) -> Range:
        return Range(self.positions.position(self.base + start), self.positions.position(self.base + end))

    def finding(self, rule: Rule, hit: Hit) -> Finding:
        fix = None
        if hit.fix is not None:
            title, start, end, new_text = hit.fix
            fix = Fix(title=title, range=self.range(start, end), new_text=new_text)
        return Finding(
            code=rule.code,
            message=hit.message,
            severity=rule.severity,
            range=self.range(hit.start, hit.end),
            source=SOURCE,
            fix=fix,
        )


@functools.cache
def _language():
    import tree_sitter_javascript
    from tree_sitter import Language

    return Language(tree_sitter_javascript.language())


_local = threading.local()


def parser():
    parser = getattr(_local, "parser", None)
    if parser is None:
        from tree_sitter import Parser

        parser = _local.parser = Parser(_language())
    return parser


def applies_to(rel: str) -> bool:
    """JavaScript files and HTML pages of the project, not dependencies or minified bundles."""
    parts = PurePosixPath(rel).parts
    if "node_modules" in parts or (parts and parts[0] == ".totem") or rel.endswith(".min.js"):
        return False
    return rel.endswith(".js") or rel.endswith(".html")


# TJS000: the parse itself --------------------------------------------------------------------

SYNTAX: list[Rule] = []


@rule(SYNTAX, "TJS000", "error", "syntax error", "https://tree-sitter.github.io/tree-sitter/")
def syntax_errors(src: Source) -> Iterator[Hit]:
    """A part of the file that does not parse as JavaScript (tree-sitter ERROR or MISSING node).

    Not a convention: every other rule needs a sound parse, so the model hears about it first.
    Reports at most three places.
    """
    if not src.root.has_error:
        return
    count, covered = 0, -1
    for node in src.nodes():
        if count == 3:
            return
        if node.start_byte < covered:
            continue  # inside an ERROR already reported
        if node.type == "ERROR":
            count += 1
            covered = node.end_byte
            first_line = src.code[node.start_byte : node.end_byte].split(b"\n")[0]
            end = node.start_byte + max(1, len(first_line.rstrip()))
            yield Hit(node.start_byte, min(end, node.end_byte), "Syntax error: this does not parse as JavaScript; fix it first.")
        elif node.is_missing:
            count += 1
            yield Hit(node.start_byte, node.end_byte, f"Syntax error: missing `{node.type}` here.")
