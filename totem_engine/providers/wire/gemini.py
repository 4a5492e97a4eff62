"""Gemini ``streamGenerateContent`` responses, as the parser reads them.

Vendor page: https://ai.google.dev/api/generate-content (``GenerateContentResponse``,
``Candidate``, ``Content``, ``Part``, ``FunctionCall``, ``UsageMetadata``, ``PromptFeedback``);
``PartialArg`` as in the google-genai SDK type reference. Types are strict (``decode.py``),
every field may be missing, unknown fields are dropped. A payload may also be a list holding one
response (some proxies wrap it): ``PAYLOAD`` takes both and ``parse_stream`` unwraps it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, TypeAdapter
from typing_extensions import TypedDict


class PartialArg(TypedDict, total=False):
    jsonPath: str
    stringValue: str
    numberValue: int | float
    boolValue: bool
    nullValue: Any  # the enum word "NULL_VALUE"; only its presence counts
    willContinue: bool


class FunctionCall(TypedDict, total=False):
    name: str
    id: str
    args: dict[str, Any] | None
    partialArgs: list[PartialArg] | None
    willContinue: bool


class Part(TypedDict, total=False):
    text: str
    thought: bool
    thoughtSignature: str
    functionCall: FunctionCall


class Content(TypedDict, total=False):
    parts: list[Part] | None


class Candidate(TypedDict, total=False):
    content: Content | None
    finishReason: str | None


class UsageMetadata(TypedDict, total=False):
    promptTokenCount: int
    candidatesTokenCount: int
    thoughtsTokenCount: int


class PromptFeedback(TypedDict, total=False):
    blockReason: str


class Response(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(strict=True)  # type: ignore[misc]

    error: Any  # read by http.error_from_payload, which takes any value
    responseId: str
    modelVersion: str
    usageMetadata: UsageMetadata | None
    promptFeedback: PromptFeedback | None
    candidates: list[Candidate] | None


PAYLOAD = TypeAdapter(Response | list[Response])

__all__ = ["PAYLOAD", "Candidate", "Content", "FunctionCall", "Part", "PartialArg", "PromptFeedback", "Response", "UsageMetadata"]
