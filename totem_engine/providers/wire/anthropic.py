"""Anthropic Messages streaming events, as the parser reads them.

Vendor page: https://platform.claude.com/docs/build-with-claude/streaming (event types, content
block and delta types; ``error`` events). One ``Event`` shape covers every event type: each field
the parser reads is typed strictly (``decode.py``), every field may be missing, unknown fields
are dropped and unknown event, block and delta types pass (the API adds new ones over time;
the parser ignores them). ``delta`` holds the fields of both ``content_block_delta`` (``type``,
``text``, ``thinking``, ``signature``, ``partial_json``) and ``message_delta`` (``stop_reason``).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, TypeAdapter
from typing_extensions import TypedDict


class Usage(TypedDict, total=False):
    input_tokens: int | None
    output_tokens: int | None
    cache_creation_input_tokens: int | None
    cache_read_input_tokens: int | None


class Message(TypedDict, total=False):
    model: str | None
    usage: Usage | None


class ContentBlock(TypedDict, total=False):
    type: str
    text: str
    thinking: str
    signature: str
    data: str  # redacted_thinking
    id: str
    name: str
    input: dict[str, Any] | None


class Delta(TypedDict, total=False):
    type: str
    text: str
    thinking: str
    signature: str
    partial_json: str
    stop_reason: str | None


class Event(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(strict=True)  # type: ignore[misc]

    type: str
    error: Any  # read by http.error_from_payload, which takes any value
    message: Message | None
    index: int
    content_block: ContentBlock
    delta: Delta
    usage: Usage | None


EVENT = TypeAdapter(Event)

__all__ = ["EVENT", "ContentBlock", "Delta", "Event", "Message", "Usage"]
