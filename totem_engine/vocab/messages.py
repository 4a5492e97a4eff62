"""The conversation in the engine's neutral form: messages, and the images sent with them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from totem_engine.vocab.tools import ToolCall


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
