"""Code mode as a turn's shape (seed 003, "Code mode"): the ``ScriptPolicy`` of a model that
cannot call tools reliably, and ``wants_scripts``, which picks it.

The model is offered no tools. Taught by prompts/code_mode.txt, it answers with one fenced Python
block against ``import totem``; the scanner reads the block as a ``run_script`` call
(textcalls/fileblocks.py), the turn runs it like any call (tools/run_script.py: staged, asked
once, one change set), and what the script printed is the next user message (``as_written``). An
answer without a script ends the turn. A block that names a file is still that file's whole new
content, as in the small-model path.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from totem_engine.api import events as ev
from totem_engine.context import output_reserve
from totem_engine.prompt_files import prompt
from totem_engine.providers.capabilities import CapabilityRecord
from totem_engine.textcalls import as_written
from totem_engine.tools.base import Action, ToolContext, ToolResult
from totem_engine.turn.host import PolicyHost
from totem_engine.turn.policy import Afresh, AfterAnswer, Finish
from totem_engine.turn.round import Round
from totem_engine.turn.stream import FileBlocks
from totem_engine.vocab.tools import ToolCall, ToolSpec

CodeMode = Literal["auto", "always", "never"]
SCRIPT_TOOLS = frozenset({"run_script", "write"})  # what a script block and a file block are read as


def wants_scripts(code_mode: CodeMode, record: CapabilityRecord, *, small: bool) -> bool:
    """Whether a turn starts in code mode (config ``code_mode``): ``always``/``never`` say so;
    ``auto`` follows the evidence: the record says scripts worked for this model
    (``record.code_mode``), or its tool calls proved unreliable and it is not a small model, whose
    measured route stays the whole-file blocks (docs/decisions.md, "Code mode")."""
    if code_mode != "auto":
        return code_mode == "always"
    return record.code_mode or (not record.tools_reliable and not small)


class ScriptPolicy:
    """The ``TurnPolicy`` of a turn in code mode. ``small``: the model is a small one (its
    output capped at what its window keeps free, the short prompt); ``learn``: the first script
    that changes files is evidence that code mode serves this model (``done_after``)."""

    scripts = True
    whole_files = False

    def __init__(self, turn: PolicyHost, *, small: bool, learn: bool = False):
        self.turn = turn
        self.short_prompt = small
        self.small = small
        self.learn = learn

    async def prepare(self) -> None:
        return None

    def max_tokens(self, record: CapabilityRecord) -> int | None:
        return output_reserve(record.max_output_tokens, record.context_window) if self.small else None

    def history(self, history: list) -> list:
        """Its scripts replayed as the blocks it wrote, what they printed as user messages."""
        return as_written(history)

    def tool_prompt(self, specs: tuple[ToolSpec, ...]) -> str:
        return prompt("code_mode.txt")

    def file_blocks(self) -> FileBlocks:
        return FileBlocks(enabled=True, scripts=True)

    async def mend(self, action: Action, ctx: ToolContext, result: ToolResult) -> None:
        return None

    async def after_answer(self, reply: str, message_id: str, *, changed: bool, malformed: bool) -> AfterAnswer:
        return Finish()

    async def done_after(self, calls: list[ToolCall], round_: Round, *, changed: bool) -> bool:
        """Never done by itself; a script that changed files teaches the record (``learn``), so the
        model's next requests start in code mode."""
        if self.learn and round_.changed and any(call.name == "run_script" for call in calls):
            self.learn = False
            await self.turn.remember(dataclasses.replace(self.turn.record, code_mode=True, evidence=True))
        return False

    async def after_stall(self, message_id: str, *, changed: bool) -> None:
        return None

    async def afresh(self, stop: ev.StopReason, *, changed: bool) -> Afresh | None:
        return None
