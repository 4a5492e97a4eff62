"""A checkpoint written when the user asks (``/compact``), not when the window forces one.

Unlike ``fit``'s checkpoint, which keeps the newest turns whole, this one covers the whole
conversation so far (after the previous checkpoint, whose summary it includes): the user asked
to start the next turn from a summary. The session is changed only by the new ``checkpoint``
part (checkpoints.py), so ``sessions show`` still shows every message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from totem_engine.compaction.accounts import AccountedTool, Accounts
from totem_engine.compaction.budgets import CHARS_PER_TOKEN, SUMMARY_SHARE
from totem_engine.compaction.checkpoints import Checkpoint, keep_checkpoint
from totem_engine.compaction.derived import DerivedHistory
from totem_engine.compaction.summary import Complete, summarise
from totem_engine.store import Store, StoredMessage


async def checkpoint_now(
    stored: Sequence[StoredMessage],
    *,
    tools: Mapping[str, AccountedTool],
    complete: Complete,
    store: Store,
    session_id: str,
    provider: str | None,
    window: int,
) -> Checkpoint | None:
    """Summarise every message of ``stored`` (the session's) not yet under a checkpoint, keep the
    summary as a new checkpoint and return it; None when there is nothing new to summarise.
    ``window``: the summariser's window in tokens (the summary takes at most ``SUMMARY_SHARE``)."""
    history = DerivedHistory(provider)
    history.update(stored)
    previous, start = history.checkpoint()
    groups = list(history.groups_from(start))
    if not groups:
        return None
    originals = [m for _, messages, _ in groups for m in messages]
    covered = [s for s, _, _ in groups]
    text = await summarise(
        originals,
        previous.text if previous is not None else None,
        complete,
        Accounts(tools, originals, history.stored_from(start)),
        summary_window=window,
        max_chars=max(200, int(window * SUMMARY_SHARE) * CHARS_PER_TOKEN),
    )
    count = len({s.id for s in covered}) + (previous.messages if previous is not None else 0)
    checkpoint = Checkpoint(text=text, covers=covered[-1].id, messages=count)
    await keep_checkpoint(store, session_id, "checkpoint", checkpoint)
    return checkpoint
