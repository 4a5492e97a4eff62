"""What a user's message brings besides its text, as a door resolves it (``Engine.prompt``'s
``attachments``): the mentions in it (``@path``, ``#buffer`` ...), the engine's ``Attachment`` (a
file or a part of one, rendered as a ``<context file=…>`` block), the project's files a mention
may name, and ``WordedContext``, a block a door words itself because it is no file of the
project (an ACP client's link to a page, the caption of a binary resource), given to the model
as it is."""

from __future__ import annotations

from dataclasses import dataclass

from totem_engine.attachments import (
    EDITOR_MENTIONS,
    Attachment,
    AttachmentKind,
    Mention,
    excerpt,
    find_mentions,
)
from totem_engine.mentions import project_files

__all__ = [
    "EDITOR_MENTIONS", "Attachment", "AttachmentKind", "Mention", "WordedContext", "excerpt", "find_mentions",
    "project_files",
]


@dataclass(frozen=True)
class WordedContext(Attachment):
    """``body`` is the block as the model reads it; ``path`` names what it is about (a URI)."""

    def render(self) -> str:
        return self.body or ""
