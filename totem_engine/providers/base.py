"""What every provider speaks: the request the loop builds, the chunks a stream yields, the protocol.

The engine's message list is wire-neutral; each provider module translates it to its vendor's
request body and translates the vendor's stream back into ``StreamChunk`` values, in order.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


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


@dataclass(frozen=True)
class Image:
    """An image sent with a message: ``data`` is the file's bytes in base64 (RFC 4648, no line
    breaks); ``mime_type`` one of ``image/png``, ``image/jpeg``, ``image/gif``, ``image/webp`` (the
    types every wire takes). ``name`` says what it is (a file name, ``NAME__tool result``);
    ``width``/``height`` in pixels (None: not read from the header); ``size`` in bytes, decoded.
    Built and checked by ``totem_engine.images``."""

    name: str
    mime_type: str
    data: str
    size: int
    width: int | None = None
    height: int | None = None

    @property
    def format(self) -> str:
        """``PNG``, ``JPEG``, ``GIF``, ``WEBP`` (another type's subtype, e.g. ``SVG+XML``)."""
        return self.mime_type.split("/", 1)[-1].split(";", 1)[0].upper() or "IMAGE"

    @property
    def caption(self) -> str:
        """What stands for the image where it is not sent: ``[image: NAME, 640x480 PNG, 38 KB]``."""
        shape = f"{self.width}x{self.height} {self.format}" if self.width and self.height else self.format
        return f"[image: {self.name}, {shape}, {size_text(self.size)}]"

    @property
    def tokens(self) -> int:
        """About what a vision model counts for it: width x height / 750 (Anthropic's rule),
        between 85 (OpenAI's base) and 1600 (the most Anthropic takes after resizing); 1000
        when the size was not read."""
        if not (self.width and self.height):
            return 1000
        return max(85, min(1600, -(-self.width * self.height // 750)))


def size_text(size: int) -> str:
    """Bytes for people: ``38 KB`` (KiB, rounded, at least 1), ``1.2 MB`` from a MiB on."""
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f} MB"
    return f"{max(1, round(size / 1024))} KB"


@dataclass(frozen=True, slots=True)
class Message:
    """One message of the conversation, in the engine's neutral form.

    role ``user``: ``text``. role ``assistant``: ``text``, ``reasoning`` and ``tool_calls``.
    role ``tool``: the result ``text`` of the call ``tool_call_id`` (tool ``name``); ``is_error``:
    the call failed or was not allowed (its stored status is ``error`` or ``denied``). The text of
    such a result says so in words too; wires that have a flag (Anthropic) send this one.
    ``replay`` is what the provider that wrote this assistant message asked to get back with it
    (its ``StateChunk``: Anthropic's signed thinking blocks, Gemini's thought signatures); it is
    only given back to the same provider, never sent to another.
    ``images``: images sent with a user message or a tool result (history.py decides which are
    sent and which are only their caption, already in ``text``); each wire encodes them its way.
    """

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    replay: dict[str, Any] | None = None
    is_error: bool = False
    images: tuple[Image, ...] = ()

    def with_text(self, text: str, images: tuple[Image, ...] | None = None) -> Message:
        """This message with another text (and images): ``dataclasses.replace`` without its
        look at every field, for compaction's thousands of replaced results."""
        return Message(
            role=self.role, text=text, reasoning=self.reasoning, tool_calls=self.tool_calls,
            tool_call_id=self.tool_call_id, name=self.name, replay=self.replay, is_error=self.is_error,
            images=self.images if images is None else images,
        )


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: name, description and the JSON schema of its flat input."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ChatRequest:
    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    # The sampler's seed, where the wire has one (OpenAI-compatible, Ollama): a sampled answer
    # that can be had again. None leaves it to the server.
    seed: int | None = None
    # How hard the model should think: "low" | "medium" | "high"; None leaves it to the provider.
    reasoning: str | None = None


@dataclass(frozen=True)
class TextChunk:
    text: str


@dataclass(frozen=True)
class ReasoningChunk:
    text: str


@dataclass(frozen=True)
class ToolCallChunk:
    """A tool call, complete: emitted once its arguments are whole."""

    call: ToolCall


@dataclass(frozen=True)
class UsageChunk:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class StateChunk:
    """Opaque, JSON-able state the provider needs back with this answer in later requests.

    Stored with the step and returned as ``Message.replay`` to the same provider only.
    """

    data: dict[str, Any]


@dataclass(frozen=True)
class FinishChunk:
    """The end of one answer: the provider's own stop reason and the model that answered."""

    reason: str | None
    model: str | None = None


StreamChunk = TextChunk | ReasoningChunk | ToolCallChunk | UsageChunk | StateChunk | FinishChunk

# The providers' own words for an answer cut at the output limit, and for one the provider's
# content filter stopped: OpenAI and Ollama (``length``, ``content_filter``), Anthropic
# (``max_tokens``, ``refusal``), Gemini (``MAX_TOKENS``, ``SAFETY``, ``RECITATION``, ...).
_LENGTH = {"length", "max_tokens"}
_REFUSAL = {"content_filter", "refusal", "safety", "recitation", "prohibited_content", "blocklist", "spii", "image_safety"}


def finish_kind(reason: str | None) -> Literal["length", "refusal"] | None:
    """What a ``FinishChunk.reason`` means for front ends: ``length`` (the answer hit the output
    limit), ``refusal`` (the provider refused or filtered the content), None for any other end."""
    word = (reason or "").lower()
    if word in _LENGTH:
        return "length"
    if word in _REFUSAL:
        return "refusal"
    return None


@dataclass(frozen=True)
class ModelInfo:
    id: str
    provider: str
    context_window: int | None = None
    tools: bool | None = None
    reasoning: bool | None = None
    vision: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Provider(Protocol):
    """A configured endpoint. ``stream`` raises ``ProviderError`` subclasses (providers.errors).

    ``name``: the configured entry's (``[providers.<name>]``); ``kind``: the wire the class speaks
    (openai, anthropic, gemini, ollama, litellm), declared on the class itself.
    """

    name: str
    kind: str

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]: ...

    async def models(self) -> list[ModelInfo]: ...

    async def aclose(self) -> None: ...
