"""Summary checkpoints in the session: stored as a ``checkpoint`` part, replayed in place of the
turns they cover.

A checkpoint part is ``{"text", "covers": id of the last message it covers, "messages": how many
stored messages it replaces}`` on an assistant message of its own, appended at the end of the
session; it is the only thing compaction ever writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from totem_engine.store import Store, StoredMessage

CHECKPOINT_PART = "checkpoint"
SUMMARY_HEADER = "[Summary of the earlier conversation, written at a checkpoint; it replaces {n} earlier messages, which stay in the session.]"


@dataclass(frozen=True)
class Checkpoint:
    text: str
    covers: str  # the id of the last stored message the summary covers
    messages: int = 0  # how many stored messages it replaces (for the header)

    def replayed(self) -> str:
        """The summary as the request carries it: a header saying what it replaces, then the text."""
        return SUMMARY_HEADER.format(n=self.messages or "the") + "\n" + self.text


def apply_checkpoints(stored: Sequence[StoredMessage]) -> tuple[Checkpoint | None, list[StoredMessage]]:
    """The latest checkpoint of the session and the stored messages it does not cover.

    A checkpoint covers every message up to and including ``covers``; later checkpoints include
    the earlier ones' summaries, so only the latest is replayed. A checkpoint whose ``covers`` is
    not in ``stored`` (a fork cut before it) is ignored. Messages that hold only checkpoints are
    left out. Replay: ``to_messages(remaining)`` after the checkpoint's text (``fit`` does this).
    """
    latest: Checkpoint | None = None
    for message in stored:
        for part in message.parts:
            if part.type == CHECKPOINT_PART and not part.discarded and part.data.get("covers"):
                latest = Checkpoint(
                    text=str(part.data.get("text", "")),
                    covers=str(part.data["covers"]),
                    messages=int(part.data.get("messages", 0) or 0),
                )
    rest = [m for m in stored if not _only_checkpoints(m)]
    if latest is None:
        return None, rest
    index = next((i for i, m in enumerate(rest) if m.id == latest.covers), None)
    if index is None:
        # ``covers`` may be a message that held only checkpoints, or outside this (forked) list.
        ids = [m.id for m in stored]
        if latest.covers not in ids:
            return None, rest
        cut = ids.index(latest.covers)
        kept = {m.id for m in stored[cut + 1 :]}
        return latest, [m for m in rest if m.id in kept]
    return latest, rest[index + 1 :]


async def keep_checkpoint(store: Store, session_id: str, turn_id: str, checkpoint: Checkpoint) -> None:
    """Append ``checkpoint`` to the session, on a message of its own (``turn_id`` "" is "checkpoint")."""
    message_id = await store.add_message(session_id, "assistant", turn_id=turn_id or "checkpoint")
    await store.add_part(
        message_id,
        CHECKPOINT_PART,
        {"text": checkpoint.text, "covers": checkpoint.covers, "messages": checkpoint.messages},
    )


def _only_checkpoints(message: StoredMessage) -> bool:
    return bool(message.parts) and all(p.type == CHECKPOINT_PART for p in message.parts)
