"""Small real images for tests, and the check the vendor simulators make of an image they receive.

``png(width, height)`` and ``gif(width, height)`` build valid files (a PNG with a real IHDR and a
zlib-compressed IDAT, a GIF89a with its logical screen); ``jpeg(width, height)`` and
``webp(width, height)`` build the headers a reader of sizes reads (SOI + SOF0; RIFF/WEBP with a
VP8X chunk), enough for format and size, not for decoding pixels.

``image_problem(data, mime)`` is what the simulators ask of base64 ``data`` sent as ``mime``:
None when it is base64 of a PNG, JPEG, GIF or WebP whose signature matches ``mime``, else the
reason, as the vendors refuse such images (Anthropic: "Image does not match the provided media
type"; OpenAI: "Invalid image data"). It reads the signatures itself, not with Totem's code, so
a fault of the code under test is not shared by its check.
"""

from __future__ import annotations

import base64
import binascii
import random
import struct
import zlib

SIGNATURES = {
    "image/png": lambda b: b.startswith(b"\x89PNG\r\n\x1a\n"),
    "image/jpeg": lambda b: b.startswith(b"\xff\xd8\xff"),
    "image/gif": lambda b: b[:6] in (b"GIF87a", b"GIF89a"),
    "image/webp": lambda b: b[:4] == b"RIFF" and b[8:12] == b"WEBP",
}


def png(width: int, height: int, *, noise: bool = False) -> bytes:
    """A valid RGB PNG of ``width`` x ``height`` (``noise``: pixels that do not compress, for size)."""
    rng = random.Random(width * 65536 + height)  # the same file every time
    raw = b"".join(b"\x00" + (rng.randbytes(width * 3) if noise else bytes(width * 3)) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 0 if noise else 9)) + chunk(b"IEND", b"")


def gif(width: int, height: int) -> bytes:
    """A one-colour GIF89a of ``width`` x ``height``."""
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    descriptor = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0)
    return b"GIF89a" + screen + descriptor + b"\x02\x02\x44\x01\x00" + b"\x3b"


def jpeg(width: int, height: int) -> bytes:
    """A JPEG's SOI, a JFIF APP0 and a baseline SOF0 of ``width`` x ``height``, then EOI."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def webp(width: int, height: int) -> bytes:
    """A RIFF/WEBP file with a VP8X chunk of ``width`` x ``height``."""
    vp8x = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(vp8x)) + b"WEBP" + vp8x


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def image_problem(data: object, mime: object) -> str | None:
    """None when ``data`` is base64 of an image of type ``mime``; else what is wrong."""
    if mime not in SIGNATURES:
        return f"unsupported image media type {mime!r}: expected one of {', '.join(SIGNATURES)}"
    if not isinstance(data, str) or not data:
        return "image data is missing"
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "image data is not valid base64"
    if not SIGNATURES[mime](raw):
        return f"Image does not match the provided media type {mime}"
    return None


__all__ = ["SIGNATURES", "b64", "gif", "image_problem", "jpeg", "png", "webp"]


def image_urls(request: dict) -> list[str]:
    """The ``image_url`` URLs of an OpenAI-compatible request's messages, in order."""
    return [
        part["image_url"]["url"]
        for message in request["messages"]
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]
