"""Every JSON text that comes from outside Totem, parsed with bounds: one decoder for all of it.

Provider answers (streamed and not), model probes, MCP results as the engine reads them, Forge's
answers, a project's check output and ``package.json``, and config JSON (``mcp.json``) are read
with ``loads`` and nothing else. The standard library's ``json`` has no nesting bound: a value
nested a few thousand deep (``[[[[...]]]]``) ends in a ``RecursionError`` that no ``except
ValueError`` catches, and a turn fails with a traceback. Here:

- the nesting is bounded by pydantic-core's parser (jiter), which refuses a value nested deeper
  than ``MAX_DEPTH`` levels before building it;
- the size is bounded by ``max_bytes`` (``MAX_BYTES`` unless the caller knows better);
- a lone UTF-16 surrogate escape (``"A\\udcffB"``), which jiter refuses and the standard library
  keeps (the store later replaces it, store/encoding.py), is parsed by ``json`` once the same text
  with plain escapes has passed the nesting bound;
- what is refused raises ``JsonRefused``, a ``ValueError`` (so every existing ``except
  ValueError`` holds) whose message says why: not JSON (and where), too deep, too large.

The values are those of ``json.loads`` (``NaN`` and ``Infinity`` accepted, big integers exact,
the last of duplicate keys kept).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic_core import from_json

MAX_DEPTH = 200
"""Levels of nesting accepted: pydantic-core's parser limit (no wire Totem reads comes near it)."""

MAX_BYTES = 64 * 1024 * 1024
"""Bytes of one JSON text accepted by default: far over any answer or result a turn can use."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonRefused(ValueError):
    """A JSON text from outside that Totem does not read: not JSON, nested too deep, too large."""


def loads(text: str | bytes | bytearray, *, what: str = "the JSON", max_bytes: int = MAX_BYTES) -> Any:
    """``text`` as a JSON value; ``JsonRefused`` (a ``ValueError``) when it is not JSON, is nested
    deeper than ``MAX_DEPTH`` levels or is longer than ``max_bytes``. ``what`` names the text in
    the message ("the answer of /api/show")."""
    size = len(text.encode("utf-8", errors="surrogatepass") if isinstance(text, str) else text)
    if size > max_bytes:
        raise JsonRefused(f"{what} is {size} bytes, over the {max_bytes} bytes Totem reads")
    if isinstance(text, str) and _LONE_SURROGATE.search(text):  # jiter takes no such str at all
        return _with_surrogates(text, what)
    try:
        return from_json(text)
    except ValueError as exc:
        reason = str(exc)
    if "recursion limit" in reason:
        raise JsonRefused(f"{what} is nested deeper than {MAX_DEPTH} levels") from None
    if "surrogate" not in reason:
        raise JsonRefused(f"{what} is not JSON: {reason}") from None
    return _with_surrogates(text, what)


def _with_surrogates(text: str | bytes | bytearray, what: str) -> Any:
    """A text whose only fault for jiter is a lone surrogate, escaped or as a character: its
    nesting checked on the same text with plain escapes and characters, then parsed by ``json``,
    which keeps the surrogate."""
    plain = text if isinstance(text, str) else bytes(text).decode("utf-8", errors="replace")
    try:
        from_json(_LONE_SURROGATE.sub("\ufffd", _SURROGATE_ESCAPE.sub(r"\\u0", plain)))
    except ValueError as exc:
        if "recursion limit" in str(exc):
            raise JsonRefused(f"{what} is nested deeper than {MAX_DEPTH} levels") from None
        raise JsonRefused(f"{what} is not JSON: {exc}") from None
    try:
        return json.loads(plain)
    except ValueError as exc:
        raise JsonRefused(f"{what} is not JSON: {exc}") from None


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether a value already decoded elsewhere (TOML, a door's settings) holds lists or dicts
    nested deeper than ``limit`` levels; walked without recursion, so any depth can be asked."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        current, level = pending.pop()
        children = current.values() if isinstance(current, dict) else current if isinstance(current, list) else None
        if children is None:
            continue
        if level >= limit:
            return True
        pending.extend((child, level + 1) for child in children)
    return False
