"""ask: put a question to the user and wait for the answer."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.vocab.tools import ToolError

NOBODY_ANSWERED = (
    "The user could not be asked: nobody is there to answer. Proceed with your best judgement "
    "and say what you assumed, or stop and explain what you need to know."
)


class AskInput(ToolInput):
    question: str = Field(description="The question, complete in itself.")
    options: list[str] | None = Field(
        None, description="Suggested answers to choose from; the user may still answer freely."
    )


@dataclass
class AskAction(Action):
    question: str = ""
    options: list[str] = field(default_factory=list)

    async def apply(self, ctx: ToolContext) -> ToolResult:
        answer = await ctx.question(self.question, self.options)
        if answer is None:
            return ToolResult(output=NOBODY_ANSWERED, summary="nobody could be asked", metadata={"answer": None})
        first_line = answer.strip().splitlines()[0] if answer.strip() else "(empty answer)"
        return ToolResult(output=f"The user answered: {answer}", summary=first_line[:80], metadata={"answer": answer})


class AskTool(Tool):
    name = "ask"
    kept_on_compaction = True
    can_change = False  # a question to the user
    Input = AskInput

    async def prepare(self, args: AskInput, ctx: ToolContext) -> Action:
        question = args.question.strip()
        if not question:
            raise ToolError("The question is empty.")
        options = [o.strip() for o in args.options or [] if o.strip()]
        return AskAction(
            title=f"Ask: {question}", permission="ask", patterns=[], always_pattern="*",
            question=question, options=options,
        )
