"""A tool as the model sees it, a call the model makes, its arguments, and the error it reads back.

The one parser of tool-call arguments is here (``arguments_object``, ``decode_arguments``): every
wire, guard and account reads them through it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class ToolError(Exception):
    """A failure the model should read and act on: bad input, no match, path refused."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: name, description and the JSON schema of its flat input."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is the raw JSON text the model wrote."""

    id: str
    name: str
    arguments: str


def wire_call_id(raw: Any) -> str:
    """A tool-call id as a wire sent it, as text: a string as is, a number (``12345``) in its
    string form; anything else (missing, ``true``, a list, an object) is ``""``, for the parser
    to make one up. Every id the engine stores is a string, so a later turn can send it back."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return str(raw)
    return ""


def arguments_object(raw: str) -> dict[str, Any] | None:
    """A call's raw JSON arguments as an object (empty text is ``{}``); None when they are not
    valid JSON or not an object. The one parser of tool-call arguments: every wire, guard and
    account reads them through it (``decode_arguments`` when the reason is wanted)."""
    try:
        return decode_arguments(raw)
    except ArgumentsError:
        return None


class ArgumentsError(ValueError):
    """A call's raw arguments that are not a JSON object. ``found``: the JSON type's Python name
    (``list``, ``str``, ``int``) when they are JSON of another type, None when they are not JSON;
    the message says why (the decoder's error and its position)."""

    def __init__(self, reason: str, found: str | None = None):
        super().__init__(reason)
        self.found = found


def decode_arguments(raw: str) -> dict[str, Any]:
    """``arguments_object`` with the reason when they are not an object: raises ``ArgumentsError``
    (for a tool's error message to the model, tools/base.py ``parse_arguments``)."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ArgumentsError(f"{exc.msg} at position {exc.pos}") from None
    except RecursionError:
        raise ArgumentsError("nested too deeply") from None
    if not isinstance(value, dict):
        raise ArgumentsError(f"a JSON {type(value).__name__}, not an object", found=type(value).__name__)
    return value
