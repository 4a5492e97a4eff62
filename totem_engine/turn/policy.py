"""What a turn does for the kind of model it talks to: the ``TurnPolicy`` protocol and the
``DefaultPolicy``. small.py holds the small-model one, scripts.py code mode's, caught.py the
default one that catches a model describing its change instead of making it.

The turn holds one policy (``Turn.policy``) and asks it at each point where the kinds differ: the
request (its output cap, its history, how text calls are taught, how file blocks are read), a
changed file's mending, and what follows an answer, a round or an attempt. Switching the shape
of a turn midway is one assignment of ``Turn.policy``; everything reads it when it is needed.

What follows an answer and an attempt is a decision the policy returns and the loop acts on
(``Finish``, ``AskAgain``, ``SwitchToScripts``; ``Afresh``), as opencode's processor returns
"compact" | "stop" | "continue": the policy needs no way back into the turn to switch it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from totem_engine.api import events as ev
from totem_engine.providers.capabilities import CapabilityRecord
from totem_engine.textcalls import tool_prompt
from totem_engine.tools.base import Action, ToolContext, ToolResult
from totem_engine.turn.round import Round
from totem_engine.turn.stream import FileBlocks
from totem_engine.vocab.tools import ToolCall, ToolSpec


@dataclass(frozen=True)
class Finish:
    """The answer ends the turn."""


@dataclass(frozen=True)
class AskAgain:
    """The model is asked again: the policy has stored what it is asked; the turn takes another step."""


@dataclass(frozen=True)
class SwitchToScripts:
    """The model described the change the request asks for instead of making it (in message
    ``message_id``): the rest of the request in code mode, ``files`` (the ``write`` calls of the
    whole files its answer held) applied first."""

    message_id: str
    files: tuple[ToolCall, ...]


AfterAnswer = Finish | AskAgain | SwitchToScripts


@dataclass(frozen=True)
class Afresh:
    """The request tried again from its start, sampled at ``temperature`` at least with ``seed``
    (the same request at the same temperature gets the same answer); ``notice`` says why."""

    temperature: float
    seed: int
    notice: str


class TurnPolicy(Protocol):
    short_prompt: bool  # the short system prompt (prompt.py ``small``)
    whole_files: bool  # the model writes whole files (ToolContext.whole_files)
    scripts: bool  # the model is offered no tools and writes scripts (code mode, scripts.py)

    async def prepare(self) -> None:
        """Before the turn's first step (its record, tools and specs known)."""

    def max_tokens(self, record: CapabilityRecord) -> int | None:
        """The cap on a step's output, in tokens; None: the provider's own."""

    def history(self, history: list) -> list:
        """The step's messages as the model is shown them."""

    def tool_prompt(self, specs: tuple[ToolSpec, ...]) -> str:
        """How the tools are taught when the model writes its calls as text."""

    def file_blocks(self) -> FileBlocks:
        """How the scanner reads a fenced block naming a file."""

    async def mend(self, action: Action, ctx: ToolContext, result: ToolResult) -> None:
        """After ``action`` changed files without error, inside its change set: mend what the model
        is known to get wrong, said in ``result``."""

    async def after_answer(self, reply: str, message_id: str, *, changed: bool, malformed: bool) -> AfterAnswer:
        """After an answer without calls: whether the turn ends, or the model is asked again, or
        it goes on in code mode (``changed``: the attempt changed a file; ``malformed``: a text
        call did not parse)."""

    async def done_after(self, calls: list[ToolCall], round_: Round, *, changed: bool) -> bool:
        """After the round of ``calls`` ran (a guard may have stopped it): whether the turn is done."""

    async def after_stall(self, message_id: str, *, changed: bool) -> None:
        """After a round that brought nothing new and no guard stopped."""

    async def afresh(self, stop: ev.StopReason, *, changed: bool) -> Afresh | None:
        """After an attempt ended ``stop``: how the request is tried again from its start; None:
        the attempt's end is the turn's."""


class DefaultPolicy:
    """A capable model: native or plain text calls, edits, no asking again."""

    short_prompt = False
    whole_files = False
    scripts = False

    async def prepare(self) -> None:
        return None

    def max_tokens(self, record: CapabilityRecord) -> int | None:
        return None

    def history(self, history: list) -> list:
        return history

    def tool_prompt(self, specs: tuple[ToolSpec, ...]) -> str:
        return tool_prompt(specs)

    def file_blocks(self) -> FileBlocks:
        return FileBlocks()

    async def mend(self, action: Action, ctx: ToolContext, result: ToolResult) -> None:
        return None

    async def after_answer(self, reply: str, message_id: str, *, changed: bool, malformed: bool) -> AfterAnswer:
        return Finish()

    async def done_after(self, calls: list[ToolCall], round_: Round, *, changed: bool) -> bool:
        return False

    async def after_stall(self, message_id: str, *, changed: bool) -> None:
        return None

    async def afresh(self, stop: ev.StopReason, *, changed: bool) -> Afresh | None:
        return None
