"""What a user attaches to a message as context (``Engine.prompt``'s ``attachments``): the
engine's ``Attachment`` (a file or a part of one, rendered as a ``<context file=…>`` block),
and ``WordedContext``, a block a door words itself because it is no file of the project (an ACP
client's link to a page, the caption of a binary resource), given to the model as it is."""

from __future__ import annotations

from dataclasses import dataclass

from totem_engine.attachments import Attachment

__all__ = ["Attachment", "WordedContext"]


@dataclass(frozen=True)
class WordedContext(Attachment):
    """``body`` is the block as the model reads it; ``path`` names what it is about (a URI)."""

    def render(self) -> str:
        return self.body or ""
