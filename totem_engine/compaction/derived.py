"""The derived history of one conversation, kept from step to step and extended, not rebuilt.

``DerivedHistory(provider).update(stored)`` takes the session's stored messages (``Store.messages``)
and converts only what it has not seen: each stored message is converted (``history.to_messages``),
counted (``context.message_tokens``) and scanned (its checkpoint, its AGENTS.md blocks, its call
ids) once per version of it. The key is the stored message object: the store gives an unchanged
message back as the same object and a changed one (a part added, updated or discarded, an image
turned into its caption: its part set ``captioned`` once a step was answered with it) as a new
one, so the cache keeps the longest prefix of the list whose
objects are the ones it converted and converts again from the first that differs (a discarded
step, a fresh attempt, a rewind, a regenerated variant: ``Store.messages`` is the conversation's
path, and a message not on it is simply not in the list). A ``DerivedHistory`` is made for one
session, one provider (whose replay state goes back) and one answer to "does the model see
images": the Fitter of a turn holds one. It also lists the image parts still fresh
(``fresh_images``), which the turn marks captioned once a step was answered with them.

What it answers in time independent of the session's length (besides the list copy): the latest
checkpoint and where the messages after it start, the tokens of those messages (prefix sums),
the tokens of a message it derived (by identity), and the ledger's first request and blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, compress, count
from operator import is_, is_not

from totem_engine.images import FRESH, IMAGE_PART
from totem_engine.compaction.checkpoints import CHECKPOINT_PART, Checkpoint
from totem_engine.compaction.ledger import Ledger, instruction_blocks, todo_items
from totem_engine.context import fixed_tokens, message_tokens
from totem_engine.history import to_messages
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolSpec
from totem_engine.store import StoredMessage


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs a fifth more, once per message
class _Entry:
    """One stored message, as converted once (never changed after)."""

    stored: StoredMessage
    messages: tuple[Message, ...]
    tokens: tuple[int, ...]
    only_checkpoints: bool
    checkpoint: Checkpoint | None  # the last live checkpoint part it holds
    first_text: str | None  # a user message's typed text (the ledger's first request)
    blocks: tuple[tuple[str, ...], ...]  # AGENTS.md blocks of each of its tool results that has any
    call_ids: tuple[str, ...]
    fresh_images: tuple[str, ...]  # ids of its image parts no step has been answered with yet


def _entry(message: StoredMessage, provider: str | None, vision: bool) -> _Entry:
    derived = tuple(to_messages([message], provider=provider, vision=vision))
    checkpoint = None
    first_text = None
    blocks: list[tuple[str, ...]] = []
    call_ids: list[str] = []
    fresh_images: list[str] = []
    only_checkpoints = bool(message.parts)
    # One pass over the parts: this runs for every stored message a cold fit converts.
    for part in message.parts:
        kind = part.type
        if kind != CHECKPOINT_PART:
            only_checkpoints = False
        if kind == "tool":
            call_ids.append(str(part.data.get("callId")))
        if part.discarded:
            continue
        if kind == CHECKPOINT_PART and part.data.get("covers"):
            checkpoint = Checkpoint(
                text=str(part.data.get("text", "")),
                covers=str(part.data["covers"]),
                messages=int(part.data.get("messages", 0) or 0),
            )
        elif kind == "text" and message.role == "user" and first_text is None:
            first_text = "".join(p.data.get("text", "") for p in message.parts if p.type == "text" and not p.discarded)
        elif kind == "tool":
            found = instruction_blocks(part.data.get("output"))
            if found:
                blocks.append(found)
        elif kind == IMAGE_PART and part.status == FRESH:
            fresh_images.append(part.id)
    return _Entry(
        stored=message,
        messages=derived,
        tokens=tuple(map(message_tokens, derived)),
        only_checkpoints=only_checkpoints,
        checkpoint=checkpoint,
        first_text=first_text,
        blocks=tuple(blocks),
        call_ids=tuple(call_ids),
        fresh_images=tuple(fresh_images),
    )


class DerivedHistory:
    """The stored messages of one session as the model's messages, converted once per version of
    each (see the module docstring). ``provider``: whose replay state goes back; ``vision``: the
    model sees images, so fresh ones are sent (``to_messages``)."""

    def __init__(self, provider: str | None = None, *, vision: bool = False) -> None:
        self.provider = provider
        self.vision = vision
        self._entries: list[_Entry] = []
        self._stored: list[StoredMessage] = []  # the entries' stored messages, in order
        self._index: dict[str, int] = {}  # stored message id -> entry index
        self._offsets: list[int] = [0]  # _offsets[i]: where entry i's messages start in _flat
        self._sums: list[int] = [0]  # _sums[i]: tokens of the messages of entries before i
        self._flat: list[Message] = []
        self._tokens_by_id: dict[int, int] = {}  # id(message) -> tokens, for the messages in _flat
        self._checkpoints: list[int] = []  # indices of entries holding a checkpoint
        self._blocks: list[int] = []  # indices of entries holding AGENTS.md blocks
        self._images: list[int] = []  # indices of entries holding fresh images
        self._fixed: tuple[str, tuple[ToolSpec, ...], int] | None = None
        self.call_ids: set[str] = set()  # every call id seen, never forgotten
        self.converted = 0  # stored messages converted so far (what the tests of the cache read)

    def update(self, stored: Sequence[StoredMessage]) -> None:
        """Take the session's messages now: keep the entries of the unchanged prefix, convert the rest."""
        seen = self._stored
        # The first index whose object differs, found at C speed (the list is the session's length).
        keep = next(compress(count(), map(is_not, seen, stored)), min(len(seen), len(stored)))
        if keep < len(seen):
            self._truncate(keep)
        if keep < len(stored):
            self._extend([_entry(message, self.provider, self.vision) for message in stored[keep:]])

    def _truncate(self, keep: int) -> None:
        del self._stored[keep:]
        for entry in self._entries[keep:]:
            del self._index[entry.stored.id]
            for message in entry.messages:
                self._tokens_by_id.pop(id(message), None)
        del self._entries[keep:]
        del self._flat[self._offsets[keep] :]
        del self._offsets[keep + 1 :]
        del self._sums[keep + 1 :]
        self._checkpoints = [i for i in self._checkpoints if i < keep]
        self._blocks = [i for i in self._blocks if i < keep]
        self._images = [i for i in self._images if i < keep]

    def _extend(self, entries: list[_Entry]) -> None:
        # In bulk: a cold fit (a new process, a resumed session) extends by the whole session.
        first = len(self._entries)
        self._entries += entries
        self._stored += [e.stored for e in entries]
        self._index.update(zip([e.stored.id for e in entries], count(first)))
        flat = self._flat
        added = len(flat)
        for entry in entries:
            flat += entry.messages
        self._tokens_by_id.update(zip(map(id, flat[added:]), chain.from_iterable(e.tokens for e in entries)))
        offset, total = self._offsets[-1], self._sums[-1]
        self._offsets += [offset + n for n in accumulate(len(e.messages) for e in entries)]
        self._sums += [total + n for n in accumulate(sum(e.tokens) for e in entries)]
        for index, entry in enumerate(entries, first):
            if entry.checkpoint is not None:
                self._checkpoints.append(index)
            if entry.blocks:
                self._blocks.append(index)
            if entry.fresh_images:
                self._images.append(index)
        self.call_ids.update(chain.from_iterable(e.call_ids for e in entries))
        self.converted += len(entries)

    def checkpoint(self) -> tuple[Checkpoint | None, int]:
        """The latest checkpoint and the index of the first entry after what it covers (0 when
        none, or when what it covers is not in this list: a fork cut before it), as
        ``checkpoints.apply_checkpoints`` tells it."""
        if not self._checkpoints:
            return None, 0
        latest = self._entries[self._checkpoints[-1]].checkpoint
        assert latest is not None
        covered = self._index.get(latest.covers)
        if covered is None:
            return None, 0
        return latest, covered + 1

    def fresh_images(self) -> list[str]:
        """The ids of the image parts still ``fresh`` in the messages last given to ``update``: those
        the next request is the first (and only) one to send."""
        return [part_id for index in self._images for part_id in self._entries[index].fresh_images]

    def stored_from(self, start: int) -> list[StoredMessage]:
        """The stored messages from entry ``start``, less those that hold only checkpoints."""
        return [e.stored for e in self._entries[start:] if not e.only_checkpoints]

    def groups_from(self, start: int) -> list[tuple[StoredMessage, tuple[Message, ...], tuple[int, ...]]]:
        """(stored, its messages, their tokens) from entry ``start``, for each that derives any
        (the entries' own tuples: compaction copies what it changes)."""
        return [(e.stored, e.messages, e.tokens) for e in self._entries[start:] if e.messages]

    def messages_from(self, start: int) -> list[Message]:
        """The derived messages of the entries from ``start`` (a new list)."""
        return self._flat[self._offsets[start] :]

    def tokens_from(self, start: int) -> int:
        return self._sums[-1] - self._sums[start]

    def tokens_of(self, messages: Sequence[Message], given: list[Message], tokens: int) -> int:
        """The tokens of ``messages``, knowing that ``given`` has ``tokens``: when they are the
        very same messages (the policy showed the history as it is), at C speed."""
        if len(messages) == len(given) and all(map(is_, messages, given)):
            return tokens
        return sum(self.tokens(m) for m in messages)

    def tokens(self, message: Message) -> int:
        """``message_tokens(message)``, looked up when this history derived that very message."""
        known = self._tokens_by_id.get(id(message))
        return message_tokens(message) if known is None else known

    def fixed(self, system: str, tools: tuple[ToolSpec, ...]) -> int:
        """``fixed_tokens(system, tools)``, counted again only when the prompt or the tools change."""
        known = self._fixed
        if known is None or known[1] is not tools or known[0] != system:
            known = self._fixed = (system, tools, fixed_tokens(system, tools))
        return known[2]

    def ledger(self, todos: Sequence[dict] = ()) -> Ledger:
        """``build_ledger(stored, todos)`` of the messages last given to ``update``."""
        first = next((e.first_text for e in self._entries if e.first_text), "")
        blocks: list[str] = []
        for index in self._blocks:
            for found in self._entries[index].blocks:
                blocks += [b for b in found if b not in blocks]
        return Ledger(first_request=first, todos=todo_items(todos), instructions=tuple(blocks))
