"""The summary request of a checkpoint: what is sent to the summariser, how it is shrunk when it
does not fit, and the summary made of one-line accounts when the model cannot write one.

The summariser is a ``Complete`` (``completer``: the session's model or ``small_model``, no
tools), prompted with ``prompts/summary.txt``. The material is the earlier summary, then the
covered messages oldest first, each rendered in full (results cut to ``ITEM_SHARE`` of the
request's room) or, where the full renderings do not fit, briefly ("USER: …", "DONE: <account>").
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from totem_engine.compaction.accounts import Accounts
from totem_engine.compaction.budgets import CHARS_PER_TOKEN, DROP_SHARE, ITEM_SHARE, SUMMARY_OUTPUT_RESERVE
from totem_engine.prompt_files import prompt
from totem_engine.providers.base import Provider
from totem_engine.providers.errors import ContextOverflowError, ProviderError
from totem_engine.textcalls import split_think
from totem_engine.vocab.accounts import short
from totem_engine.vocab.chat import ChatRequest, TextChunk
from totem_engine.vocab.messages import Message

log = logging.getLogger(__name__)

Complete = Callable[[str, str], Awaitable[str]]
"""``await complete(system, text)``: one model call without tools; the answer's text."""


def completer(provider: Provider, model_id: str, *, max_tokens: int | None = None) -> Complete:
    """A ``Complete`` that asks ``model_id`` on ``provider`` (no tools) and joins its text.
    Provider errors propagate (``ContextOverflowError`` included): ``fit`` handles them."""

    async def complete(system: str, text: str) -> str:
        request = ChatRequest(
            model=model_id, system=system, messages=(Message(role="user", text=text),),
            max_tokens=max_tokens if max_tokens is not None else SUMMARY_OUTPUT_RESERVE,
        )
        out: list[str] = []
        stream = provider.stream(request)
        try:
            async for chunk in stream:
                if isinstance(chunk, TextChunk):
                    out.append(chunk.text)
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        return split_think("".join(out))[1]  # a model that thinks in its text: the answer only

    return complete


async def summarise(
    originals: Sequence[Message], previous: str | None, complete: Complete, accounts: Accounts,
    *, summary_window: int, max_chars: int,
) -> str:
    """The summary of ``originals`` (the covered messages, as derived) after the ``previous``
    summary, at most ``max_chars`` characters; the accounts' summary when the model fails."""
    system = prompt("summary.txt")
    room = max(1, summary_window - SUMMARY_OUTPUT_RESERVE) * CHARS_PER_TOKEN - len(system) - 200
    material = _material(originals, previous, accounts, room)
    text = await _ask(complete, system, material)
    if not text:
        text = _fallback_summary(originals, accounts, previous or "", max_chars)
    if len(text) > max_chars:
        text = text[:max_chars].rstrip() + "\n[summary cut to fit the context window]"
    return text


def _material(originals: Sequence[Message], previous: str | None, accounts: Accounts, room: int) -> "_Material":
    """Full renderings for the newest items that fit ``room`` characters, brief ones before them,
    shrunk further until the whole fits."""
    item_chars = max(400, int(room * ITEM_SHARE))
    earlier = f"EARLIER SUMMARY:\n{previous}" if previous is not None else None
    full = [""] * len(originals)
    used, split = len(earlier or ""), len(originals)
    for index in range(len(originals) - 1, -1, -1):
        rendered = _render(originals[index], accounts, item_chars)
        if used + len(rendered) > room:
            break
        full[index], used, split = rendered, used + len(rendered) + 2, index
    material = _Material(full=full, brief=[_brief(m, accounts) for m in originals], previous=earlier, split=split)
    while material.size() > room and material.shrink():
        pass  # what would not fit the summariser's window is given briefly, then left out
    return material


async def _ask(complete: Complete, system: str, material: "_Material") -> str | None:
    """The model's summary; on an overflow the material is shrunk and it is asked again. None
    when nothing is left to send or the provider fails otherwise."""
    while not material.empty():
        try:
            return (await complete(system, material.text() + "\n\nWrite the checkpoint summary now.")).strip()
        except ContextOverflowError:
            if not material.shrink():
                return None
        except ProviderError as exc:
            log.warning("summary checkpoint failed: %s", exc.message)
            return None
    return None


def _render(message: Message, accounts: Accounts, item_chars: int) -> str:
    if message.role == "user":
        body = f"USER:\n{message.text}"
    elif message.role == "assistant":
        lines = ["ASSISTANT:"]
        if message.text:
            lines.append(message.text)
        lines += [f"-> called {c.name} {c.arguments}" for c in message.tool_calls]
        body = "\n".join(lines)
    else:
        text = message.text
        if len(text) > item_chars:
            half = max(0, item_chars // 2)
            text = f"{text[:half]}\n[… {len(text) - 2 * half} characters left out …]\n{text[-half:]}"
        body = f"RESULT of {accounts.line(message)}:\n{text}"
    if len(body) > item_chars * 2:
        body = body[: item_chars * 2] + "\n[… cut …]"
    return body


def _brief(message: Message, accounts: Accounts) -> str:
    """An item in one line: what the user said, what the agent said, what a call did."""
    if message.role == "user":
        return f"USER: {short(message.text, 300)}"
    if message.role == "assistant":
        return f"ASSISTANT: {short(message.text, 120)}" if message.text else ""
    return "DONE: " + accounts.line(message)


@dataclass
class _Material:
    """What is summarised: the earlier summary, then the items, oldest first. ``shrink`` takes
    detail off the oldest end: first items go from full to brief, then brief items are dropped,
    then the earlier summary; it returns False when nothing is left to take."""

    full: list[str]
    brief: list[str]
    previous: str | None
    split: int = 0  # items before this are given briefly
    drop: int = 0  # items before this are left out

    def __post_init__(self) -> None:
        self._full = [len(x) + 2 for x in self.full]
        self._brief = [len(x) + 2 if x else 0 for x in self.brief]
        self._size = (
            sum(self._brief[: self.split]) + sum(self._full[self.split :])
            + (len(self.previous) + 2 if self.previous else 0)
        )

    def size(self) -> int:
        return self._size

    def empty(self) -> bool:
        return self.previous is None and self.drop >= len(self.full)

    def text(self) -> str:
        parts = [self.previous] if self.previous else []
        parts += [b for b in self.brief[self.drop : self.split] if b]
        parts += self.full[max(self.split, self.drop) :]
        return "\n\n".join(parts)

    def shrink(self) -> bool:
        n = len(self.full)
        if self.split < n:
            step = max(1, math.ceil((n - self.split) * DROP_SHARE))
            for i in range(self.split, min(n, self.split + step)):
                self._size += self._brief[i] - self._full[i]
            self.split = min(n, self.split + step)
        elif self.drop < n:
            step = max(1, math.ceil((n - self.drop) * DROP_SHARE))
            for i in range(self.drop, min(n, self.drop + step)):
                self._size -= self._brief[i]
            self.drop = min(n, self.drop + step)
        elif self.previous is not None:
            self._size -= len(self.previous) + 2
            self.previous = None
        else:
            return False
        return True


def _fallback_summary(originals: Sequence[Message], accounts: Accounts, previous: str, max_chars: int) -> str:
    """A summary made without the model: the earlier summary, then the user's words and what was
    done, newest kept when it is too long for ``max_chars``."""
    header = "## Done (one-line accounts; the model could not write this summary)"
    room = max_chars - len(header) - (len(previous) + 2 if previous else 0) - 40
    lines: list[str] = []
    for message in reversed(originals):
        if message.role == "user":
            line = f"- user said: {short(message.text, 200)}"
        elif message.role == "tool":
            line = "- " + accounts.line(message)
        else:
            continue
        if room - len(line) - 1 < 0:
            lines.append("- (earlier items left out)")
            break
        room -= len(line) + 1
        lines.append(line)
    text = "\n".join([header, *reversed(lines)])
    return f"{previous}\n\n{text}" if previous else text
