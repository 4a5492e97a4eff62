"""Ollama ``/api/chat`` stream lines, as the parser reads them.

Vendor page: https://docs.ollama.com/api/chat (the streamed response objects; ``message``,
``tool_calls``, ``done``, ``done_reason``, the eval counts) and https://docs.ollama.com/api/errors
(``{"error"}`` during a stream). Types are strict (``decode.py``), every field may be missing,
unknown fields are dropped. Deliberate tolerance kept from the parser: ``arguments`` as JSON text
instead of an object (OpenAI-style proxies in front of Ollama), a call id of any JSON
type (a number read as its string form, anything else as missing).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, TypeAdapter
from typing_extensions import TypedDict


class Function(TypedDict, total=False):
    name: str | None
    arguments: dict[str, Any] | str | None


class ToolCall(TypedDict, total=False):
    # Any JSON: a number is read as its string form, anything else as missing (wire_call_id).
    id: Any
    function: Function


class Message(TypedDict, total=False):
    content: str | None
    thinking: str | None
    tool_calls: list[ToolCall] | None


class Line(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(strict=True)  # type: ignore[misc]

    error: Any  # read by http.error_from_payload, which takes any value
    model: str | None
    message: Message | None
    done: bool
    done_reason: str | None
    prompt_eval_count: int | None
    eval_count: int | None


LINE = TypeAdapter(Line)

__all__ = ["LINE", "Function", "Line", "Message", "ToolCall"]
