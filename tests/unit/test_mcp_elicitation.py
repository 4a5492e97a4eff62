"""What a server asks the user during a call (totem_engine/mcp/elicitation.py, connection.py):
each kind of form field asked and read, what is a decline, and with the ``mcp`` package's own
server started for real: a question that outlasts the call's timeout still gets through, and a
call that ends withdraws its open question."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import mcp_types
import pytest

from tests.support.processes import none_left
from tests.support.real_mcp import ROOT
from totem_engine.mcp.connection import ServerConnection
from totem_engine.mcp.elicitation import answer_elicitation
from totem_engine.mcp.results import read_result
from totem_engine.mcp.specs import ServerSpec


def scripted(*answers: str | None):
    """An ``ask`` that answers in turn and keeps what it was asked."""
    asked: list[tuple[str, list[str]]] = []
    queue = list(answers)

    async def ask(question: str, options: list[str]) -> str | None:
        asked.append((question, options))
        return queue.pop(0)

    ask.asked = asked  # type: ignore[attr-defined]
    return ask


def form(properties: dict, required: list[str] = (), message: str = "Tell me.") -> mcp_types.ElicitRequestFormParams:
    return mcp_types.ElicitRequestFormParams(
        mode="form", message=message, requested_schema={"type": "object", "properties": properties, "required": list(required)},
    )


async def test_each_field_is_asked_in_turn_and_read_as_its_type():
    params = form({
        "name": {"type": "string", "title": "Name"},
        "age": {"type": "integer", "description": "Years"},
        "height": {"type": "number"},
        "tea": {"type": "boolean", "title": "Tea"},
        "team": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "b", "title": "Blue"}]},
        "days": {"type": "array", "items": {"enum": ["mon", "tue", "wed"]}},
        "note": {"type": "string", "default": "none"},
    }, required=["name", "age", "height", "tea", "team", "days"], message="About you")
    ask = scripted("Ada", "36", "1.7", "no", "blue", "mon, wed", "")
    result = await answer_elicitation(params, ask, "people")

    assert result.action == "accept"
    assert result.content == {"name": "Ada", "age": 36, "height": 1.7, "tea": False, "team": "b", "days": ["mon", "wed"], "note": "none"}
    questions = [q for q, _ in ask.asked]
    assert questions[0] == "MCP server people asks: About you\nName"
    assert questions[1:4] == ["age: Years (a whole number)", "height (a number)", "Tea"]
    assert questions[6] == "note (optional)"
    assert [o for _, o in ask.asked][3:6] == [["yes", "no"], ["Red", "Blue"], ["mon", "tue", "wed"]]


@pytest.mark.parametrize("answers", [
    (None,),  # nobody to answer
    ("",),  # an empty answer to a required field
    ("many",),  # not a whole number
    ("12", "purple"),  # not among the choices
    ("12", "Red", "maybe"),  # not a yes or a no
])
async def test_no_answer_or_one_of_the_wrong_type_is_a_decline(answers):
    params = form({
        "count": {"type": "integer"}, "team": {"type": "string", "enum": ["Red", "Blue"]}, "go": {"type": "boolean"},
    }, required=["count", "team", "go"])
    result = await answer_elicitation(params, scripted(*answers), "s")
    assert result.action == "decline" and result.content is None


async def test_a_form_without_fields_and_a_url_are_yes_or_no_questions():
    empty = form({}, message="Go ahead?")
    assert (await answer_elicitation(empty, scripted("yes"), "s")).action == "accept"
    assert (await answer_elicitation(empty, scripted("no"), "s")).action == "decline"
    url = mcp_types.ElicitRequestURLParams(mode="url", message="Sign in.", url="https://example.org/login", elicitation_id="e1")
    ask = scripted("I opened it")
    assert (await answer_elicitation(url, ask, "s")).action == "accept"
    assert ask.asked == [("MCP server s asks: Sign in.\nOpen https://example.org/login", ["I opened it", "decline"])]
    assert (await answer_elicitation(url, scripted(None), "s")).action == "decline"


def sdk_spec(era: str) -> ServerSpec:
    return ServerSpec(name="painter", source="user", path=Path("mcp.json"), command=sys.executable,
                      args=(str(ROOT / "tests" / "support" / "mcp_sdk_stdio.py"), era))


async def nothing(connection: ServerConnection) -> None:
    pass


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_question_that_outlasts_the_calls_timeout_still_gets_its_answer_through(tmp_path, era):
    connection = ServerConnection(sdk_spec(era), tmp_path, on_exit=nothing)
    await connection.start(20)
    try:
        assert connection.protocol_version == ("2026-07-28" if era == "modern" else "2025-11-25")

        async def slow(question: str, options: list[str]) -> str:
            await anyio.sleep(1.5)  # the user thinks longer than the call may take
            return "ochre"

        result = await connection.call_tool("paint", {}, 1.0, ask=slow)
        assert read_result(result, "x").text == "painted ochre"
    finally:
        await connection.stop()
    assert none_left(tmp_path) == []


async def test_a_call_that_ends_withdraws_its_open_question(tmp_path):
    connection = ServerConnection(sdk_spec("legacy"), tmp_path, on_exit=nothing)
    await connection.start(20)
    withdrawn = anyio.Event()

    async def waits(question: str, options: list[str]) -> str:
        try:
            await anyio.sleep_forever()
        finally:
            withdrawn.set()

    try:
        with anyio.move_on_after(1.0):  # the turn aborted while the user was asked
            await connection.call_tool("paint", {}, 30.0, ask=waits)
        with anyio.fail_after(5):
            await withdrawn.wait()
        # The server is still there for the next call, which nobody answers: a decline.
        result = await connection.call_tool("paint", {}, 10.0)
        assert read_result(result, "x").text == "not painted: decline"
    finally:
        await connection.stop()
    assert none_left(tmp_path) == []
