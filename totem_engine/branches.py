"""The conversation as a tree: where a rewind cuts it, which answers are variants of one another.

A session's messages form a tree (store/: each message names the one before it on its
branch, the session its ``head``); the conversation as it stands is the path from the head back
to the first message. A rewind moves the head to before a message and marks what it sets aside
``rewound``; a regenerated answer is a second branch after the same user message, and switching
variants moves the head into another branch. Nothing here writes: these are the questions the
runtime asks of ``Store.tree`` before it moves the head.
"""

from __future__ import annotations

from totem_engine.api.errors import EngineError
from totem_engine.store import MessageNotFound, StoredMessage, path_ids


class NotInConversation(EngineError, LookupError):
    """A message that is not on the conversation's path as it stands (rewound, another variant)."""

    def __init__(self, message_id: str):
        super().__init__(f"message {message_id!r} is not in the conversation as it stands (rewound, or another variant)")
        self.message_id = message_id


class FilesNotAtTurnStart(EngineError, ValueError):
    """Files go back by whole turns (snapshots.py keeps one change set per turn): a rewind with
    files must go to the start of a turn."""

    def __init__(self, message_id: str):
        super().__init__(
            f"message {message_id!r} is inside a turn; files go back only to the start of a turn: rewind to the"
            " turn's first message (the request), or without files"
        )


class NothingToRetry(EngineError, ValueError):
    """``totem/retry`` on a conversation whose last turn did not fail, or failed too often."""


class Tree:
    """Every message of a session (``Store.tree``, in seq order) and its head, with the lookups
    the runtime needs."""

    def __init__(self, messages: list[StoredMessage], head: str | None):
        self.messages = messages
        self.head = head
        self._by_id = {m.id: m for m in messages}
        self._path = path_ids(messages, head)

    def get(self, message_id: str) -> StoredMessage:
        found = self._by_id.get(message_id)
        if found is None:
            raise MessageNotFound(message_id)
        return found

    def path(self) -> list[StoredMessage]:
        """The conversation as it stands, in order."""
        return [m for m in self.messages if m.id in self._path]

    def on_path(self, message_id: str) -> bool:
        return message_id in self._path

    def active(self, message_id: str) -> StoredMessage:
        """The message, when it is on the conversation's path; else ``NotInConversation``."""
        message = self.get(message_id)
        if not self.on_path(message_id):
            raise NotInConversation(message_id)
        return message

    def parent(self, message: StoredMessage) -> StoredMessage | None:
        return self._by_id.get(message.parent_id) if message.parent_id else None

    def requests(self) -> list[StoredMessage]:
        """The user's requests on the conversation's path, oldest first (an answer given again,
        a regenerated variant or a retry, starts a turn of its own but is no request)."""
        return [m for m in self.path() if m.role == "user" and self.starts_turn(m)]

    def starts_turn(self, message: StoredMessage) -> bool:
        """Whether ``message`` is the first of its turn on its branch: a request, or the first
        message of an answer given again (a regenerated variant, a retry)."""
        parent = self.parent(message)
        return parent is None or parent.turn_id != message.turn_id

    def set_aside(self, message: StoredMessage) -> list[str]:
        """The ids a rewind to ``message`` sets aside: it and every message after it on the path."""
        return [m.id for m in self.messages if m.seq >= message.seq and self.on_path(m.id)]

    def since(self, message: StoredMessage) -> list[StoredMessage]:
        """Every message stored at or after ``message``, of every branch (what happened since)."""
        return [m for m in self.messages if m.seq >= message.seq]

    def request_of(self, message: StoredMessage) -> StoredMessage:
        """The user's request that ``message`` answers: the user message that starts its turn,
        ``message`` itself when it is one. ``MessageNotFound`` when there is none before it."""
        at: StoredMessage | None = message
        while at is not None:
            if at.role == "user" and self.starts_turn(at):
                return at
            at = self.parent(at)
        raise MessageNotFound(message.id)

    def variants(self, request: StoredMessage) -> list[StoredMessage]:
        """The answers to ``request`` that were not rewound, oldest first: the first message of each."""
        return [m for m in self.messages if m.parent_id == request.id and m.role == "assistant" and not m.rewound]

    def chosen(self, request: StoredMessage) -> int | None:
        """The index in ``variants`` of the one on the path; None when none is."""
        return next((i for i, m in enumerate(self.variants(request)) if self.on_path(m.id)), None)

    def newest_in(self, first: StoredMessage) -> StoredMessage:
        """The newest message that is not rewound in the branch starting at ``first`` (``first``
        and all that follows it): where switching to that branch continues."""
        inside = {first.id}
        newest = first
        for message in self.messages:
            if message.parent_id in inside and not message.rewound:
                inside.add(message.id)
                newest = message  # messages are in seq order, so the last one found is the newest
        return newest

    def failed_turn(self) -> tuple[StoredMessage, StoredMessage, int] | None:
        """The conversation's last turn, when it failed (its last message holds an ``error``
        part): its request, the first of its messages a retry sets aside (the step that failed
        and what came after it; the steps that completed stay), and which retry in a row it was
        (0: it was no retry). None when the last turn did not fail."""
        path = self.path()
        error = next((p for p in path[-1].parts if p.type == "error" and not p.discarded), None) if path else None
        if error is None:
            return None
        turn = [m for m in path if m.turn_id == path[-1].turn_id]
        request = self.request_of(turn[0])
        answer = [m for m in turn if m.id != request.id]
        completed = [i for i, m in enumerate(answer) if any(p.type == "step" and not p.discarded for p in m.parts)]
        cut = answer[completed[-1] + 1] if completed else answer[0]
        return request, cut, int(error.data.get("retry") or 0)


def request_text(request: StoredMessage) -> str:
    """What the model received as the request (a command's expansion, not what was typed)."""
    return "".join(p.data.get("text", "") for p in request.parts if p.type == "text" and not p.discarded)
