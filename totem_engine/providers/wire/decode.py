"""Vendor payloads checked against their wire model at the edge, before any parser reads them.

Each wire module (``wire/openai.py``, ``wire/anthropic.py``, ``wire/gemini.py``,
``wire/ollama.py``) describes its vendor's payloads as strict ``TypedDict``s: a field of the
wrong JSON type, a list where an object belongs, ``true`` where a number belongs, is refused here,
so the parsers can walk the validated dicts without a type check per field. Unknown keys are
dropped (vendors add fields over time); missing keys stay missing.

- ``decode(adapter, data, what)``: one JSON text (an SSE ``data`` payload) -> the validated
  value. pydantic-core's parser limits nesting to 200 levels (a payload nested 5,000 deep is
  refused, never a ``RecursionError``). It refuses a lone UTF-16 surrogate escape
  (``"A\\udcffB"``), which the standard library keeps and the store replaces; those payloads are
  parsed by ``json_in.loads`` instead (totem_engine/json_in.py: the same nesting bound).
- ``check(adapter, value, what)``: a value already parsed (an NDJSON line) -> the validated value.
- ``loads(text)``: JSON text -> value through ``json_in.loads``, the engine's one bounded decoder;
  raises ``ValueError`` (never ``RecursionError``). For framings that parse before a wire is known.

Anything else raises ``MalformedStream`` naming the first wrong field and quoting the vendor's
text cut to 200 characters.
"""

from __future__ import annotations

import reprlib
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from totem_engine import json_in

from ..errors import MalformedStream

T = TypeVar("T")

SHOWN = 200
"""Characters of the vendor's text quoted in a MalformedStream."""

_shown = reprlib.Repr()
_shown.maxlevel, _shown.maxstring, _shown.maxother = 4, SHOWN, SHOWN


def decode(adapter: TypeAdapter[T], data: str, what: str) -> T:
    """``data`` parsed and validated by ``adapter``; MalformedStream when it is not ``what``."""
    try:
        return adapter.validate_json(data, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_context=False)[0]
        if first["type"] != "json_invalid" or "surrogate" not in first["msg"]:
            raise MalformedStream(f"{what} {_reason(exc)}: {data[:SHOWN]!r}") from None
    try:
        value = loads(data)
    except ValueError as exc:
        raise MalformedStream(f"{what} is not JSON ({exc}): {data[:SHOWN]!r}") from None
    return check(adapter, value, what, shown=data[:SHOWN])


def loads(text: str) -> Any:
    """``text`` as a JSON value (see the module docstring); ValueError when it is not JSON."""
    return json_in.loads(text, what="the payload")


def check(adapter: TypeAdapter[T], value: Any, what: str, *, shown: str | None = None) -> T:
    """``value`` validated by ``adapter``; MalformedStream when it is not ``what``."""
    try:
        return adapter.validate_python(value, strict=True)
    except ValidationError as exc:
        text = repr(shown) if shown is not None else _shown.repr(value)
        raise MalformedStream(f"{what} {_reason(exc)}: {text}") from None


def _reason(exc: ValidationError) -> str:
    """The first error in the field's words: ``is not JSON (...)`` or ``has a wrong
    choices.0.delta (Input should be a valid dictionary)``."""
    first = exc.errors(include_url=False, include_context=False)[0]
    if first["type"] == "json_invalid":
        return f"is not JSON ({first['msg'].removeprefix('Invalid JSON: ')})"
    where = ".".join(str(step) for step in first["loc"])
    if not where:
        return "is not a JSON object" if first["type"] == "dict_type" else f"is not the expected shape ({first['msg']})"
    return f"has a wrong {where} ({first['msg']})"


__all__ = ["SHOWN", "check", "decode", "loads"]
