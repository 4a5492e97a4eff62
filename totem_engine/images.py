"""Images attached to a message, the user's or a tool result's: checked, measured, stored, captioned.

One mechanism serves both (docs/decisions.md "Images"). An image is stored as an ``image``
part (store/) of the message it came with: a user message for the user's (``totem/chat``
``attachments``, ``totem run --attach``), the step's assistant message for a tool's
(``ToolResult.attachments``: ``read`` of an image file, an MCP server's image content), with
``callId`` naming the call whose result it is. Its data::

    {"name": str, "mimeType": "image/png"|"image/jpeg"|"image/gif"|"image/webp",
     "data": base64, "bytes": int, "width": int|null, "height": int|null, "callId"?: str}

Its status is ``fresh`` until a step has been answered with it in the request, then
``captioned`` (the loop marks it, ``Fitter.images_sent``). history.py gives a fresh image to a
model whose capability record says ``vision``; every other request, and every request to a
model that does not see images, carries only its caption (``Image.caption``), so base64 never
takes the window for more than one request (seed 004 "Images returned by a tool are stripped
from later prompts").

What the bytes are is read from them, not from what the sender declared: the four formats every
wire takes (PNG, JPEG, GIF, WebP; Anthropic refuses others and an image whose declared type is
not its real one), at most ``MAX_IMAGE_BYTES`` (Anthropic's 5 MB per image, the smallest limit
of the four). Width and height come from the file's header (the ``imagesize`` package, imported
only when an image arrives: it takes 0.1 s to import).
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from typing import Any

from totem_engine.vocab.messages import Image, size_text

IMAGE_PART = "image"
FRESH = "fresh"
CAPTIONED = "captioned"
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The largest image attached, in bytes (Anthropic's limit per image, the smallest of the wires)."""

MIME_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
"""File names the read tool takes for images (it checks the bytes too)."""


class AttachmentError(ValueError):
    """An attachment that cannot be sent: not one of the four formats, too large, not base64,
    a URI of a kind not read. The message says which, for the user."""


def sniff(data: bytes) -> str | None:
    """The MIME type the bytes' signature says (PNG, JPEG, GIF, WebP), None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def dimensions(data: bytes) -> tuple[int | None, int | None]:
    """Width and height in pixels from the image's header; (None, None) when it cannot be read."""
    import imagesize  # 0.1 s of imports, paid only when an image arrives

    try:
        width, height = imagesize.get(io.BytesIO(data))
    except (ValueError, OSError, IndexError, KeyError, TypeError):
        return None, None
    if width <= 0 or height <= 0:
        return None, None
    return width, height


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) in pixels from the header of a PNG, GIF, JPEG or WebP; None otherwise."""
    width, height = dimensions(data)
    return (width, height) if width and height else None


def caption(label: str, mime_type: str, data: bytes) -> str:
    """The caption of an image given as bytes (``[image: LABEL, WxH FORMAT, N KB]``, the size left
    out when its header says none), for one that is described rather than attached."""
    width, height = dimensions(data)
    return Image(name=label, mime_type=mime_type, data="", size=len(data), width=width, height=height).caption


def image_from_bytes(data: bytes, name: str) -> Image:
    """``data`` (a file's bytes) as an Image named ``name``. Raises AttachmentError when it is not
    a PNG, JPEG, GIF or WebP image, or is over ``MAX_IMAGE_BYTES``."""
    mime = sniff(data)
    if mime is None:
        raise AttachmentError(f"{name} is not a PNG, JPEG, GIF or WebP image")
    if len(data) > MAX_IMAGE_BYTES:
        raise AttachmentError(
            f"{name} is {size_text(len(data))}, over the {size_text(MAX_IMAGE_BYTES)} an image may have"
        )
    width, height = dimensions(data)
    return Image(
        name=name, mime_type=mime, data=base64.b64encode(data).decode("ascii"), size=len(data), width=width, height=height
    )


def image_from_base64(text: str, name: str) -> Image:
    """Base64 text (standard alphabet; whitespace ignored) as an Image; AttachmentError when it is
    not base64 or not an image ``image_from_bytes`` takes."""
    compact = "".join(text.split())
    if len(compact) > (MAX_IMAGE_BYTES + 2) // 3 * 4:  # refused before decoding it
        raise AttachmentError(f"{name} is over the {size_text(MAX_IMAGE_BYTES)} an image may have")
    try:
        data = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise AttachmentError(f"{name}: data is not base64") from None
    return image_from_bytes(data, name)


_DATA_URI = re.compile(r"data:([^;,]*)((?:;[^;,]*)*),(.*)", re.DOTALL)


def image_from_data_uri(uri: str, name: str) -> Image:
    """A ``data:`` URI (RFC 2397) as an Image: base64 (``;base64``) or percent-encoded bytes."""
    match = _DATA_URI.fullmatch(uri)
    if match is None:
        raise AttachmentError(f"{name}: not a data: URI")
    params, payload = match.group(2), match.group(3)
    if ";base64" in params.lower():
        return image_from_base64(payload, name)
    from urllib.parse import unquote_to_bytes

    return image_from_bytes(unquote_to_bytes(payload), name)


def part_data(image: Image, *, call_id: str | None = None) -> dict[str, Any]:
    """The stored ``image`` part's data (module docstring); ``call_id``: the call it is a result of."""
    data: dict[str, Any] = {
        "name": image.name,
        "mimeType": image.mime_type,
        "data": image.data,
        "bytes": image.size,
        "width": image.width,
        "height": image.height,
    }
    if call_id is not None:
        data["callId"] = call_id
    return data


def image_of(data: dict[str, Any]) -> Image:
    """A stored ``image`` part's data back as an Image (missing fields: empty, unknown)."""

    def number(key: str) -> int | None:
        value = data.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    return Image(
        name=str(data.get("name") or "image"),
        mime_type=str(data.get("mimeType") or "image/png"),
        data=str(data.get("data") or ""),
        size=number("bytes") or 0,
        width=number("width"),
        height=number("height"),
    )


__all__ = [
    "CAPTIONED",
    "FRESH",
    "IMAGE_PART",
    "IMAGE_SUFFIXES",
    "MAX_IMAGE_BYTES",
    "MIME_TYPES",
    "AttachmentError",
    "caption",
    "dimensions",
    "image_from_base64",
    "image_from_bytes",
    "image_from_data_uri",
    "image_of",
    "image_size",
    "part_data",
    "sniff",
]
