"""A ``session/prompt``'s content blocks as the user's message.

After https://agentclientprotocol.com/protocol/content: text blocks are what the user typed
(a slash command among them is expanded by the engine); the other blocks are attachments, put
before the text the model gets (``Engine.prompt``): a resource link to a file of the project
is a ``<context file="…"/>`` line, as the language server marks the document a chat is about
(totem_lsp/chat.py), one elsewhere a line naming its URI; an embedded text resource is its text
in a ``<context>`` block; an image is attached to the message as the language server's
``attachments`` are (images.py: sent to a model that sees images once, its caption after and to
the others), one the engine cannot take (another format, over its size) is its caption; audio or
a binary resource is a caption naming its kind and size (``promptCapabilities.audio`` is false).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from totem_engine.api.attachments import Attachment, WordedContext
from totem_engine.api.images import AttachmentError, Image, caption, image_from_base64
from totem_engine.api.workspace import ToolError, project_path, resolve_in_project

Block = TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock


@dataclass(frozen=True)
class UserMessage:
    """``typed``: the text blocks, what the user typed; ``attachments``: what came with it, each
    a paragraph put before the text the model gets; ``images``: the images attached to it."""

    typed: str
    attachments: list[Attachment]
    images: tuple[Image, ...] = ()

    @property
    def context(self) -> list[str]:
        """The attachments as the model reads them."""
        return [a.render() for a in self.attachments]

    def text(self, typed_as_sent: str) -> str:
        """The message the model gets: the context, then ``typed_as_sent`` (the typed text, or
        the expansion of the slash command it was)."""
        return "\n\n".join([*self.context, typed_as_sent]) if self.attachments else typed_as_sent


def user_message(blocks: list[Block], root: Path, extra_roots: tuple[Path, ...] = ()) -> UserMessage:
    """``blocks`` as the engine takes them; a ``file://`` resource in ``root`` or one of
    ``extra_roots`` (the session's additionalDirectories) is a file of the project."""
    typed: list[str] = []
    attached: list[Attachment] = []
    images: list[Image] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            typed.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            rel = _in_project(block.uri, root, extra_roots)
            named = f" ({block.name})" if block.name else ""
            attached.append(Attachment("file", rel) if rel else WordedContext("context", block.uri, f"[resource: {block.uri}{named}]"))
        elif isinstance(block, EmbeddedResourceContentBlock):
            attached.append(_embedded(block.resource, root, extra_roots))
        elif isinstance(block, ImageContentBlock):
            try:
                images.append(image_from_base64(block.data, _image_name(block.uri, len(images))))
            except AttachmentError:
                name = block.uri or "attached image"
                attached.append(WordedContext("context", name, caption("attached image", block.mime_type, _decoded(block.data))))
        elif isinstance(block, AudioContentBlock):
            size = max(1, round(len(_decoded(block.data)) / 1024))
            attached.append(WordedContext("context", "audio", f"[audio: {block.mime_type}, {size} KB]"))
    return UserMessage(typed="".join(typed).strip(), attachments=attached, images=tuple(images))


def _image_name(uri: str | None, index: int) -> str:
    """What an image's caption calls it: the last part of its URI when the client gave one."""
    name = unquote(urlsplit(uri).path).rsplit("/", 1)[-1] if uri else ""
    return name or f"image {index + 1}"


def _embedded(resource: TextResourceContents | BlobResourceContents, root: Path, extra_roots: tuple[Path, ...]) -> Attachment:
    rel = _in_project(resource.uri, root, extra_roots)
    if isinstance(resource, TextResourceContents):
        text = resource.text.rstrip("\n")
        if rel:
            return Attachment("file", rel, text)
        return WordedContext("context", resource.uri, f'<context uri="{resource.uri}">\n{text}\n</context>')
    size = max(1, round(len(_decoded(resource.blob)) / 1024))
    return WordedContext("context", rel or resource.uri, f"[resource: {rel or resource.uri}, {resource.mime_type or 'binary'}, {size} KB]")


def _in_project(uri: str, root: Path, extra_roots: tuple[Path, ...]) -> str | None:
    """How the engine names a ``file://`` URI's file in the session's roots (root-relative, or
    absolute in an extra root); None for another URI or a file outside them."""
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    try:
        return project_path(root, resolve_in_project(root, unquote(parts.path), extra_roots))
    except ToolError:
        return None


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return data.encode("utf-8", errors="replace")
