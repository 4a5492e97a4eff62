"""Stale reads: never change a file on the strength of a view of it that is out of date.

The session's ReadLedger keeps the hash of each file as the agent last read or wrote it. A change
to a file whose content differs from that (the user, the editor or a command changed it since)
is refused with a request to read it again. A whole-file rewrite of an existing file the agent
has not seen in this session is refused too, so it is never blind. An edit needs no earlier read:
its unique match proves the model knows the text.

Totem's own undo and redo are not outside changes: ``mark_restored`` records what they left, so
the agent's next change of such a file is not refused as stale (the model is told of them, and
rereads: turn/loop.py).
"""

from __future__ import annotations

import hashlib

from totem_engine.tools.base import ReadLedger, ToolContext
from totem_engine.vocab.tools import ToolError


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_fresh(ctx: ToolContext, rel: str, current: bytes | None, *, whole_rewrite: bool) -> None:
    """Raise ToolError when changing ``rel`` (now ``current``; None: absent) would be stale or blind."""
    if current is None or ctx.reads is None:
        return
    seen = ctx.reads.seen.get(rel)
    if seen is None:
        if whole_rewrite:
            raise ToolError(f"{rel} already exists and you have not read it in this session. Read it first, then change it.")
        return
    if content_hash(current) != seen:
        raise ToolError(f"{rel} changed since you last read it (by the user or a command). Read it again before changing it.")


def mark_seen(ctx: ToolContext, rel: str, data: bytes) -> None:
    if ctx.reads is not None:
        mark_seen_in(ctx.reads, rel, data)


def mark_seen_in(reads: ReadLedger, rel: str, data: bytes) -> None:
    """The agent has seen ``rel`` as ``data`` (read, written, or shown with the user's message)."""
    reads.seen[rel] = content_hash(data)


def mark_restored(reads: ReadLedger, rel: str, data: bytes | None) -> None:
    """Totem's undo or redo left ``rel`` as ``data`` (None: it deleted the file). What the session
    knows of the file follows, so the agent's next change of it is not refused as stale."""
    if data is None:
        reads.seen.pop(rel, None)
    else:
        reads.seen[rel] = content_hash(data)
