"""``totem/chat`` ``attachments`` as the engine's images (docs/protocol.md "totem/chat").

Each attachment is ``{type: "image", mimeType, data | uri, name?}``: base64 ``data``, or a ``uri``
the server reads itself, ``file:`` (a file the editor names, anywhere: the user chose it) or
``data:`` (RFC 2397). What the bytes are is read from them (totem_engine/images.py): a
``mimeType`` outside the four the wires take is refused, one that differs from the bytes is
corrected. Every problem is invalid params naming the attachment, and no turn starts.
"""

from __future__ import annotations

import asyncio

from pygls.exceptions import JsonRpcInvalidParams

from totem_engine.api.images import (
    MAX_IMAGE_BYTES,
    MIME_TYPES,
    AttachmentError,
    Image,
    image_from_base64,
    image_from_bytes,
    image_from_data_uri,
    size_text,
)
from totem_lsp.messages import ChatAttachment
from totem_lsp.uris import path_of


async def images_of(attachments: list[ChatAttachment]) -> tuple[Image, ...]:
    """The attachments as images, in order; JsonRpcInvalidParams for the first that is not one."""
    images = []
    for n, attachment in enumerate(attachments):
        name = attachment.name or _name_of(attachment.uri) or f"attachment {n + 1}"
        try:
            images.append(await _image(attachment, name))
        except AttachmentError as exc:
            raise JsonRpcInvalidParams(f"attachments[{n}]: {exc}") from None
    return tuple(images)


async def _image(attachment: ChatAttachment, name: str) -> Image:
    if attachment.mime_type not in MIME_TYPES:
        raise AttachmentError(f"mimeType {attachment.mime_type!r} is not one of {', '.join(MIME_TYPES)}")
    if attachment.data is not None:
        return image_from_base64(attachment.data, name)
    uri = attachment.uri or ""
    if uri.startswith("data:"):
        return image_from_data_uri(uri, name)
    path = path_of(uri) if uri.startswith("file:") else None
    if path is None:
        raise AttachmentError(f"uri {uri[:80]!r} is neither a file: nor a data: URI")
    try:
        size = (await asyncio.to_thread(path.stat)).st_size
        if size > MAX_IMAGE_BYTES:
            raise AttachmentError(f"{name} is {size_text(size)}, over the {size_text(MAX_IMAGE_BYTES)} an image may have")
        data = await asyncio.to_thread(path.read_bytes)
    except OSError as exc:
        raise AttachmentError(f"cannot read {path}: {exc.strerror or exc}") from None
    return image_from_bytes(data, name)


def _name_of(uri: str | None) -> str | None:
    """A ``file:`` URI's file name (what the caption shows); None for other URIs."""
    if not uri or not uri.startswith("file:"):
        return None
    path = path_of(uri)
    return path.name if path else None
