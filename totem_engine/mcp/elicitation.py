"""What a server wants to know during a call, asked of the user, and the answer it gets back.

Follows MCP elicitation (https://modelcontextprotocol.io/specification/2025-11-25/client/elicitation):
a form (``requestedSchema``: a flat object of strings, numbers, integers, booleans, single- and
multiple-choice enums) or a URL to open (``mode: "url"``). The SDK client brings both kinds the
same way, whether the server sent an ``elicitation/create`` request (2025-11-25 and before) or
an ``input_required`` result (2026-07-28), and sends back what this returns.

The user is asked through the engine's question (the ``ask`` tool's: ``FrontEnd.question`` at
whichever door is asking): one question per field, the first with the server's message, a
choice's values (or titles) and a boolean's yes/no as the options. The answers, read as each
field's type, are sent as ``accept``. Nobody to answer, an empty answer to a required field, or
one that is not of the field's type (a word where a number goes, a value not among the choices)
is a ``decline``, so the server is never sent what it did not ask for. A URL is never opened by
Totem: the user is shown it and answers whether they opened it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Ask = Callable[[str, list[str]], Awaitable[str | None]]
"""``ask(question, options)``: the user's answer, None when nobody can answer (tools/base.py
``ToolContext.question``)."""

YES = ("yes", "y", "true", "1", "ok", "accept", "opened", "done")
NO = ("no", "n", "false", "0")
OPENED, NOT_OPENED = "I opened it", "decline"


class Declined(Exception):
    """An answer that cannot be sent: the whole elicitation is declined."""


async def answer_elicitation(params: Any, ask: Ask, server: str) -> Any:
    """``params``: an ``mcp_types.ElicitRequestFormParams`` or ``...URLParams``; the
    ``mcp_types.ElicitResult`` to send back."""
    from mcp_types import ElicitResult

    header = f"MCP server {server} asks: {params.message.strip()}"
    try:
        if getattr(params, "mode", None) == "url":
            await _confirm(ask, f"{header}\nOpen {params.url}", [OPENED, NOT_OPENED])
            return ElicitResult(action="accept")
        content = await _fill(params.requested_schema or {}, ask, header)
    except Declined:
        return ElicitResult(action="decline")
    return ElicitResult(action="accept", content=content)


async def _fill(schema: dict, ask: Ask, header: str) -> dict[str, Any]:
    """Each field of the form asked in turn; a form with no fields is a yes/no question."""
    properties = schema.get("properties") or {}
    if not properties:
        await _confirm(ask, header, ["yes", "no"])
        return {}
    required = set(schema.get("required") or [])
    content: dict[str, Any] = {}
    for index, (name, field) in enumerate(properties.items()):
        choices = _choices(field)
        options = [title for title, _ in choices] or (["yes", "no"] if field.get("type") == "boolean" else [])
        line = _field_line(name, field, name in required)
        question = f"{header}\n{line}" if index == 0 else line
        answer = await ask(question, options)
        if answer is None:
            raise Declined
        answer = answer.strip()
        if not answer:
            if name in required:
                raise Declined
            if "default" in field:
                content[name] = field["default"]
            continue
        content[name] = _read(answer, field, choices)
    return content


async def _confirm(ask: Ask, question: str, options: list[str]) -> None:
    answer = await ask(question, options)
    if answer is None or answer.strip().lower() not in YES + (OPENED.lower(),):
        raise Declined


def _field_line(name: str, field: dict, required: bool) -> str:
    """``Colour: The button's colour (a whole number, optional)``."""
    label = field.get("title") or name
    description = (field.get("description") or "").strip()
    kind = {"integer": "a whole number", "number": "a number"}.get(field.get("type", ""))
    if field.get("type") == "array":
        kind = "one or more, separated by commas"
    notes = ", ".join(n for n in (kind, None if required else "optional") if n)
    return f"{label}" + (f": {description}" if description and description != label else "") + (f" ({notes})" if notes else "")


def _choices(field: dict) -> list[tuple[str, Any]]:
    """A choice's (title, value) pairs: ``enum`` (titled by ``enumNames``), ``oneOf``/``anyOf``
    of ``const``, or an array's ``items`` of either."""
    source = field.get("items", field) if field.get("type") == "array" else field
    for key in ("oneOf", "anyOf"):
        if isinstance(source.get(key), list):
            return [(str(o.get("title") or o.get("const")), o.get("const")) for o in source[key] if "const" in o]
    values = source.get("enum")
    if not isinstance(values, list):
        return []
    titles = source.get("enumNames") if isinstance(source.get("enumNames"), list) else values
    return [(str(title), value) for title, value in zip(titles, values, strict=False)]


def _read(answer: str, field: dict, choices: list[tuple[str, Any]]) -> Any:
    """The answer as the field's type; Declined when it is not one."""
    kind = field.get("type")
    if kind == "array":
        return [_pick(part.strip(), choices) for part in answer.split(",") if part.strip()]
    if choices:
        return _pick(answer, choices)
    if kind == "boolean":
        if answer.lower() in YES:
            return True
        if answer.lower() in NO:
            return False
        raise Declined
    if kind in ("integer", "number"):
        try:
            return int(answer) if kind == "integer" else float(answer)
        except ValueError:
            raise Declined from None
    return answer


def _pick(answer: str, choices: list[tuple[str, Any]]) -> Any:
    for title, value in choices:
        if answer.lower() in (title.lower(), str(value).lower()):
            return value
    raise Declined
