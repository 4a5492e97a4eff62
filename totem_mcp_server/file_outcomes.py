"""What became of each file an undo, a redo or a rewind put back, in the shape the tools
``undo_turn``, ``redo_turn`` and ``rewind`` return (the engine's ``FileOutcome``s)."""

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel


class FileOutcome(BaseModel):
    path: str  # project-relative, "/" ("": an unrestorable change whose files are not known)
    action: Literal["restored", "deleted", "conflict", "unrestorable"]
    reason: str | None  # why a conflict or an unrestorable change (a command's, not kept) was left alone


def file_outcomes(files: Sequence[Any]) -> list[FileOutcome]:
    """The engine's outcomes (``Reply.files``, ``Rewound.files``) as the tools' models."""
    return [FileOutcome(path=f.path, action=f.action, reason=f.reason) for f in files]
