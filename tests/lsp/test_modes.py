"""totem/setMode through the real ``totem lsp``: the mode is the session's, stored with it;
``totem/chat``'s ``mode`` overrides one turn only."""

from __future__ import annotations

import asyncio

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import to_dict
from tests.support.model_server import text_reply, tool_reply

WAIT = 15.0


async def call(editor, method: str, params) -> dict:
    return to_dict(await asyncio.wait_for(editor.request(method, params), WAIT))


async def write_turn(editor, session_id: str | None, **extra) -> dict:
    """A turn whose model writes a file; the write's toolEnd."""
    editor.model.enqueue(tool_reply([("write", {"path": "out.txt", "content": "x\n"})]))
    editor.model.enqueue(text_reply("ok"))
    editor.permission_answers.append({"outcome": "allow_once"})
    params = {"text": "write out.txt", **extra, **({"sessionId": session_id} if session_id else {})}
    result = await call(editor, "totem/chat", params)
    return {**editor.of("toolEnd")[-1], "sessionId": result["sessionId"]}


async def test_the_mode_is_the_sessions_and_a_chats_mode_overrides_one_turn(editor):
    editor.model.enqueue(text_reply("hi"))
    session_id = (await call(editor, "totem/chat", {"text": "hi"}))["sessionId"]

    assert await call(editor, "totem/setMode", {"sessionId": session_id, "mode": "plan"}) == {"mode": "plan"}
    assert (await call(editor, "totem/session", {"sessionId": session_id}))["mode"] == "plan"
    assert [s["mode"] for s in await call(editor, "totem/sessions", None)] == ["plan"]

    planned = await write_turn(editor, session_id)
    assert planned["status"] == "denied" and planned["summary"] == "denied (plan mode)"
    built = await write_turn(editor, session_id, mode="build")  # this turn only
    assert built["status"] == "ok" and (editor.project / "out.txt").exists()
    again = await write_turn(editor, session_id)
    assert again["summary"] == "denied (plan mode)"
    assert (await call(editor, "totem/session", {"sessionId": session_id}))["mode"] == "plan"


async def test_without_a_session_it_is_the_mode_of_new_sessions(editor):
    await call(editor, "totem/setMode", {"mode": "plan"})
    planned = await write_turn(editor, None)
    assert planned["summary"] == "denied (plan mode)"
    assert (await call(editor, "totem/session", {"sessionId": planned["sessionId"]}))["mode"] == "plan"


async def test_a_mode_that_is_not_plan_or_build_and_an_unknown_session_are_invalid(editor):
    with pytest.raises(JsonRpcException, match="mode"):
        await call(editor, "totem/setMode", {"mode": "yolo"})
    with pytest.raises(JsonRpcException, match="ses_nope"):
        await call(editor, "totem/setMode", {"sessionId": "ses_nope", "mode": "plan"})


async def test_a_new_session_keeps_the_mode_its_first_chat_carries(editor):
    planned = await write_turn(editor, None, mode="plan")
    assert planned["summary"] == "denied (plan mode)"
    assert (await call(editor, "totem/session", {"sessionId": planned["sessionId"]}))["mode"] == "plan"
    again = await write_turn(editor, planned["sessionId"])
    assert again["summary"] == "denied (plan mode)"
