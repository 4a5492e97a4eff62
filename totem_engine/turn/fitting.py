"""Each step's request, kept inside the model's window through the compaction package's public
functions (``fit``, ``build_ledger``, ``ledger_present``, ``completer``): estimated, compacted when
over budget (tool results to one-line accounts, then a summary checkpoint written by the
session's model or ``small_model``), with the pinned ledger checked and the estimate reported.
The turn's derived history (``DerivedHistory``) is kept here from step to step, so each stored
message is converted once, not once per step; once a step has been answered, the images it was
the first to carry are marked captioned (``images_sent``), so later requests carry only captions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from totem_engine.api import events as ev
from totem_engine.compaction import (
    Complete,
    DerivedHistory,
    Fitted,
    completer,
    fit,
    ledger_present,
)
from totem_engine.config import Config, ConfigError
from totem_engine.context import breakdown, output_reserve
from totem_engine.images import CAPTIONED
from totem_engine.providers.base import Provider
from totem_engine.session_state import SessionState
from totem_engine.store import Store
from totem_engine.tools.base import Tool
from totem_engine.providers.capabilities import CapabilityRecord
from totem_engine.turn.policy import TurnPolicy
from totem_engine.vocab.chat import ChatRequest
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolSpec


class Fitter:
    """The requests of one turn's steps to ``model_id`` on ``provider``. ``build`` makes a step's
    request from its history; ``window`` and ``max_output_tokens`` are the model's (None: not known);
    ``vision``: the model sees images (its capability record); ``tools`` account for their results
    when compaction replaces them; ``before_summary`` runs before each summary is asked for (the
    PreCompact hooks)."""

    def __init__(
        self,
        *,
        provider: Provider,
        model_id: str,
        build: Callable[[list], ChatRequest],
        window: int | None,
        max_output_tokens: int | None,
        tools: Mapping[str, Tool],
        config: Config,
        provider_for: Callable[[str], Provider],
        store: Store,
        session_id: str,
        turn_id: str,
        emit: Callable[[ev.Event], Awaitable[None]],
        vision: bool = False,
        before_summary: Callable[[], Awaitable[None]] | None = None,
    ):
        self.provider, self.model_id, self.build = provider, model_id, build
        self.max_output_tokens = max_output_tokens
        self.tools = tools
        self.window = window
        self.reserve = output_reserve(max_output_tokens, window)
        self.config, self.store, self.emit = config, store, emit
        self.session_id, self.turn_id = session_id, turn_id
        self.complete = _after(before_summary, summariser(config, provider, model_id, provider_for))
        self.history = DerivedHistory(provider.name, vision=vision)  # this session's, for this provider and model

    def overflowed_at(self, estimate: int) -> None:
        """The provider refused a request of about ``estimate`` tokens: with no window known, that
        size is the window from now on (it is at least too much)."""
        if self.window is None:
            self.window = estimate
            self.reserve = output_reserve(self.max_output_tokens, self.window)

    async def fit(self, stored: list, state: SessionState, *, force: bool = False) -> Fitted:
        """The request for the ``stored`` messages of the session whose ``state`` this is (its todos
        pinned, its calibration applied); ``force``: compact even within budget."""
        self.history.update(stored)
        ledger = self.history.ledger(state.todos)
        fitted = await fit(
            stored,
            build=self.build,
            window=self.window,
            output_reserve=self.reserve,
            ledger=ledger,
            tools=self.tools,
            complete=self.complete,
            store=self.store,
            session_id=self.session_id,
            turn_id=self.turn_id,
            provider=self.provider.name,
            calibration=state.calibration.factor,
            compact_at=self.config.compact_at,
            force=force,
            history=self.history,
        )
        if fitted.compacted and not ledger_present(fitted.messages, ledger):
            await self.emit(ev.Notice(session_id=self.session_id, level="warning", message="Compaction lost part of the pinned ledger."))
        await self.emit(self.context_event(fitted, state.calibration.factor))
        return fitted

    def context_event(self, fitted: Fitted, calibration: float) -> ev.ContextEstimate:
        """The ``context`` event of ``fitted``: its estimate, split by what fills the window."""
        request = fitted.request
        system = self.history.fixed(request.system, request.tools)
        shares = breakdown(request, self.reserve, calibration, self.history.tokens, system)
        return ev.ContextEstimate(
            session_id=self.session_id,
            estimate=fitted.estimate,
            window=self.window,
            breakdown=ev.ContextBreakdown(
                system=shares.system,
                history=shares.history,
                tool_results=shares.tool_results,
                attachments=shares.attachments,
                output=shares.output,
            ),
        )


    async def images_sent(self) -> None:
        """A step was answered with the request last fitted: the images still fresh in it (sent
        to a model that sees images, captioned for one that does not) are captioned from now on,
        in the store, so every later request (and another turn's, or another model's) carries
        only their captions."""
        for part_id in self.history.fresh_images():
            await self.store.update_part(part_id, status=CAPTIONED)


def summariser(config: Config, provider: Provider, model_id: str, provider_for: Callable[[str], Provider]) -> Complete:
    """Who writes a session's summaries: ``small_model`` when set and buildable, else the
    session's own model (``model_id`` on ``provider``)."""
    small = config.small_model
    if small:
        name, small_id = small.split("/", 1)
        try:
            return completer(provider_for(name), small_id)
        except ConfigError:
            pass  # a small model that cannot be built leaves the session's own
    return completer(provider, model_id)


def step_request(
    policy: TurnPolicy, *, model_id: str, system: str, history: list, specs: tuple[ToolSpec, ...], record: CapabilityRecord,
    text_calls: Callable[[], bool], reasoning: str | None, temperature: float | None, seed: int | None,
    reminder: str | None = None,
) -> ChatRequest:
    """A step's request, as the policy shapes it (its output cap, its history). A model that
    does not call tools natively (``text_calls``: asked once the history is shaped) is taught
    the text form instead, which the stream reads back. ``reminder``: the Total.js conventions
    (seed 001) after the history, in this request only, never stored: last, so the history
    before it stays a cached prefix, and nearest to the answer."""
    messages = tuple(policy.history(history))
    common = dict(
        model=model_id,
        messages=with_reminder(messages, reminder) if reminder else messages,
        reasoning=reasoning,
        temperature=temperature,
        seed=seed,
        max_tokens=policy.max_tokens(record),
    )
    if not text_calls():
        return ChatRequest(system=system, tools=specs, **common)
    teach = policy.tool_prompt(specs)
    return ChatRequest(system=f"{system}\n\n{teach}" if specs else system, **common)


def _after(first: Callable[[], Awaitable[None]] | None, complete: Complete) -> Complete:
    """``complete``, with ``first`` awaited before each call."""
    if first is None:
        return complete

    async def completed(system: str, material: str) -> str:
        await first()
        return await complete(system, material)

    return completed


def with_reminder(messages: tuple[Message, ...], reminder: str) -> tuple[Message, ...]:
    """``messages`` ending with ``reminder``: a user message of its own after a tool result or an
    answer, joined to a last user message (the turn's request, a small model's replayed results),
    as chat templates expect roles to alternate (``as_written`` joins them for the same reason)."""
    if messages and messages[-1].role == "user":
        last = messages[-1]
        return (*messages[:-1], last.with_text("\n\n".join(t for t in (last.text, reminder) if t)))
    return (*messages, Message(role="user", text=reminder))
