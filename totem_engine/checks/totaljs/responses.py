"""Responses: the framework's envelopes, not hand-made ones."""

from __future__ import annotations

from collections.abc import Iterator

from totem_engine.checks.totaljs.engine import ANTI_PATTERNS_URL, Hit, Rule, Source, rule

RULES: list[Rule] = []

_FLAGS = {"success", "ok"}
_PAYLOADS = {"value", "data"}


def _properties(src: Source, obj) -> list[tuple[str | None, object]] | None:
    """``(key, value node)`` of an object literal; key None for a spread or computed key."""
    found = []
    for child in obj.named_children:
        if child.type == "comment":
            continue
        if child.type == "shorthand_property_identifier":
            found.append((src.text(child), child))
        elif child.type == "pair":
            key = child.child_by_field_name("key")
            name = src.text(key)
            if key.type == "string":
                name = name[1:-1]
            elif key.type != "property_identifier":
                name = None
            found.append((name, child.child_by_field_name("value")))
        else:
            found.append((None, child))
    return found


@rule(RULES, "TJS040", "warning", "no hand-made response envelopes: $.success / $.callback", ANTI_PATTERNS_URL)
def envelopes(src: Source) -> Iterator[Hit]:
    """``$.json({ success: true, value })`` or ``$.json({ ok: true, data })``.

    Source: Total.js anti-patterns, "Ad hoc response envelopes": ``$.success(item)`` sends
    ``{ success: true, value: item }``, ``$.callback(item)`` the raw payload (totaljs/aicontext
    totaljs/anti-patterns.md; controllers-and-routing.md: "Do not rebuild that object by hand").
    Flagged: ``$.json`` of an object literal with a ``success`` key, or an ``ok`` key together
    with ``data``, ``value`` or ``error``. ``$.json({ ok: true, ts })`` (a health answer, no
    payload) is not an envelope.

    Fix, when the object is exactly ``{ success|ok: true[, value|data: X] }``:
    ``$.success(X)`` (or ``$.success()``).
    """
    for call in src.nodes("call_expression"):
        if src.call_name(call) != "$.json":
            continue
        args = src.arguments(call)
        if len(args) != 1 or args[0].type != "object":
            continue
        props = _properties(src, args[0])
        keys = {k for k, _ in props}
        if not ("success" in keys or ("ok" in keys and keys & {"data", "value", "error"})):
            continue
        fix = None
        flags = [(k, v) for k, v in props if k in _FLAGS]
        payloads = [(k, v) for k, v in props if k in _PAYLOADS]
        if (
            len(flags) == 1
            and len(payloads) <= 1
            and len(props) == len(flags) + len(payloads)
            and src.text(flags[0][1]) == "true"
        ):
            value = src.text(payloads[0][1]) if payloads else ""
            fix = ("Use $.success()", call.start_byte, call.end_byte, f"$.success({value})")
        yield Hit(
            call.start_byte,
            call.end_byte,
            "Do not build the response envelope by hand: `$.success(value)` sends"
            " { success: true, value }, `$.callback(data)` the raw payload, `$.invalid(...)` an error.",
            fix,
        )
