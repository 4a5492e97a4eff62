"""The pinned ledger: what every compacted request carries verbatim (the user's first request,
the todo list, the AGENTS.md blocks that came in with tool results)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from totem_engine.store import StoredMessage
from totem_engine.vocab.messages import Message

PINNED_HEADER = "[Pinned: carried verbatim through every compaction of this conversation.]"

_INSTRUCTIONS = re.compile(r'<instructions from="[^"]*">.*?</instructions>', re.DOTALL)


@dataclass(frozen=True)
class Ledger:
    """What every compacted request carries verbatim.

    ``first_request``: the text of the session's first user message. ``todos``: the session's
    todo list as stored (``[{"content", "status"}]``). ``instructions``: AGENTS.md blocks
    (``<instructions from="...">...</instructions>``) that joined the conversation inside tool
    results, which compaction would otherwise replace.
    """

    first_request: str = ""
    todos: tuple[tuple[str, str], ...] = ()  # (status, content)
    instructions: tuple[str, ...] = ()

    def todo_block(self) -> str:
        if not self.todos:
            return ""
        return "Todo list:\n" + "\n".join(f"- [{status}] {content}" for status, content in self.todos)

    def pieces(self) -> list[str]:
        """The verbatim texts a compacted request must contain."""
        return [p for p in (self.first_request, self.todo_block(), *self.instructions) if p]

    def render(self) -> str:
        lines = [PINNED_HEADER]
        if self.first_request:
            lines += ["The user's first request:", self.first_request]
        if self.todos:
            lines.append(self.todo_block())
        if self.instructions:
            lines.append("Project instructions:")
            lines += list(self.instructions)
        return "\n".join(lines)


def build_ledger(
    stored: Sequence[StoredMessage], todos: Sequence[dict] = (), instructions: Sequence[str] = ()
) -> Ledger:
    """The ledger of a session: its first user text, ``todos`` (``SessionState.todos``) and the
    AGENTS.md blocks found in its tool results, after any ``instructions`` given."""
    first = ""
    blocks: list[str] = [i for i in instructions if i]
    for message in stored:
        for part in message.parts:
            if part.discarded:
                continue
            if not first and message.role == "user" and part.type == "text":
                first = "".join(p.data.get("text", "") for p in message.parts if p.type == "text" and not p.discarded)
            elif part.type == "tool":
                blocks += [b for b in instruction_blocks(part.data.get("output")) if b not in blocks]
    return Ledger(first_request=first, todos=todo_items(todos), instructions=tuple(blocks))


def instruction_blocks(output: object) -> tuple[str, ...]:
    """The AGENTS.md blocks (``<instructions from="...">...</instructions>``) in a tool's output."""
    if isinstance(output, str) and "<instructions from=" in output:
        return tuple(_INSTRUCTIONS.findall(output))
    return ()


def todo_items(todos: Sequence[dict]) -> tuple[tuple[str, str], ...]:
    """``SessionState.todos`` as the ledger keeps them: (status, content)."""
    return tuple((str(t.get("status", "pending")), str(t.get("content", ""))) for t in todos if isinstance(t, dict))


def ledger_present(messages: Sequence[Message], ledger: Ledger) -> bool:
    """True when every piece of the ledger is in the messages verbatim. Call it after a compaction
    (``Fitted.compacted``): an uncompacted list has the todo list only as tool-call arguments."""
    text = "\n".join(m.text for m in messages)
    return all(piece in text for piece in ledger.pieces())
