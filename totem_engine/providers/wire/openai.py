"""The OpenAI Chat Completions streaming chunk, as the parser reads it.

Vendor page: https://platform.openai.com/docs/api-reference/chat/streaming (the
``chat.completion.chunk`` object). Types are strict (``decode.py``); every field may be missing,
and those that OpenAI-compatible servers send as ``null`` may be ``null``. Deliberate tolerance
kept from the parser: a tool-call delta without ``index`` (it continues the latest call), an id
that is empty or repeated, ``arguments`` sent as an object instead of JSON text. An id of any
JSON type is accepted: a number is read as its string form, anything else as a missing id.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, TypeAdapter
from typing_extensions import TypedDict


class Function(TypedDict, total=False):
    name: str | None
    arguments: str | dict[str, Any] | None


class ToolCallDelta(TypedDict, total=False):
    index: int
    # Any JSON: a number is read as its string form, anything else as missing (wire_call_id).
    id: Any
    function: Function | None


class Delta(TypedDict, total=False):
    content: str | None
    reasoning_content: str | None
    reasoning: str | None
    # OpenRouter's reasoning detail objects, kept as sent: they go back unchanged (openai.Replay).
    reasoning_details: list[dict[str, Any]] | None
    tool_calls: list[ToolCallDelta] | None


class Choice(TypedDict, total=False):
    delta: Delta | None
    finish_reason: str | None


class Usage(TypedDict, total=False):
    prompt_tokens: int | None
    completion_tokens: int | None


class Chunk(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(strict=True)  # type: ignore[misc]

    error: Any  # read by http.error_from_payload, which takes any value
    model: str | None
    usage: Usage | None
    choices: list[Choice] | None


CHUNK = TypeAdapter(Chunk)

__all__ = ["CHUNK", "Chunk", "Choice", "Delta", "Function", "ToolCallDelta", "Usage"]
