"""A server's tool result as the model reads it: one text.

Follows the MCP ``CallToolResult`` (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-result):
``content`` blocks (text, image, audio, resource link, embedded resource), ``structuredContent``
and ``isError``. Text blocks are kept as they are; structured content is added as compact JSON (no
indentation, no spaces: data costs the window nothing it does not say) unless a text block
already carries it (the spec asks servers to send its JSON as text too, so both would say the
same twice; a 2026-07-28 server may send it alone); a resource link is one line naming its URI,
its name or title, its type and description (``[resource link: URI (name, type): description]``:
the model reads what it points to with a tool that can, if any); an embedded text resource
is its text; an image is attached to the result (images.py: a model that sees images gets it in
the next request, every request its caption), or only captioned when it cannot be sent (another
format, over 5 MB); audio or a binary resource is a line saying what it was. The blocks are read by their ``type`` field, so this module needs no ``mcp`` import.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from totem_engine import json_in
from totem_engine.images import AttachmentError, caption, image_from_base64
from totem_engine.vocab.messages import Image


@dataclass(frozen=True)
class ReadResult:
    """``text`` for the model; ``is_error``: the server said the call failed (``isError``);
    ``images``: the images attached to the result, in order (their captions are not in ``text``:
    history.py adds them after it)."""

    text: str
    is_error: bool = False
    images: tuple[Image, ...] = ()


def read_result(result: Any, label: str) -> ReadResult:
    """``result``: an ``mcp_types.CallToolResult``; ``label``: what an image caption calls it
    (``fs__read_media_file result``)."""
    blocks = getattr(result, "content", None) or []
    pieces: list[str] = []
    images: list[Image] = []
    for block in blocks:
        image = _attachable(block, label)
        if image is not None:
            images.append(image)
        else:
            pieces.append(block_text(block, label))
    texts = [block.text for block in blocks if getattr(block, "type", None) == "text"]
    structured = getattr(result, "structured_content", None)
    if structured is not None and not _carried(structured, texts):
        pieces.append(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    text = "\n".join(p for p in pieces if p) or ("" if images else "(no output)")
    return ReadResult(text=text, is_error=bool(getattr(result, "is_error", False)), images=tuple(images))


def _attachable(block: Any, label: str) -> Image | None:
    """An image block as an attachment; None for any other block, or an image that cannot be sent."""
    if getattr(block, "type", None) != "image":
        return None
    try:
        return image_from_base64(block.data, label)
    except AttachmentError:
        return None


def block_text(block: Any, label: str) -> str:
    """One content block (``mcp_types.ContentBlock``) as text."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return block.text
    if kind == "image":
        return caption(label, block.mime_type, _decoded(block.data))
    if kind == "audio":
        return f"[audio: {label}, {block.mime_type}, {_kilobytes(block.data)} KB]"
    if kind == "resource_link":
        return _link(block)
    if kind == "resource":
        return _embedded(block.resource)
    return f"[{kind or 'unknown'} content]"


def _link(block: Any) -> str:
    """``[resource link: file:///srv/log.txt (log.txt, text/plain): The server's log]``."""
    name = getattr(block, "title", None) or getattr(block, "name", "") or ""
    about = [n for n in (name if name != str(block.uri) else "", getattr(block, "mime_type", None) or "") if n]
    description = " ".join((getattr(block, "description", None) or "").split())
    return f"[resource link: {block.uri}" + (f" ({', '.join(about)})" if about else "") + (f": {description}" if description else "") + "]"


def _embedded(resource: Any) -> str:
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return text
    mime = getattr(resource, "mime_type", None) or "binary"
    return f"[resource: {resource.uri}, {mime}, {_kilobytes(resource.blob)} KB]"


def _kilobytes(data: str) -> int:
    return max(1, round(len(_decoded(data)) / 1024))


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return data.encode("utf-8", errors="replace")


def _carried(structured: Any, texts: list[str]) -> bool:
    """Whether the text blocks already say what ``structured`` says: one of them is its JSON, or
    every string in it appears in them (a file's content wrapped as ``{"content": ...}``)."""
    for text in texts:
        try:
            if json_in.loads(text, what="a text block") == structured:
                return True
        except ValueError:
            pass
    strings = list(_strings(structured))
    joined = "\n".join(texts)
    return bool(strings) and all(s in joined for s in strings)


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
