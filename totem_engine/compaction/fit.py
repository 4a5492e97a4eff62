"""``fit``: the request for the next step, inside the model's window (the stages are told in the
package docstring, ``totem_engine/compaction/__init__.py``).

The derived messages come from a ``DerivedHistory`` (derived.py), which the caller keeps from
step to step so that each stored message is converted once: within budget, the request is that
history's messages as they are (after a checkpoint's pinned head), counted by prefix sums. Over
budget, the work is done on a ``_State``: the derived messages of each stored message (a
``_Group``) with their current token costs, and the pinned head message once the list is
compacted. Stages replace messages in it (``_State.set`` keeps the total up to date); nothing is
written back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from totem_engine.compaction.accounts import ACCOUNT_PREFIX, AccountedTool, Accounts
from totem_engine.compaction.budgets import (
    CHARS_PER_TOKEN, DEFAULT_COMPACT_AT, SUMMARY_SHARE, TAIL_SHARE, Limits, limits,
)
from totem_engine.compaction.checkpoints import Checkpoint, keep_checkpoint
from totem_engine.compaction.derived import DerivedHistory
from totem_engine.compaction.ledger import Ledger
from totem_engine.compaction.summary import Complete, summarise
from totem_engine.context import calibrated, message_tokens
from totem_engine.vocab.chat import ChatRequest
from totem_engine.vocab.messages import Message
from totem_engine.store import Store, StoredMessage

SQUEEZE_FLOOR = 200  # characters: a message this short is never cut by the last resort
SQUEEZE_SLACK = 40  # tokens: left for the note a cut message ends with


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


@dataclass(slots=True)
class _Group:
    """The derived messages of one stored message, with their current (compacted) costs."""

    stored: StoredMessage
    messages: list[Message]
    tokens: list[int] = field(default_factory=list)
    original: tuple[Message, ...] = ()  # as derived, before any compaction

    def __post_init__(self) -> None:
        if not self.tokens:
            self.tokens = [message_tokens(m) for m in self.messages]
        if not self.original:
            self.original = tuple(self.messages)

    def fresh(self) -> "_Group":
        return _Group(self.stored, list(self.original))

    @property
    def total(self) -> int:
        return sum(self.tokens)


@dataclass
class _State:
    groups: list[_Group]
    fixed: int  # tokens of the system prompt and the tools
    head: Message | None = None
    head_tokens: int = 0
    accounts: int = 0
    cut: int = 0
    body: int = 0  # tokens of the groups' messages, kept up to date by ``set``

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


async def fit(
    stored: Sequence[StoredMessage],
    *,
    build: Callable[[list[Message]], ChatRequest],
    window: int | None,
    output_reserve: int,
    ledger: Ledger,
    tools: Mapping[str, AccountedTool],
    complete: Complete | None = None,
    store: Store | None = None,
    session_id: str | None = None,
    turn_id: str = "",
    provider: str | None = None,
    calibration: float = 1.0,
    compact_at: float = DEFAULT_COMPACT_AT,
    summary_window: int | None = None,
    force: bool = False,
    history: DerivedHistory | None = None,
) -> Fitted:
    """The request for the next step, inside ``window``.

    ``stored``: the session's messages (``store.messages(session_id)``). ``build(messages)``: the
    loop's request for a message list (system prompt, tools, model). ``output_reserve``: tokens
    kept for the answer (``context.output_reserve``). ``ledger``: ``build_ledger(...)``.
    ``tools``: the run's tools by name; each accounts for its own results (``Tool.account``).
    ``complete``: the summariser; None never writes a checkpoint. ``store``/``session_id``/
    ``turn_id``: where a new checkpoint is appended (no store: it is used but not kept).
    ``provider``: whose replay state goes back (``to_messages``). ``calibration``: the session's
    factor. ``summary_window``: the summariser's window (default ``window``). ``force``: the
    provider reported an overflow: compact to ``FORCE_SHARE`` of the budget. ``history``: the
    session's derived history kept by the caller from step to step (default: a new one, for
    ``provider``); it is updated with ``stored`` here.
    """
    if history is None:
        history = DerivedHistory(provider)
    history.update(stored)
    checkpoint, start = history.checkpoint()
    template = build([])
    fixed = history.fixed(template.system, template.tools)
    head = _head(ledger, checkpoint, [], absorb_first=False) if checkpoint is not None else None
    raw = fixed + (message_tokens(head) if head is not None else 0) + history.tokens_from(start)
    if window is not None:
        bounds = limits(window, output_reserve, calibration=calibration, compact_at=compact_at, force=force)
        if raw > bounds.budget:
            return await _compacted(
                history, start, checkpoint, head, fixed, bounds,
                build=build, window=window, output_reserve=output_reserve, ledger=ledger, tools=tools,
                complete=complete, store=store, session_id=session_id, turn_id=turn_id,
                calibration=calibration, summary_window=summary_window,
            )
    messages = ([head] if head is not None else []) + history.messages_from(start)
    return _fitted(history, messages, build, window, output_reserve, calibration, checkpoint=checkpoint,
                   compacted=head is not None, body=raw - fixed)


async def _compacted(
    history: DerivedHistory, start: int, checkpoint: Checkpoint | None, head: Message | None, fixed: int,
    bounds: Limits, *, build: Callable[[list[Message]], ChatRequest], window: int, output_reserve: int,
    ledger: Ledger, tools: Mapping[str, AccountedTool], complete: Complete | None, store: Store | None,
    session_id: str | None, turn_id: str, calibration: float, summary_window: int | None,
) -> Fitted:
    """The stages on a state over budget; a new checkpoint, when one is written, is kept."""
    groups = [_Group(stored, list(messages), list(tokens), messages) for stored, messages, tokens in history.groups_from(start)]
    state = _State(groups=groups, fixed=fixed)
    if head is not None:
        state.pin(head)
    run = _Run(
        ledger=ledger,
        accounts=Accounts(tools, (m for g in groups for m in g.original), history.stored_from(start)),
        complete=complete,
        summary_window=summary_window or window or 0,
    )
    written = False
    state, made = await run.compact(state, checkpoint, bounds)
    if made is not None:
        checkpoint, written = made, True
        if store is not None and session_id is not None:
            await keep_checkpoint(store, session_id, turn_id, made)
    return _fitted(
        history, state.messages(), build, window, output_reserve, calibration, checkpoint=checkpoint,
        compacted=state.head is not None or state.accounts > 0 or state.cut > 0, written=written,
        accounts=state.accounts, cut=state.cut,
    )


def _fitted(
    history: DerivedHistory, messages: list[Message], build: Callable[[list[Message]], ChatRequest],
    window: int | None, output_reserve: int, calibration: float, *, checkpoint: Checkpoint | None,
    compacted: bool, written: bool = False, accounts: int = 0, cut: int = 0, body: int | None = None,
) -> Fitted:
    """``body``: the tokens of ``messages``, when known."""
    request = build(messages)
    # ``context.input_tokens(request)``, with the tokens of each message the history derived looked up.
    if body is None:
        body = sum(history.tokens(m) for m in messages)
    raw = history.fixed(request.system, request.tools) + history.tokens_of(request.messages, messages, body)
    total = calibrated(raw, output_reserve, calibration)
    return Fitted(
        request=request,
        messages=messages,
        estimate=total,
        raw_input=raw,
        window=window,
        compacted=compacted,
        checkpoint_written=written,
        accounts=accounts,
        cut=cut,
        over=window is not None and total > window,
        checkpoint=checkpoint,
    )


@dataclass
class _Run:
    """What the stages of one ``fit`` share."""

    ledger: Ledger
    accounts: Accounts
    complete: Complete | None
    summary_window: int

    async def compact(
        self, state: _State, checkpoint: Checkpoint | None, bounds: Limits
    ) -> tuple[_State, Checkpoint | None]:
        """The stages in order, on a state over ``bounds.budget``: accounts (and the newest
        round cut), a new checkpoint, then what the window itself forces. Returns the final state
        and the checkpoint written, if one was."""
        limit = bounds.budget
        self.shrink(state, limit, absorb_first=checkpoint is None)
        made = None
        if state.raw > limit and self.complete is not None:
            folded = await self.fold(state, checkpoint, limit)
            if folded is not None:
                made, groups = folded
                state = _State(groups=groups, fixed=state.fixed)
                state.pin(_head(self.ledger, made, groups, absorb_first=False))
                if state.raw > limit:
                    self.shrink(state, limit, absorb_first=False)
        if state.raw > bounds.hard:
            _cut_round(state, bounds.hard, self.accounts)
        if state.raw > bounds.hard:
            _squeeze(state, bounds.hard)
        return state, made

    def shrink(self, state: _State, limit: int, *, absorb_first: bool) -> None:
        """Stage 1, then the single-round cut, on the current state; pins the ledger."""
        if state.head is None:
            state.pin(_head(self.ledger, None, state.groups, absorb_first=absorb_first))
        _replace_results(state, limit, self.accounts)
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
            _cut_round(state, state.raw - (round_tokens - max(0, target)), self.accounts)

    async def fold(
        self, state: _State, previous: Checkpoint | None, limit: int
    ) -> tuple[Checkpoint, list[_Group]] | None:
        """Fold the older groups into a summary; returns the new checkpoint and the groups after
        it, or None when nothing older than the kept tail is left to fold."""
        assert self.complete is not None
        kept = _tail_size(state, limit)
        if kept is None:
            return None
        groups = state.groups
        covered, tail = groups[: len(groups) - kept], groups[len(groups) - kept :]
        # What is summarised: the full derived messages of the covered stored messages.
        originals = [m for g in covered for m in g.original]
        text = await summarise(
            originals,
            previous.text if previous is not None else None,
            self.complete,
            self.accounts,
            summary_window=self.summary_window,
            max_chars=max(200, int(limit * SUMMARY_SHARE) * CHARS_PER_TOKEN),
        )
        count = len({g.stored.id for g in covered}) + (previous.messages if previous is not None else 0)
        return Checkpoint(text=text, covers=covered[-1].stored.id, messages=count), [g.fresh() for g in tail]


def _tail_size(state: _State, limit: int) -> int | None:
    """How many of the newest groups a checkpoint keeps whole: those whose current cost fits
    ``TAIL_SHARE`` of the budget (at least the last one, never all); None with fewer than two."""
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
    return min(kept, len(groups) - 1)


def _head(ledger: Ledger, checkpoint: Checkpoint | None, groups: list[_Group], *, absorb_first: bool) -> Message:
    """The pinned message. With ``absorb_first`` (``groups`` start at the session's first
    message), the first request's own message is taken out: the ledger carries it verbatim."""
    parts = [ledger.render()]
    if checkpoint is not None:
        parts.append(checkpoint.replayed())
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


def _replace_results(state: _State, limit: int, accounts: Accounts) -> None:
    """Stage 1: oldest results first, by their one-line accounts, until ``state.raw <= limit``."""
    newest = _newest_round(state.groups)
    protected = {(id(g), i) for g, i in _round_results(state.groups, newest)} if newest else set()
    for group in state.groups:
        for index, message in enumerate(group.messages):
            if state.raw <= limit:
                return
            if message.role != "tool" or (id(group), index) in protected or accounts.kept(message):
                continue
            if message.text.startswith(ACCOUNT_PREFIX):
                continue
            line = ACCOUNT_PREFIX + accounts.line(message)
            if len(line) >= len(message.text) and not message.images:
                continue
            state.set(group, index, message.with_text(line, images=()))  # the account stands for all of it
            state.accounts += 1


def _cut_round(state: _State, limit: int, accounts: Accounts) -> None:
    """Cut the newest round's results (largest share first) so that ``state.raw <= limit``."""
    newest = _newest_round(state.groups)
    if newest is None:
        return
    results = [(g, i) for g, i in _round_results(state.groups, newest) if g.messages[i].text]
    over = state.raw - limit
    if not results or over <= 0:
        return
    current = sum(g.tokens[i] for g, i in results)
    shares = _water_fill([g.tokens[i] for g, i in results], max(0, current - over))
    for (group, index), share in zip(results, shares):
        message = group.messages[index]
        if group.tokens[index] <= share:
            continue
        chars = max(0, (share - message_tokens(message.with_text(""))) * CHARS_PER_TOKEN)
        state.set(group, index, message.with_text(accounts.cut(message, chars)))
        state.cut += 1


def _water_fill(sizes: list[int], room: int) -> list[int]:
    """Each size's share of ``room``: small ones stay whole, the rest share what is left equally."""
    share = [0] * len(sizes)
    left, count = room, len(sizes)
    for size, n in sorted((size, n) for n, size in enumerate(sizes)):
        fair = left // count if count else 0
        share[n] = min(size, fair)
        left -= share[n]
        count -= 1
    return share


def _squeeze(state: _State, limit: int) -> None:
    """Last resort: cut the largest messages until ``state.raw <= limit`` (or nothing is left to cut)."""
    while state.raw > limit:
        largest = _largest(state)
        head_big = state.head is not None and len(state.head.text) > SQUEEZE_FLOOR
        if largest is None and not head_big:
            return
        over = state.raw - limit
        if largest is not None and (not head_big or largest[0] >= state.head_tokens):
            _cut_message(state, largest[1], largest[2], over)
        elif not _cut_head(state, over):
            return
        state.cut += 1


def _largest(state: _State) -> tuple[int, _Group, int] | None:
    """(tokens, group, index) of the costliest message long enough to cut."""
    candidates = [
        (g.tokens[i], g, i) for g in state.groups for i in range(len(g.messages)) if len(g.messages[i].text) > SQUEEZE_FLOOR
    ]
    return max(candidates, key=lambda c: c[0]) if candidates else None


def _cut_message(state: _State, group: _Group, index: int, over: int) -> None:
    """Cut one message by ``over`` tokens (and the note), or to the note alone."""
    message = group.messages[index]
    note = f"[Cut to fit the context window: {len(message.text)} characters in full.]"
    keep = max(0, (group.tokens[index] - over - SQUEEZE_SLACK) * CHARS_PER_TOKEN)
    text = message.text[:keep].rstrip() + "\n" + note
    state.set(group, index, message.with_text(text if len(text) < len(message.text) else note))


def _cut_head(state: _State, over: int) -> bool:
    """Cut the pinned head by ``over`` tokens; False when that would not make it shorter."""
    assert state.head is not None
    keep = max(0, (state.head_tokens - over - SQUEEZE_SLACK) * CHARS_PER_TOKEN)
    text = state.head.text[:keep].rstrip() + "\n[Cut to fit the context window.]"
    if len(text) >= len(state.head.text):
        return False
    state.head = state.head.with_text(text)
    state.head_tokens = message_tokens(state.head)
    return True
