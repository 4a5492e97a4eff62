"""Declarations: ``var`` inside functions, not ``const``."""

from __future__ import annotations

from collections.abc import Iterator

from totem_engine.checks.totaljs.engine import STYLE_URL, Hit, Rule, Source, rule

RULES: list[Rule] = []


@rule(RULES, "TJS010", "warning", "var (or let) inside functions, not const", STYLE_URL)
def const_in_function(src: Source) -> Iterator[Hit]:
    """``const`` declared inside a function (also ``for (const x of ...)``).

    Source: Total.js coding style, "Do not declare const inside method scopes. Use var (or let
    for block bindings that must rebind). Total.js codebases are var-first." and "const at the
    top of a module for a real npm import is acceptable" (totaljs/aicontext totaljs/style.md);
    Total.js Guide, "don't use const constant in the method scopes" (totaljs/guidelines).
    A ``const`` outside every function is not flagged (a require of the app's own module is
    TJS020's business).

    Fix: ``var`` for a declaration directly in the function's body (one binding per call either
    way); ``let`` in a nested block or loop head, which keeps the block scope.
    """
    for node in src.nodes("lexical_declaration", "for_in_statement"):
        keyword = node.children[0] if node.type == "lexical_declaration" else node.child_by_field_name("kind")
        if keyword is None or keyword.type != "const":
            continue
        function = src.enclosing_function(node)
        if function is None:
            continue
        body = function.child_by_field_name("body")
        top = node.type == "lexical_declaration" and body is not None and node.parent == body
        replacement = "var" if top else "let"
        yield Hit(
            keyword.start_byte,
            keyword.end_byte,
            f"Use `{replacement}` instead of `const` inside functions (Total.js code is var-first;"
            " `let` only for a block binding that must rebind).",
            (f"Use {replacement}", keyword.start_byte, keyword.end_byte, replacement),
        )
