"""Images as text: the caption that stands for an image in a request (seed 004 "Images returned by
a tool are stripped from later prompts"), so base64 never eats the window.

``caption("fs__read_media_file result", "image/png", data)`` →
``[image: fs__read_media_file result, 640x480 PNG, 38 KB]``. The size is read from the image's
own header (PNG IHDR, GIF logical screen, JPEG SOFn, WebP VP8/VP8L/VP8X); an image whose header
says nothing readable is captioned without it.
"""

from __future__ import annotations

import struct


def caption(label: str, mime_type: str, data: bytes) -> str:
    """``[image: LABEL, WxH FORMAT, N KB]`` (the size left out when unknown)."""
    kind = mime_type.split("/", 1)[-1].split(";", 1)[0].upper() or "image"
    size = image_size(data)
    shown = f"{size[0]}x{size[1]} {kind}" if size else kind
    return f"[image: {label}, {shown}, {max(1, round(len(data) / 1024))} KB]"


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) in pixels from the header of a PNG, GIF, JPEG or WebP; None otherwise."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp_size(data)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """The frame size from the first SOFn marker (baseline, progressive, ...)."""
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return width, height
        i += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None
