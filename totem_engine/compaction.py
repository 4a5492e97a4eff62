"""Keeping each request inside the model's window: a derived message list, never a rewritten history.

``fit(stored, build=..., window=...)`` is the loop's one entry point, called before every model
call. It returns the messages to send (``Fitted``); the stored session is never changed, except
that a summary checkpoint, when one is written, is appended as a new part. In order:

1. Tool results by budget. When the estimate passes ``compact_at`` of the window, the oldest tool
   results are replaced, oldest first, by a one-line account of what was done ("read src/app.py
   (348 lines)", "ran `pytest -q`: exit 1; ...AssertionError", "12 matches for 'foo'", "edited
   x"), until the estimate is under that budget. The newest round (the last step's calls) stays
   whole, unless that round alone is over the budget: then its results are cut to fit, each with
   a note saying how to get the rest. Results of ``skill`` (skill bodies) and ``ask`` (the
   user's answers) are kept.
2. Summary checkpoint. If that is not enough, the older turns are folded into a summary written
   by the model (``complete``, prompt ``prompts/summary.txt``), stored as a ``checkpoint`` part
   ``{"text", "covers": id of the last message it covers, ...}`` on a new message at the end of
   the session, and replayed in every later request in place of the turns it covers
   (``apply_checkpoints``). A later checkpoint summarises the earlier one with the turns since.
3. Pinned ledger. Whenever the list is compacted, its first message is a pinned user message
   carrying, verbatim, the user's first request, the todo list and the AGENTS.md instructions
   attached to tool results (the root AGENTS.md is in the system prompt, never compacted);
   the checkpoint's summary follows it in the same message. ``ledger_present`` checks it.
4. If the summary request overflows (``ContextOverflowError``), the oldest items of what is
   summarised are dropped and it is tried again; if nothing is left, or the provider fails
   otherwise, a summary made of the one-line accounts is used, so compaction always runs.
5. ``force=True`` (after a provider's ``ContextOverflowError``) compacts to half the budget.
   The loop retries the step once; a second overflow ends the turn.

Last, if the list is still over the window itself (a huge user message, a long summary), the
largest messages are cut with a note until it fits; ``Fitted.over`` says when even that failed
(the system prompt, tools and reserved output alone do not fit).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from totem_engine.context import (
    calibrated,
    fixed_tokens,
    input_tokens,
    message_tokens,
)
from totem_engine.history import to_messages
from totem_engine.prompt_files import prompt
from totem_engine.providers.base import ChatRequest, Message, Provider, TextChunk, ToolCall
from totem_engine.providers.errors import ContextOverflowError, ProviderError
from totem_engine.providers.textcalls import split_think
from totem_engine.store import Store, StoredMessage

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

CHECKPOINT_PART = "checkpoint"
KEEP_TOOLS = frozenset({"skill", "ask"})  # results never replaced by an account
DEFAULT_COMPACT_AT = 0.7
FORCE_SHARE = 0.5  # force=True: the budget is this share of the usual one
TAIL_SHARE = 0.5  # at a checkpoint, the recent messages kept whole take at most this share of the budget
SUMMARY_SHARE = 0.25  # of the budget: the most a replayed summary may take
SUMMARY_OUTPUT_RESERVE = 1024  # tokens kept free for the summary itself in the summary request
ITEM_SHARE = 0.125  # of the summary request's room: the most one summarised item may take
DROP_SHARE = 0.25  # on a summary overflow, the share of the remaining items dropped (at least one)
CHARS_PER_TOKEN = 4

ACCOUNT_PREFIX = "[compacted] "
PINNED_HEADER = "[Pinned: carried verbatim through every compaction of this conversation.]"
SUMMARY_HEADER = "[Summary of the earlier conversation, written at a checkpoint; it replaces {n} earlier messages, which stay in the session.]"

_INSTRUCTIONS = re.compile(r'<instructions from="[^"]*">.*?</instructions>', re.DOTALL)


# ---------------------------------------------------------------------------------------------
# The pinned ledger
# ---------------------------------------------------------------------------------------------


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
                output = part.data.get("output")
                if isinstance(output, str) and "<instructions from=" in output:
                    blocks += [b for b in _INSTRUCTIONS.findall(output) if b not in blocks]
    items = tuple(
        (str(t.get("status", "pending")), str(t.get("content", ""))) for t in todos if isinstance(t, dict)
    )
    return Ledger(first_request=first, todos=items, instructions=tuple(blocks))


def ledger_present(messages: Sequence[Message], ledger: Ledger) -> bool:
    """True when every piece of the ledger is in the messages verbatim. Call it after a compaction
    (``Fitted.compacted``): an uncompacted list has the todo list only as tool-call arguments."""
    text = "\n".join(m.text for m in messages)
    return all(piece in text for piece in ledger.pieces())


# ---------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    text: str
    covers: str  # the id of the last stored message the summary covers
    messages: int = 0  # how many stored messages it replaces (for the header)


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


def _only_checkpoints(message: StoredMessage) -> bool:
    return bool(message.parts) and all(p.type == CHECKPOINT_PART for p in message.parts)


# ---------------------------------------------------------------------------------------------
# One-line accounts of tool results
# ---------------------------------------------------------------------------------------------


def _args(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _short(text: str, limit: int = 80) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


_NUMBERED = re.compile(r"^(\d+)\t", re.MULTILINE)
_FILE_HAS = re.compile(r"File has (\d+) lines")
_EXIT = re.compile(r"^\[exit code (-?\d+)\]$", re.MULTILINE)
_GREP_TOTAL = re.compile(r"^\[(\d+) matches in (\d+) files", re.MULTILINE)
_GREP_HIT = re.compile(r"^[^\n:]+:\d+: ", re.MULTILINE)


def _numbered_span(output: str) -> tuple[int, int]:
    """The first and last line numbers of a read's ``N\tline`` output; (0, 0) when it has none."""
    head = _NUMBERED.match(output)
    if head is None:
        return 0, 0
    end = len(output)
    while end > 0:
        start = output.rfind("\n", 0, end) + 1
        found = _NUMBERED.match(output, start, end)
        if found:
            return int(head.group(1)), int(found.group(1))
        end = start - 1
    return int(head.group(1)), int(head.group(1))


def account(name: str, arguments: str, output: str) -> str:
    """One line saying what a call did, from the tool's name, its arguments and its result."""
    args = _args(arguments)
    error = output.startswith("Error:")
    if name == "read":
        path = str(args.get("path", "?"))
        if error:
            return f"read {path}: {_short(_first_line(output), 120)}"
        first, last = _numbered_span(output)
        total = _FILE_HAS.search(output[-1000:]) if first else None
        if first:
            if total:
                return f"read {path} lines {first}-{last} of {total.group(1)}"
            if first > 1:
                return f"read {path} lines {first}-{last}"
            return f"read {path} ({last} lines)"
        if "is a binary file" in output:
            return f"read {path} (binary file)"
        if output == "(empty file)":
            return f"read {path} (empty file)"
        return f"listed {path} ({len(output.splitlines())} entries)"
    if name == "bash":
        command = _short(args.get("command", "?"), 80)
        if "[Timed out after" in output:
            return f"ran `{command}`: timed out"
        code = _EXIT.search(output)
        if error:
            return f"ran `{command}`: {_short(_first_line(output), 120)}"
        if not code:
            return f"ran `{command}`: exit 0"
        body = [
            line.strip()
            for line in output.splitlines()
            if line.strip() and not (line.startswith("[") and line.rstrip().endswith("]"))
        ]
        tail = f"; last output: {_short(body[-1], 120)}" if body else ""
        return f"ran `{command}`: exit {code.group(1)}{tail}"
    if name == "grep":
        pattern = _short(args.get("pattern", "?"), 60)
        where = f" in {args['path']}" if args.get("path") else ""
        if error:
            return f"grep for '{pattern}'{where}: {_short(_first_line(output), 120)}"
        if output.startswith("No matches found"):
            count = 0
        else:
            total = _GREP_TOTAL.search(output)
            count = int(total.group(1)) if total else len(_GREP_HIT.findall(output))
        return f"{count} matches for '{pattern}'{where}"
    if name == "glob":
        pattern = _short(args.get("pattern", "?"), 60)
        count = 0 if output.startswith("No files found") else len([l for l in output.splitlines() if l and not l.startswith("[")])
        return f"{count} files matching '{pattern}'"
    if name in ("edit", "write"):
        path = str(args.get("path", "?"))
        if error:
            return f"{name} of {path} failed: {_short(_first_line(output), 120)}"
        first = _first_line(output)
        verb = "created" if first.startswith("Created") else ("wrote" if name == "write" else "edited")
        return f"{verb} {path}"
    if name == "patch":
        return f"patch: {_short(_first_line(output), 120)}"
    if name == "fetch":
        url = _short(args.get("url", "?"), 100)
        if error:
            return f"fetched {url}: {_short(_first_line(output), 120)}"
        return f"fetched {url} ({len(output)} characters)"
    if name == "todo":
        return "updated the todo list"
    shown = ", ".join(f"{k}={_short(v, 40)}" for k, v in list(args.items())[:3])
    return f"{name}({shown}): {_short(_first_line(output), 100)}"


def _account_of(message: Message, calls: dict[str, ToolCall], cache: dict[str, str]) -> str:
    """``account`` of a tool message, once per call id."""
    key = message.tool_call_id or ""
    line = cache.get(key)
    if line is None:
        call = calls.get(key)
        line = account(message.name or "", call.arguments if call else "{}", message.text)
        if key:
            cache[key] = line
    return line


def _cut_note(name: str, arguments: str, kept: str, total_chars: int) -> str:
    """How to get the rest of a result cut to fit the window."""
    args = _args(arguments)
    if name == "read":
        last = _numbered_span(kept)[1]
        offset = last + 1 if last else int(args.get("offset") or 1)
        return (
            f"[Cut to fit the context window: {len(kept)} of {total_chars} characters shown. "
            f"Read on with offset={offset} and a smaller limit.]"
        )
    if name == "bash":
        return (
            f"[Cut to fit the context window: the start and end of {total_chars} characters shown. "
            "Run it again with the output sent to a file, then read or grep that file in parts.]"
        )
    if name == "grep":
        return f"[Cut to fit the context window: {len(kept)} of {total_chars} characters shown. Narrow the pattern, path or include.]"
    return f"[Cut to fit the context window: {len(kept)} of {total_chars} characters shown. Ask for a smaller part to see the rest.]"


def cut_result(name: str, arguments: str, text: str, chars: int) -> str:
    """``text`` cut to about ``chars`` characters (whole lines where it can), with the note."""
    probe = _cut_note(name, arguments, text[:0], len(text))
    room = max(0, chars - len(probe) - 16)
    if len(text) <= chars:
        return text
    if name == "bash":
        head_room, tail_room = room // 3, room - room // 3
        head = _whole_lines_head(text, head_room)
        tail = text[len(text) - tail_room :] if tail_room else ""
        if "\n" in tail:
            tail = tail[tail.index("\n") + 1 :]
        kept = f"{head}\n…\n{tail}" if head or tail else ""
    else:
        kept = _whole_lines_head(text, room)
    note = _cut_note(name, arguments, kept, len(text))
    return f"{kept}\n{note}" if kept else note


def _whole_lines_head(text: str, room: int) -> str:
    head = text[:room]
    if len(head) < len(text) and "\n" in head:
        head = head[: head.rindex("\n")]
    return head


# ---------------------------------------------------------------------------------------------
# fit
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fitted:
    """The request to send and what was done to make it fit.

    ``estimate``: calibrated tokens of ``request`` plus the reserved output (compare with
    ``window``). ``raw_input``: the uncalibrated input estimate, for ``Calibration.update`` once
    the provider reports usage. ``compacted``: the messages differ from the plain history (results
    replaced or cut, a checkpoint replayed or written). ``over``: still over the window after all
    of it (only when the system prompt, tools and reserve alone do not fit).
    """

    request: ChatRequest
    messages: list[Message]
    estimate: int
    raw_input: int
    window: int | None
    compacted: bool = False
    checkpoint_written: bool = False
    accounts: int = 0  # tool results replaced by a one-line account
    cut: int = 0  # results or messages cut to fit
    over: bool = False
    checkpoint: Checkpoint | None = None  # the checkpoint replayed (new or earlier)


@dataclass
class _Group:
    """The derived messages of one stored message, with their current (compacted) costs."""

    stored: StoredMessage
    messages: list[Message]
    tokens: list[int] = field(default_factory=list)
    original: tuple[Message, ...] = ()  # as derived, before any compaction

    def __post_init__(self) -> None:
        self.tokens = [message_tokens(m) for m in self.messages]
        self.original = tuple(self.messages)

    def fresh(self) -> "_Group":
        return _Group(self.stored, list(self.original))

    @property
    def total(self) -> int:
        return sum(self.tokens)


@dataclass
class _State:
    groups: list[_Group]
    head: Message | None
    head_tokens: int
    fixed: int
    accounts: int = 0
    cut: int = 0
    body: int = 0  # tokens of the groups' messages, kept up to date by ``set``
    lines: dict[str, str] = field(default_factory=dict)  # call id -> its one-line account

    def __post_init__(self) -> None:
        self.recount()

    def recount(self) -> None:
        self.body = sum(g.total for g in self.groups)

    def pin(self, head: Message) -> None:
        self.head, self.head_tokens = head, message_tokens(head)
        self.recount()  # the head may have taken the first request's own message

    @property
    def raw(self) -> int:
        return self.fixed + self.head_tokens + self.body

    def set(self, group: _Group, index: int, message: Message) -> int:
        """Replace a message; returns the tokens saved."""
        before = group.tokens[index]
        group.messages[index] = message
        group.tokens[index] = message_tokens(message)
        self.body += group.tokens[index] - before
        return before - group.tokens[index]

    def messages(self) -> list[Message]:
        out = [self.head] if self.head is not None else []
        for group in self.groups:
            out.extend(group.messages)
        return out


def _groups(stored: Sequence[StoredMessage], provider: str | None) -> list[_Group]:
    groups = []
    for message in stored:
        derived = to_messages([message], provider=provider)
        if derived:
            groups.append(_Group(message, derived))
    return groups


def _calls(groups: Sequence[_Group]) -> dict[str, ToolCall]:
    return {call.id: call for g in groups for m in g.messages for call in m.tool_calls}


def _head(ledger: Ledger, checkpoint: Checkpoint | None, groups: list[_Group], *, absorb_first: bool) -> Message:
    """The pinned message. With ``absorb_first`` (``groups`` start at the session's first
    message), the first request's own message is taken out: the ledger carries it verbatim."""
    parts = [ledger.render()]
    if checkpoint is not None:
        parts.append(SUMMARY_HEADER.format(n=checkpoint.messages or "the") + "\n" + checkpoint.text)
    if absorb_first and groups and groups[0].messages and groups[0].messages[0].role == "user" and groups[0].messages[0].text == ledger.first_request:
        first = groups[0]
        first.messages.pop(0)
        first.tokens.pop(0)
    return Message(role="user", text="\n\n".join(parts))


def _newest_round(groups: list[_Group]) -> tuple[int, int] | None:
    """(group index, message index) of the last assistant message with tool calls."""
    for gi in range(len(groups) - 1, -1, -1):
        for mi in range(len(groups[gi].messages) - 1, -1, -1):
            message = groups[gi].messages[mi]
            if message.role == "assistant" and message.tool_calls:
                return gi, mi
    return None


def _round_results(groups: list[_Group], at: tuple[int, int]) -> list[tuple[_Group, int]]:
    gi, mi = at
    group = groups[gi]
    out = []
    for index in range(mi + 1, len(group.messages)):
        if group.messages[index].role != "tool":
            break
        out.append((group, index))
    return out


def _replace_results(state: _State, limit: int, calls: dict[str, ToolCall]) -> None:
    """Stage 1: oldest results first, by their one-line accounts, until ``state.raw <= limit``."""
    newest = _newest_round(state.groups)
    protected = {(id(g), i) for g, i in _round_results(state.groups, newest)} if newest else set()
    for group in state.groups:
        for index, message in enumerate(group.messages):
            if state.raw <= limit:
                return
            if message.role != "tool" or (id(group), index) in protected or message.name in KEEP_TOOLS:
                continue
            if message.text.startswith(ACCOUNT_PREFIX):
                continue
            line = ACCOUNT_PREFIX + _account_of(message, calls, state.lines)
            if len(line) >= len(message.text):
                continue
            state.set(group, index, replace(message, text=line))
            state.accounts += 1


def _cut_round(state: _State, limit: int, calls: dict[str, ToolCall]) -> None:
    """Cut the newest round's results (largest share first) so that ``state.raw <= limit``."""
    newest = _newest_round(state.groups)
    if newest is None:
        return
    results = [(g, i) for g, i in _round_results(state.groups, newest) if g.messages[i].text]
    if not results:
        return
    over = state.raw - limit
    if over <= 0:
        return
    current = sum(g.tokens[i] for g, i in results)
    room_tokens = max(0, current - over)
    # Water-filling: small results stay whole, the rest share what is left equally.
    sizes = sorted(((g.tokens[i], n) for n, (g, i) in enumerate(results)))
    share = {}
    left, count = room_tokens, len(sizes)
    for size, n in sizes:
        fair = left // count if count else 0
        share[n] = min(size, fair)
        left -= share[n]
        count -= 1
    for n, (group, index) in enumerate(results):
        message = group.messages[index]
        if group.tokens[index] <= share[n]:
            continue
        call = calls.get(message.tool_call_id or "")
        arguments = call.arguments if call else "{}"
        chars = max(0, (share[n] - message_tokens(replace(message, text=""))) * CHARS_PER_TOKEN)
        text = cut_result(message.name or "", arguments, message.text, chars)
        state.set(group, index, replace(message, text=text))
        state.cut += 1


def _squeeze(state: _State, limit: int) -> None:
    """Last resort: cut the largest messages until ``state.raw <= limit`` (or nothing is left to cut)."""
    while state.raw > limit:
        candidates = [(g.tokens[i], g, i) for g in state.groups for i in range(len(g.messages)) if len(g.messages[i].text) > 200]
        head_big = state.head is not None and len(state.head.text) > 200
        if not candidates and not head_big:
            return
        over = state.raw - limit
        if candidates and (not head_big or max(candidates, key=lambda c: c[0])[0] >= state.head_tokens):
            size, group, index = max(candidates, key=lambda c: c[0])
            message = group.messages[index]
            keep = max(0, (size - over - 40) * CHARS_PER_TOKEN)
            text = message.text[: max(0, keep)].rstrip() + f"\n[Cut to fit the context window: {len(message.text)} characters in full.]"
            if len(text) >= len(message.text):
                text = f"[Cut to fit the context window: {len(message.text)} characters in full.]"
            state.set(group, index, replace(message, text=text))
        else:
            keep = max(0, (state.head_tokens - over - 40) * CHARS_PER_TOKEN)
            text = state.head.text[:keep].rstrip() + "\n[Cut to fit the context window.]"
            if len(text) >= len(state.head.text):
                return
            state.head = replace(state.head, text=text)
            state.head_tokens = message_tokens(state.head)
        state.cut += 1


async def fit(
    stored: Sequence[StoredMessage],
    *,
    build: Callable[[list[Message]], ChatRequest],
    window: int | None,
    output_reserve: int,
    ledger: Ledger,
    complete: Complete | None = None,
    store: Store | None = None,
    session_id: str | None = None,
    turn_id: str = "",
    provider: str | None = None,
    calibration: float = 1.0,
    compact_at: float = DEFAULT_COMPACT_AT,
    summary_window: int | None = None,
    force: bool = False,
) -> Fitted:
    """The request for the next step, inside ``window``.

    ``stored``: the session's messages (``store.messages(session_id)``). ``build(messages)``: the
    loop's request for a message list (system prompt, tools, model). ``output_reserve``: tokens
    kept for the answer (``context.output_reserve``). ``ledger``: ``build_ledger(...)``.
    ``complete``: the summariser; None never writes a checkpoint. ``store``/``session_id``/
    ``turn_id``: where a new checkpoint is appended (no store: it is used but not kept).
    ``provider``: whose replay state goes back (``to_messages``). ``calibration``: the session's
    factor. ``summary_window``: the summariser's window (default ``window``). ``force``: the
    provider reported an overflow: compact to ``FORCE_SHARE`` of the budget.
    """
    checkpoint, rest = apply_checkpoints(stored)
    groups = _groups(rest, provider)
    template = build([])
    fixed = fixed_tokens(template.system, template.tools)
    state = _State(groups=groups, head=None, head_tokens=0, fixed=fixed)
    if checkpoint is not None:
        state.pin(_head(ledger, checkpoint, groups, absorb_first=False))
    written = False

    def done() -> Fitted:
        messages = state.messages()
        request = build(messages)
        raw = input_tokens(request)
        total = calibrated(raw, output_reserve, calibration)
        return Fitted(
            request=request,
            messages=messages,
            estimate=total,
            raw_input=raw,
            window=window,
            compacted=state.head is not None or state.accounts > 0 or state.cut > 0,
            checkpoint_written=written,
            accounts=state.accounts,
            cut=state.cut,
            over=window is not None and total > window,
            checkpoint=checkpoint,
        )

    if window is None:
        return done()
    scale = max(calibration, 1e-6)
    budget_tokens = window * compact_at * (FORCE_SHARE if force else 1.0)
    limit = max(0, math.floor((budget_tokens - output_reserve) / scale))
    hard = max(0, math.floor((window - output_reserve) / scale))
    if state.raw <= limit:
        return done()

    await _shrink(state, ledger, limit, absorb_first=checkpoint is None)
    if state.raw > limit and complete is not None:
        made = await _checkpoint(
            state, checkpoint, complete, limit, summary_window=summary_window or window
        )
        if made is not None:
            checkpoint, groups = made
            if store is not None and session_id is not None:
                message_id = await store.add_message(session_id, "assistant", turn_id=turn_id or "checkpoint")
                await store.add_part(
                    message_id,
                    CHECKPOINT_PART,
                    {"text": checkpoint.text, "covers": checkpoint.covers, "messages": checkpoint.messages},
                )
            written = True
            state = _State(groups=groups, head=None, head_tokens=0, fixed=fixed, lines=state.lines)
            state.pin(_head(ledger, checkpoint, groups, absorb_first=False))
            if state.raw > limit:
                await _shrink(state, ledger, limit, absorb_first=False)
    if state.raw > hard:
        _cut_round(state, hard, _calls(state.groups))
    if state.raw > hard:
        _squeeze(state, hard)
    return done()


async def _shrink(state: _State, ledger: Ledger, limit: int, *, absorb_first: bool) -> None:
    """Stage 1, then the single-round cut, on the current state; pins the ledger."""
    if state.head is None:
        state.pin(_head(ledger, None, state.groups, absorb_first=absorb_first))
    calls = _calls(state.groups)
    _replace_results(state, limit, calls)
    if state.raw <= limit:
        return
    newest = _newest_round(state.groups)
    if newest is None:
        return
    gi, mi = newest
    round_tokens = state.groups[gi].tokens[mi] + sum(g.tokens[i] for g, i in _round_results(state.groups, newest))
    room = limit - state.fixed - state.head_tokens  # what the round may take when alone
    if round_tokens > room:
        # The newest round alone is over the budget: cut its results to fit with the rest, but
        # leave it at least half the room (older turns then go to a checkpoint instead).
        target = min(room, max(round_tokens - (state.raw - limit), room // 2))
        _cut_round(state, state.raw - (round_tokens - max(0, target)), calls)


# ---------------------------------------------------------------------------------------------
# The summary checkpoint
# ---------------------------------------------------------------------------------------------


def _render(message: Message, calls: dict[str, ToolCall], item_chars: int, cache: dict[str, str]) -> str:
    if message.role == "user":
        body = f"USER:\n{message.text}"
    elif message.role == "assistant":
        lines = ["ASSISTANT:"]
        if message.text:
            lines.append(message.text)
        lines += [f"-> called {c.name} {c.arguments}" for c in message.tool_calls]
        body = "\n".join(lines)
    else:
        what = _account_of(message, calls, cache)
        text = message.text
        if len(text) > item_chars:
            half = max(0, item_chars // 2)
            text = f"{text[:half]}\n[… {len(text) - 2 * half} characters left out …]\n{text[-half:]}"
        body = f"RESULT of {what}:\n{text}"
    if len(body) > item_chars * 2:
        body = body[: item_chars * 2] + "\n[… cut …]"
    return body


def _brief(message: Message, calls: dict[str, ToolCall], cache: dict[str, str]) -> str:
    """An item in one line: what the user said, what the agent said, what a call did."""
    if message.role == "user":
        return f"USER: {_short(message.text, 300)}"
    if message.role == "assistant":
        return f"ASSISTANT: {_short(message.text, 120)}" if message.text else ""
    return "DONE: " + _account_of(message, calls, cache)


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


def _fallback_summary(
    items_messages: Sequence[Message], calls: dict[str, ToolCall], previous: str, cache: dict[str, str], max_chars: int
) -> str:
    """A summary made without the model: the earlier summary, then the user's words and what was
    done, newest kept when it is too long for ``max_chars``."""
    header = "## Done (one-line accounts; the model could not write this summary)"
    room = max_chars - len(header) - (len(previous) + 2 if previous else 0) - 40
    lines: list[str] = []
    for message in reversed(items_messages):
        if message.role == "user":
            line = f"- user said: {_short(message.text, 200)}"
        elif message.role == "tool":
            line = "- " + _account_of(message, calls, cache)
        else:
            continue
        if room - len(line) - 1 < 0:
            lines.append("- (earlier items left out)")
            break
        room -= len(line) + 1
        lines.append(line)
    text = "\n".join([header, *reversed(lines)])
    return f"{previous}\n\n{text}" if previous else text


async def _checkpoint(
    state: _State,
    previous: Checkpoint | None,
    complete: Complete,
    limit: int,
    *,
    summary_window: int,
) -> tuple[Checkpoint, list[_Group]] | None:
    """Fold the older groups into a summary; returns the new checkpoint and the groups after it.

    The groups kept whole are the newest ones whose current cost fits ``TAIL_SHARE`` of the
    budget (at least the last one); None when that leaves nothing older to fold.
    """
    groups = state.groups
    if len(groups) < 2:
        return None
    room = max(0, int(limit * TAIL_SHARE) - state.fixed)
    kept, used = 0, 0
    for group in reversed(groups):
        if kept and used + group.total > room:
            break
        used += group.total
        kept += 1
    if kept >= len(groups):
        kept = len(groups) - 1
    covered, tail = groups[: len(groups) - kept], groups[len(groups) - kept :]
    # What is summarised: the full derived messages of the covered stored messages.
    covered_ids = {g.stored.id for g in covered}
    originals = [m for g in covered for m in g.original]
    calls = {call.id: call for m in originals for call in m.tool_calls}
    system = prompt("summary.txt")
    request_room = max(1, summary_window - SUMMARY_OUTPUT_RESERVE) * CHARS_PER_TOKEN - len(system) - 200
    item_chars = max(400, int(request_room * ITEM_SHARE))
    earlier = f"EARLIER SUMMARY:\n{previous.text}" if previous is not None else None
    # Full renderings only for the newest items that can fit; older ones start out brief.
    full = [""] * len(originals)
    used, split = len(earlier or ""), len(originals)
    for index in range(len(originals) - 1, -1, -1):
        rendered = _render(originals[index], calls, item_chars, state.lines)
        if used + len(rendered) > request_room:
            break
        full[index], used, split = rendered, used + len(rendered) + 2, index
    material = _Material(full=full, brief=[_brief(m, calls, state.lines) for m in originals], previous=earlier, split=split)
    while material.size() > request_room and material.shrink():
        pass  # what would not fit the summariser's window is given briefly, then left out
    text: str | None = None
    while not material.empty():
        try:
            text = (await complete(system, material.text() + "\n\nWrite the checkpoint summary now.")).strip()
            break
        except ContextOverflowError:
            if not material.shrink():
                break
        except ProviderError as exc:
            log.warning("summary checkpoint failed: %s", exc.message)
            break
    max_chars = max(200, int(limit * SUMMARY_SHARE) * CHARS_PER_TOKEN)
    if not text:
        text = _fallback_summary(originals, calls, previous.text if previous else "", state.lines, max_chars)
    if len(text) > max_chars:
        text = text[:max_chars].rstrip() + "\n[summary cut to fit the context window]"
    count = len(covered_ids) + (previous.messages if previous is not None else 0)
    checkpoint = Checkpoint(text=text, covers=covered[-1].stored.id, messages=count)
    return checkpoint, [g.fresh() for g in tail]
