"""What a file-changing call changed, kept in its stored tool part (``files``) and read back.

The tool round (turn/calls.py) keeps an applied call's files (the action as the user allowed it:
path, old and new text) so a reopened session can show the call's diff as it was shown live from
the permission request (ACP ``session/load``, LSP ``totem/session``). Capped: a file whose texts
together pass ``FILE_LIMIT`` characters, or that would take the call past ``CALL_LIMIT``, is kept
as its path with ``omitted`` (why its texts are not there), so a rewrite of a large file does
not bloat the store or every read of the conversation.
"""

from __future__ import annotations

from typing import Any

from totem_engine.tools.base import ProposedFile

__all__ = ["CALL_LIMIT", "FILE_LIMIT", "kept", "proposed_files"]

FILE_LIMIT = 64 * 1024  # characters of one file's old and new text together
CALL_LIMIT = 256 * 1024  # characters of every file's texts in one call


def kept(files: list[ProposedFile]) -> list[dict[str, Any]]:
    """The part's ``files``: ``{path, oldText, newText}`` each (None: the file was absent
    before, or deleted), or ``{path, omitted}`` past the limits."""
    out: list[dict[str, Any]] = []
    total = 0
    for f in files:
        size = len(f.old_text or "") + len(f.new_text or "")
        if size > FILE_LIMIT:
            out.append({"path": f.path, "omitted": f"{size} characters, over the {FILE_LIMIT} kept for one file"})
        elif total + size > CALL_LIMIT:
            out.append({"path": f.path, "omitted": f"the call's files pass the {CALL_LIMIT} characters kept for one call"})
        else:
            total += size
            out.append({"path": f.path, "oldText": f.old_text, "newText": f.new_text})
    return out


def proposed_files(data: dict[str, Any]) -> list[ProposedFile]:
    """The files kept in a stored tool part's ``data`` with their texts (an omitted one is
    left out); none for a call that changed no file or was stored before they were kept."""
    files = data.get("files")
    return [
        ProposedFile(path=f["path"], old_text=f.get("oldText"), new_text=f.get("newText"))
        for f in files if isinstance(f, dict) and isinstance(f.get("path"), str) and "omitted" not in f
    ] if isinstance(files, list) else []
