"""todo: the agent's task list, shown to the user; each call replaces the whole list."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from totem_engine.api.events import Todo, TodoItem
from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.vocab.tools import ToolError

# The order counts and entries are reported in.
_STATUS_WORDS = {"in_progress": "in progress", "pending": "pending", "completed": "completed"}


class TodoInput(ToolInput):
    todos: list[TodoItem] = Field(
        description="The whole task list, in order; each entry {content, status: pending | in_progress | completed}."
    )


def count_line(todos: list[TodoItem]) -> str:
    """``"3 todos: 1 in progress, 2 pending"`` (statuses with no entry left out)."""
    counts = Counter(item.status for item in todos)
    noun = "todo" if len(todos) == 1 else "todos"
    detail = ", ".join(f"{counts[s]} {word}" for s, word in _STATUS_WORDS.items() if counts[s])
    return f"{len(todos)} {noun}: {detail}" if detail else f"{len(todos)} {noun}"


@dataclass
class TodoAction(Action):
    todos: list[TodoItem] = field(default_factory=list)

    async def apply(self, ctx: ToolContext) -> ToolResult:
        await ctx.publish(Todo(session_id=ctx.session_id, todos=self.todos))
        summary = count_line(self.todos)
        listing = [f"- [{item.status}] {item.content}" for item in self.todos]
        return ToolResult(
            output="\n".join([summary, *listing]),
            summary=summary,
            metadata={"todos": [item.model_dump() for item in self.todos]},
        )


class TodoTool(Tool):
    name = "todo"
    hook_name = "TodoWrite"
    surface = "core"
    can_change = False  # the session's list, not the project
    Input = TodoInput

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        # The list itself is pinned in the ledger (compaction), so the account need not repeat it.
        return "updated the todo list"

    async def prepare(self, args: TodoInput, ctx: ToolContext) -> Action:
        todos = [item.model_copy(update={"content": item.content.strip()}) for item in args.todos]
        blank = [str(n) for n, item in enumerate(todos, start=1) if not item.content]
        if blank:
            raise ToolError(f"Todo {', '.join(blank)} has no content; every entry needs a short description.")
        return TodoAction(title="Update the todo list", permission="todo", patterns=[], always_pattern="*", todos=todos)
