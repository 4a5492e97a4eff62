"""What a request will cost before it is sent: a characters-based token estimate, calibrated.

``estimate(request, reserved_output, calibration)`` counts what goes on the wire: the system
prompt, each tool's JSON entry (name, description, schema), every message's text, reasoning, tool
name and the JSON of each tool call's arguments, plus a few tokens of framing per message, at
about ``CHARS_PER_TOKEN`` characters a token, and each image sent by its size (``Image.tokens``). The input part is multiplied by the session's
calibration factor; the reserved output tokens are added as they are (they are a limit, not a
guess).

``Calibration`` learns that factor from the input tokens the provider reported for earlier
requests of the same session: the ratio reported / estimated, smoothed and clamped, kept in the
session's meta (``CALIBRATION_KEY``, a float) so it survives turns.

The estimate is additive (``fixed_tokens`` for the system prompt and tools, ``message_tokens``
per message), so compaction can update it message by message instead of re-counting the whole
request after every change; ``breakdown`` splits it by what fills the window (the editor's
context indicator).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from totem_engine.vocab.chat import ChatRequest
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolSpec

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4  # tokens of role and framing per message, as chat templates add them
CALL_OVERHEAD = 4  # tokens of framing per tool call (id, type, braces)

CALIBRATION_KEY = "calibration"  # session meta: the learned factor, a float
CALIBRATION_MIN = 0.5
CALIBRATION_MAX = 3.0
CALIBRATION_WEIGHT = 0.5  # how much one new observation moves the factor (exponential smoothing)
MIN_OBSERVED_INPUT = 64  # reported inputs smaller than this (or a cache-only count) teach nothing

DEFAULT_OUTPUT_RESERVE = 4096  # when the model's output limit is unknown
MAX_RESERVE_SHARE = 0.25  # of a known window: the reserve never takes more than this


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def tool_spec_chars(tool: ToolSpec) -> int:
    entry = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return len(json.dumps(entry, ensure_ascii=False))


def fixed_tokens(system: str, tools: Iterable[ToolSpec]) -> int:
    """Uncalibrated tokens of what every step repeats: the system prompt and the tool schemas."""
    return _tokens(len(system) + sum(tool_spec_chars(t) for t in tools))


def message_tokens(message: Message) -> int:
    """Uncalibrated tokens of one message: its text, reasoning, calls and images, plus framing."""
    chars = len(message.text) + len(message.reasoning) + len(message.name or "") + len(message.tool_call_id or "")
    for call in message.tool_calls:
        chars += len(call.id) + len(call.name) + len(call.arguments)
    # No generator for the common message without images: this runs for every message fitted.
    images = sum(image.tokens for image in message.images) if message.images else 0
    return _tokens(chars) + images + MESSAGE_OVERHEAD + CALL_OVERHEAD * len(message.tool_calls)


def input_tokens(request: ChatRequest) -> int:
    """Uncalibrated tokens of the request's input: system prompt, tool schemas and history.

    This is what ``Calibration.update`` compares with the provider's reported input.
    """
    return fixed_tokens(request.system, request.tools) + sum(message_tokens(m) for m in request.messages)


def calibrated(raw_input: int, reserved_output: int, calibration: float = 1.0) -> int:
    return math.ceil(raw_input * calibration) + max(0, reserved_output)


def estimate(request: ChatRequest, reserved_output: int, calibration: float = 1.0) -> int:
    """Tokens the request will occupy in the window: its calibrated input plus the reserved output."""
    return calibrated(input_tokens(request), reserved_output, calibration)


# A ``<context file="…">`` block of a user message (attachments.py renders them): what the user
# or the editor attached, as opposed to what they typed.
_ATTACHMENT = re.compile(r"<context file=\"[^\n]*?(?:/>|\">\n.*?\n</context>)", re.DOTALL)


def attachment_chars(text: str) -> int:
    """Characters of the attached context blocks in a user message's ``text``."""
    if "<context file=" not in text:
        return 0
    return sum(len(m[0]) for m in _ATTACHMENT.finditer(text))


@dataclass(frozen=True)
class Breakdown:
    """What fills the window, in calibrated tokens that add up to the estimate: ``system`` (the
    system prompt and the tool schemas), ``history`` (the conversation's messages, less the two
    below), ``tool_results`` (the tools' results as sent, after compaction, their images
    included), ``attachments`` (what is attached to user messages: the context blocks of the
    editor's context and mentions, and images), ``output`` (the reserve kept for the answer)."""

    system: int
    history: int
    tool_results: int
    attachments: int
    output: int


def breakdown(
    request: ChatRequest,
    reserved_output: int,
    calibration: float = 1.0,
    tokens: Callable[[Message], int] = message_tokens,
    system_tokens: int | None = None,
) -> Breakdown:
    """``estimate(request, reserved_output, calibration)`` split by kind (``Breakdown``).
    ``tokens``: a message's uncalibrated tokens (``message_tokens``, or a cache of them);
    ``system_tokens``: ``fixed_tokens`` of the request, when already counted. Each share is
    rounded down and the history takes what rounding left, so the shares add up."""
    system = fixed_tokens(request.system, request.tools) if system_tokens is None else system_tokens
    body = results = attached = 0
    for message in request.messages:
        cost = tokens(message)
        body += cost
        if message.role == "tool":
            results += cost
        elif message.role == "user":
            images = sum(image.tokens for image in message.images)
            attached += min(cost, _tokens(attachment_chars(message.text)) + images)
    total = calibrated(system + body, reserved_output, calibration)
    shares = [math.floor(part * calibration) for part in (system, results, attached)]
    output = max(0, reserved_output)
    return Breakdown(
        system=shares[0],
        history=total - output - sum(shares),
        tool_results=shares[1],
        attachments=shares[2],
        output=output,
    )


def output_reserve(max_output_tokens: int | None, window: int | None) -> int:
    """The output tokens to keep free: the model's output limit (``DEFAULT_OUTPUT_RESERVE`` when
    unknown), never more than a quarter of a known window, so a model whose output limit equals
    its window still has room for input."""
    reserve = max_output_tokens if max_output_tokens and max_output_tokens > 0 else DEFAULT_OUTPUT_RESERVE
    if window:
        reserve = min(reserve, max(1, int(window * MAX_RESERVE_SHARE)))
    return reserve


@dataclass
class Calibration:
    """Per session: reported input tokens / estimated input tokens, smoothed and clamped.

    ``update(estimated_input, reported_input)`` takes the *uncalibrated* estimate of the request's
    input (``input_tokens``, or ``Fitted.raw_input``) and what the provider reported for it. The
    first observation replaces the default 1.0 (weighted like any other); each later one moves the
    factor ``CALIBRATION_WEIGHT`` of the way to the new ratio. The factor stays within
    [``CALIBRATION_MIN``, ``CALIBRATION_MAX``], so one odd report (a cached prefix counted apart,
    a server that reports nothing useful) cannot make the estimate absurd.
    """

    factor: float = 1.0
    observations: int = 0

    def update(self, estimated_input: int, reported_input: int) -> float:
        if estimated_input <= 0 or reported_input < MIN_OBSERVED_INPUT:
            return self.factor
        ratio = min(CALIBRATION_MAX, max(CALIBRATION_MIN, reported_input / estimated_input))
        if self.observations == 0:
            self.factor = ratio
        else:
            self.factor += CALIBRATION_WEIGHT * (ratio - self.factor)
        self.factor = min(CALIBRATION_MAX, max(CALIBRATION_MIN, self.factor))
        self.observations += 1
        return self.factor

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> Calibration:
        """The session's calibration from its meta (a float under ``CALIBRATION_KEY``); the
        default 1.0, not yet learned, when absent or unreadable."""
        factor = meta.get(CALIBRATION_KEY)
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor):
            return cls()
        return cls(factor=min(CALIBRATION_MAX, max(CALIBRATION_MIN, float(factor))), observations=1)

    def to_meta(self) -> dict[str, Any]:
        """``{CALIBRATION_KEY: factor}`` to merge into the session's meta; ``{}`` until a report
        has been seen (so an unlearned default is never stored as if learned)."""
        return {CALIBRATION_KEY: round(self.factor, 4)} if self.observations else {}
