"""Data: the shared ``DATA`` QueryBuilder, filtering in the query."""

from __future__ import annotations

from collections.abc import Iterator

from totem_engine.checks.totaljs.engine import ANTI_PATTERNS_URL, FUNCTIONS, Hit, Rule, Source, rule

RULES: list[Rule] = []

# QueryBuilder methods that narrow (or bound) what a query loads.
NARROWING = {
    "where", "id", "in", "notin", "between", "search", "query", "autoquery", "or", "contains",
    "empty", "month", "year", "day", "hour", "minute", "userid", "gridfilter", "take", "first",
    "limit", "paginate", "page", "skip", "permit", "filter",
}


@rule(RULES, "TJS050", "information", "DATA instead of DB()", ANTI_PATTERNS_URL)
def db_calls(src: Source) -> Iterator[Hit]:
    """``DB()`` for a query.

    Source: Total.js anti-patterns, "DB() as the default": ``DB()`` creates a new QueryBuilder
    controller, ``DATA`` is the shared singleton; do not copy ``DB()`` into new Total.js 5 code
    (totaljs/aicontext totaljs/anti-patterns.md; architecture.md "Global / singleton model").

    Fix, when ``DB()`` has no arguments and a query method is called on it directly
    (``DB().find('x')``): ``DATA.find('x')``.
    """
    for call in src.nodes("call_expression"):
        if src.call_name(call) != "DB":
            continue
        fix = None
        parent = call.parent
        if (
            not src.arguments(call)
            and parent is not None
            and parent.type == "member_expression"
            and parent.child_by_field_name("object") == call
        ):
            fix = ("Use DATA", call.start_byte, call.end_byte, "DATA")
        yield Hit(
            call.start_byte,
            call.end_byte,
            "Query with the shared `DATA` (`DATA.find('tbl').where(...).promise($)`), not `DB()`,"
            " which creates a new controller.",
            fix,
        )


def _unwrap(node):
    while node is not None and node.type in ("await_expression", "parenthesized_expression"):
        node = node.named_children[0] if node.named_children else None
    return node


def _chain(src: Source, node) -> tuple[str, list[str], object] | None:
    """For ``DATA.find('t').a().b()`` (or ``DB().find``): ``(last method, methods, find call)``."""
    node = _unwrap(node)
    methods: list[str] = []
    while node is not None and node.type == "call_expression":
        function = node.child_by_field_name("function")
        if function is None or function.type != "member_expression":
            return None
        prop = src.text(function.child_by_field_name("property"))
        obj = function.child_by_field_name("object")
        methods.append(prop)
        if prop == "find" and (src.text(obj) == "DATA" or (obj.type == "call_expression" and src.call_name(obj) == "DB")):
            return methods[0], methods[1:], node
        node = obj
    return None


def _table(src: Source, find) -> str:
    args = src.arguments(find)
    return src.text(args[0]) if args else "..."


def _filters_of(src: Source, scope, name: str, after: int) -> Iterator:
    """``name.filter`` member expressions in ``scope`` after byte ``after``."""
    for member in src.nodes("member_expression", under=scope):
        if member.start_byte < after:
            continue
        obj, prop = member.child_by_field_name("object"), member.child_by_field_name("property")
        if obj is not None and obj.type == "identifier" and src.text(obj) == name and src.text(prop) == "filter":
            parent = member.parent
            if parent is not None and parent.type == "call_expression" and parent.child_by_field_name("function") == member:
                yield member


@rule(RULES, "TJS051", "warning", "filter in the query, not in JavaScript", ANTI_PATTERNS_URL)
def table_scans(src: Source) -> Iterator[Hit]:
    """A whole table loaded with ``DATA.find('t')`` and then filtered in JavaScript.

    Source: Total.js anti-patterns, "In-memory table scans": "Filter in QueryBuilder. Do not load
    a table to filter it in JavaScript." (totaljs/aicontext totaljs/anti-patterns.md).
    The pattern, precisely: a ``DATA.find(...)`` (or ``DB().find(...)``) chain with none of the
    narrowing methods (``where``, ``id``, ``in``, ``search``, ``autoquery``, ``take``, ...) whose
    rows land in a name, and ``name.filter(`` is called later in the same function:
    ``var rows = await DATA.find('t').promise($); rows.filter(...)``, or
    ``DATA.find('t').callback(function(err, rows) { rows.filter(...) })``.
    """
    for declarator in src.nodes("variable_declarator"):
        name, value = declarator.child_by_field_name("name"), declarator.child_by_field_name("value")
        if name is None or name.type != "identifier" or value is None:
            continue
        chain = _chain(src, value)
        if chain is None or chain[0] != "promise" or set(chain[1]) & NARROWING:
            continue
        scope = src.enclosing_function(declarator) or src.root
        for member in _filters_of(src, scope, src.text(name), declarator.end_byte):
            yield _scan_hit(src, member, src.text(name), chain[2])
    for call in src.nodes("call_expression"):
        chain = _chain(src, call)
        if chain is None or chain[0] != "callback" or set(chain[1]) & NARROWING:
            continue
        args = src.arguments(call)
        if not args or args[0].type not in FUNCTIONS:
            continue
        params = args[0].child_by_field_name("parameters")
        names = [p for p in (params.named_children if params is not None else []) if p.type == "identifier"]
        if len(names) < 2:
            continue
        rows = src.text(names[1])
        for member in _filters_of(src, args[0], rows, 0):
            yield _scan_hit(src, member, rows, chain[2])


def _scan_hit(src: Source, member, name: str, find) -> Hit:
    table = _table(src, find)
    return Hit(
        member.start_byte,
        member.end_byte,
        f"`{name}` holds every row of {table} (`DATA.find({table})` on line {src.line_of(find.start_byte)}"
        f" has no filter): filter in the query with `.where()`, `.in()` or `.search()` instead of"
        f" `{name}.filter(...)`.",
    )
