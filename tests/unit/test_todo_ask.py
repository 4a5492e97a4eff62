"""The todo and ask tools driven directly, with the front end's callables replaced by recorders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from totem_engine.api.events import Todo
from totem_engine.tools.ask import AskTool
from totem_engine.tools.base import ToolContext, ToolResult, parse_arguments
from totem_engine.tools.todo import TodoTool
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import DiskWorkspace


@pytest.fixture
def published() -> list[Any]:
    return []


@pytest.fixture
def asked() -> list[tuple[str, list[str]]]:
    return []


def make_ctx(root: Path, published: list[Any], asked: list, answer: str | None) -> ToolContext:
    async def publish(event: Any) -> None:
        published.append(event)

    async def question(text: str, options: list[str]) -> str | None:
        asked.append((text, options))
        return answer

    return ToolContext(root=root, workspace=DiskWorkspace(), session_id="s1", call_id="c1",
                       question=question, publish=publish)


@pytest.fixture
def ctx(tmp_path: Path, published: list[Any], asked: list) -> ToolContext:
    return make_ctx(tmp_path, published, asked, answer="Use PostgreSQL")


async def run(tool, ctx: ToolContext, **arguments) -> ToolResult:
    action = await tool.prepare(tool.Input.model_validate(arguments), ctx)
    return await action.apply(ctx)


# --- todo -------------------------------------------------------------------------------------


async def test_todo_publishes_the_list_and_summarises(ctx: ToolContext, published: list[Any]):
    todos = [
        {"content": "Write the parser", "status": "in_progress"},
        {"content": "Add tests", "status": "pending"},
        {"content": "Update docs", "status": "pending"},
    ]
    result = await run(TodoTool(), ctx, todos=todos)
    assert result.summary == "3 todos: 1 in progress, 2 pending"
    assert result.output.splitlines() == [
        "3 todos: 1 in progress, 2 pending",
        "- [in_progress] Write the parser",
        "- [pending] Add tests",
        "- [pending] Update docs",
    ]
    assert result.metadata == {"todos": todos}
    assert len(published) == 1
    event = published[0]
    assert isinstance(event, Todo)
    assert event.to_wire() == {"sessionId": "s1", "kind": "todo", "todos": todos}


async def test_todo_counts_completed_and_singular(ctx: ToolContext):
    done = await run(TodoTool(), ctx, todos=[{"content": "Ship", "status": "completed"}])
    assert done.summary == "1 todo: 1 completed"
    empty = await run(TodoTool(), ctx, todos=[])
    assert empty.summary == "0 todos" and empty.metadata == {"todos": []}


async def test_todo_strips_content_and_refuses_blank_entries(ctx: ToolContext, published: list[Any]):
    result = await run(TodoTool(), ctx, todos=[{"content": "  Fix bug \n", "status": "pending"}])
    assert result.metadata["todos"][0]["content"] == "Fix bug"
    with pytest.raises(ToolError, match="Todo 2 has no content"):
        await run(TodoTool(), ctx, todos=[{"content": "a", "status": "pending"}, {"content": " ", "status": "pending"}])
    assert len(published) == 1  # the refused call published nothing


def test_todo_unknown_status_is_an_argument_error():
    with pytest.raises(ToolError, match="todos.0.status"):
        parse_arguments(TodoTool.Input, '{"todos": [{"content": "a", "status": "done"}]}')


async def test_todo_permission(ctx: ToolContext, published: list[Any]):
    action = await TodoTool().prepare(TodoTool.Input.model_validate({"todos": []}), ctx)
    assert action.permission == "todo" and action.changes is False
    assert published == []  # preparing publishes nothing: only apply does


# --- ask --------------------------------------------------------------------------------------


async def test_ask_returns_the_answer(ctx: ToolContext, asked: list):
    result = await run(AskTool(), ctx, question=" Which database? ", options=["PostgreSQL", " ", "SQLite"])
    assert asked == [("Which database?", ["PostgreSQL", "SQLite"])]
    assert result.output == "The user answered: Use PostgreSQL"
    assert result.summary == "Use PostgreSQL"
    assert not result.is_error


async def test_ask_without_options_passes_an_empty_list(ctx: ToolContext, asked: list):
    await run(AskTool(), ctx, question="Go on?")
    assert asked == [("Go on?", [])]


async def test_ask_when_nobody_can_answer(tmp_path: Path, published: list[Any], asked: list):
    ctx = make_ctx(tmp_path, published, asked, answer=None)
    result = await run(AskTool(), ctx, question="Delete the cache?")
    assert asked == [("Delete the cache?", [])]
    assert "could not be asked" in result.output
    assert "best judgement" in result.output
    assert "answered" not in result.output
    assert result.metadata == {"answer": None}


async def test_ask_default_context_asks_nobody(tmp_path: Path):
    ctx = ToolContext(root=tmp_path, workspace=DiskWorkspace(), session_id="s1", call_id="c1")
    result = await run(AskTool(), ctx, question="Anyone?")
    assert "could not be asked" in result.output


async def test_ask_refuses_an_empty_question(ctx: ToolContext, asked: list):
    with pytest.raises(ToolError, match="empty"):
        await run(AskTool(), ctx, question="   ")
    assert asked == []


async def test_ask_prepare_asks_nothing_yet(ctx: ToolContext, asked: list):
    action = await AskTool().prepare(AskTool.Input.model_validate({"question": "Which?"}), ctx)
    assert action.permission == "ask" and action.title == "Ask: Which?"
    assert asked == []
