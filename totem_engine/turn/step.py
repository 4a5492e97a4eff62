"""One step of a turn: one model call streamed into its assistant message, tried again when it
fails.

A try that fails with a transient ``ProviderError`` is discarded (its parts kept in the store,
marked discarded) and tried again after retry.py's wait; a reply that is all reasoning is asked
again with the least reasoning the provider allows (guards.py ``ReasoningRetry``), without using
up those tries. The step's message is the same across its tries, so its number stays stable.
``Steps`` also holds what the turn's end needs of its steps: the parts streaming now, the text of
the finished ones and the model that answered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import anyio

from totem_engine.api import events as ev
from totem_engine.providers.base import Provider
from totem_engine.providers.errors import ContextOverflowError, ProviderError
from totem_engine.retry import retry_delay, should_retry
from totem_engine.store import DeferredWrites, Store
from totem_engine.textcalls import TextCallStats
from totem_engine.turn.guards import ReasoningRetry, least_reasoning
from totem_engine.turn.stream import FileBlocks, StepStream, StreamedPart, flush_while_streaming
from totem_engine.vocab.chat import ChatRequest, finish_kind
from totem_engine.vocab.tools import ToolCall, ToolSpec

# What the turn learns from a step's reply (its calls, its text, its text calls) before the step ends.
Learn = Callable[[list[ToolCall], str, TextCallStats], Awaitable[None]]


@dataclass(frozen=True)
class StepOutcome:
    calls: list[ToolCall]
    message_id: str
    usage: ev.Usage
    text: str = ""
    malformed: bool = False  # a call written as text could not be read
    guard: str | None = None  # a guard on the reply itself ended the run (repetition, all reasoning)


class Steps:
    """The steps of one turn (of ``model``, "provider/model id"), each into the session through
    ``writes``; ``retry_max_wait``: the longest wait before a try again (``TurnOptions``)."""

    def __init__(
        self, *, store: Store, writes: DeferredWrites, session_id: str, model: str, retry_max_wait: float,
        emit: Callable[[ev.Event], Awaitable[None]], unique_call: Callable[[ToolCall], ToolCall],
    ):
        self.store = store
        self.writes = writes
        self.session_id = session_id
        self.model = model
        self.retry_max_wait = retry_max_wait
        self.emit = emit
        self.unique_call = unique_call
        self.answered_by = model  # the model the provider says answered the last step
        self.streaming: list[StreamedPart] = []  # the parts of the step streaming now
        self.answers: list[StreamedPart] = []  # the text parts of finished steps

    async def run(
        self, provider: Provider, request: ChatRequest, step: int, message_id: str, *, specs: tuple[ToolSpec, ...],
        think_tags: bool, blocks: Callable[[], FileBlocks], learn: Learn,
    ) -> StepOutcome:
        """One step into its assistant message (kept across retries; a retried try's parts are
        marked discarded). ``blocks`` is asked at each try, as the turn's policy says then."""
        all_reasoning = ReasoningRetry(least=least_reasoning(provider))
        attempt = 0
        while True:
            attempt += 1
            stream = StepStream(self.writes, message_id, session_id=self.session_id, emit=self.emit, unique_call=self.unique_call)
            self.streaming = stream.parts
            failure: ProviderError | None = None
            async with anyio.create_task_group() as group:
                group.start_soon(flush_while_streaming, self.streaming, self.writes)
                try:
                    await stream.read(provider, request, specs=specs, think_tags=think_tags, blocks=blocks())
                except ProviderError as exc:
                    failure = exc  # handled outside the group, which would wrap it in an ExceptionGroup
                finally:
                    group.cancel_scope.cancel()
            if stream.model:
                self.answered_by = f"{self.model.split('/', 1)[0]}/{stream.model}"
            await stream.flush()
            if failure is not None:
                if isinstance(failure, ContextOverflowError):
                    await self.store.discard_message_parts(message_id)
                    await self.emit(ev.StepDiscarded(session_id=self.session_id, step=step, reason=failure.message))
                    self.streaming = []
                if not should_retry(failure, attempt, tool_call_seen=bool(stream.calls)):
                    raise failure
                await self._discard(message_id, step, failure, attempt)
                continue
            text, calls = stream.text, stream.calls
            guard = await stream.cut_repetition()
            retry = None if guard else all_reasoning.after_reply(text.text, stream.reasoning.text, calls)
            if retry is not None and retry.retry:
                await self._retry_with_less_reasoning(message_id, step, retry.notice)
                request = replace(request, reasoning=retry.level)
                attempt -= 1  # not a failure: the provider-error retries keep their budget
                continue
            if retry is not None:
                guard = retry.notice
            if guard:
                calls = []
            self.answers.append(text)
            self.streaming = []
            await learn(calls, text.text, stream.text_calls)
            await self.writes.add_part(
                message_id, "step", {"step": step, "model": self.answered_by, "usage": stream.usage.model_dump(by_alias=True)}
            )
            await self.emit(ev.StepEnd(
                session_id=self.session_id, step=step, model=self.answered_by, usage=stream.usage,
                finish=finish_kind(stream.finish),
            ))
            return StepOutcome(
                calls=calls, message_id=message_id, usage=stream.usage, guard=guard, text=text.text,
                malformed=stream.text_calls.malformed > 0,
            )

    async def _retry_with_less_reasoning(self, message_id: str, step: int, notice: str) -> None:
        """Drop a reply that was all reasoning (kept in the store, marked discarded) and say so."""
        self.streaming = []
        await self.store.discard_message_parts(message_id)
        await self.emit(ev.StepDiscarded(session_id=self.session_id, step=step, reason=notice))
        await self.emit(ev.Notice(session_id=self.session_id, level="info", message=notice))

    async def _discard(self, message_id: str, step: int, failure: ProviderError, attempt: int) -> None:
        """Drop a failed try's parts (marked, kept in the store), tell the front end, wait."""
        self.streaming = []
        await self.store.discard_message_parts(message_id)
        await self.emit(ev.StepDiscarded(session_id=self.session_id, step=step, reason=failure.message))
        wait = retry_delay(failure, attempt, self.retry_max_wait)
        await self.emit(
            ev.Notice(
                session_id=self.session_id,
                level="warning",
                message=f"{type(failure).__name__}: {failure.message}. Retrying in {wait:.1f} s (try {attempt + 1}).",
            )
        )
        await anyio.sleep(wait)
