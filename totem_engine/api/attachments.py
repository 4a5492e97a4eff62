"""What a user's message brings besides its text, as a door resolves it: the mentions in it
(``@path``, ``#buffer`` ...), the blocks they and the editor's context become, and the project's
files a mention may name: the engine's own types and functions, named here for the doors."""

from totem_engine.attachments import (
    EDITOR_MENTIONS,
    Attachment,
    AttachmentKind,
    Mention,
    excerpt,
    find_mentions,
)
from totem_engine.mentions import project_files

__all__ = ["EDITOR_MENTIONS", "Attachment", "AttachmentKind", "Mention", "excerpt", "find_mentions", "project_files"]
