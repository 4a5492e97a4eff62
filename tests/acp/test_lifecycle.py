"""The session lifecycle beyond new and load: ``session/resume``, ``session/close``,
``session/delete``, ``logout`` and ``$/cancel_request``, each advertised only as it works."""

from __future__ import annotations

import asyncio

import pytest
from acp import RequestError

from tests.acp.conftest import eventually, running_acp
from tests.support.model_server import text_reply


def text(words: str) -> list[dict]:
    return [{"type": "text", "text": words}]


async def test_initialize_advertises_resume_close_delete_and_no_logout(acp):
    answer = await acp.initialize()
    sessions = answer.agent_capabilities.session_capabilities
    assert sessions.list is not None and sessions.resume is not None and sessions.close is not None
    assert sessions.delete is not None
    assert answer.agent_capabilities.auth.logout is None and answer.auth_methods == []
    # Nothing to log out of: answered, without error.
    assert await acp.conn._conn.send_request("logout", {}) == {}


async def test_resume_opens_the_session_without_replay_and_the_conversation_goes_on(tmp_path, model):
    async with running_acp(tmp_path, model) as first:
        await first.initialize()
        session_id = await first.new_session()
        model.enqueue(text_reply("Noted: milk."))
        await first.conn.prompt(session_id=session_id, prompt=text("remember milk"))

    async with running_acp(tmp_path, model) as second:
        await second.initialize()
        resumed = await second.conn.resume_session(cwd=str(second.project), session_id=session_id, mcp_servers=[])
        assert resumed.modes.current_mode_id == "build"
        assert {o.id for o in resumed.config_options} >= {"model", "mode"}
        await eventually(lambda: second.client.of("available_commands_update") and second.client.of("session_info_update"))
        # No replay: the client has the conversation already.
        assert not second.client.of("user_message_chunk") and not second.client.of("agent_message_chunk")
        assert second.client.of("session_info_update")[-1].title == "remember milk"

        model.enqueue(text_reply("Milk."))
        response = await second.conn.prompt(session_id=session_id, prompt=text("what was it?"))
        assert response.stop_reason == "end_turn"
        sent = [m.get("content") for m in model.requests[-1]["messages"]]
        assert "remember milk" in sent and "Noted: milk." in sent

        with pytest.raises(RequestError) as missing:
            await second.conn.resume_session(cwd=str(second.project), session_id="no-such-session", mcp_servers=[])
        assert missing.value.code == -32002


async def test_a_closed_session_refuses_prompts_until_loaded_again(acp):
    await acp.initialize()
    session_id = await acp.new_session()
    acp.model.enqueue(text_reply("Hello."))
    await acp.conn.prompt(session_id=session_id, prompt=text("hi"))

    await acp.conn.close_session(session_id=session_id)
    with pytest.raises(RequestError) as closed:
        await acp.conn.prompt(session_id=session_id, prompt=text("still there?"))
    assert closed.value.code == -32602 and "no open session" in closed.value.data["message"]
    with pytest.raises(RequestError):
        await acp.conn.close_session(session_id=session_id)

    await acp.conn.load_session(cwd=str(acp.project), session_id=session_id, mcp_servers=[])
    acp.model.enqueue(text_reply("Back."))
    assert (await acp.conn.prompt(session_id=session_id, prompt=text("again"))).stop_reason == "end_turn"


async def test_closing_a_running_session_aborts_its_turn(acp):
    await acp.initialize()
    session_id = await acp.new_session()
    slow = text_reply("Thinking", pieces=2)
    slow.events, slow.hold = slow.events[:3], 60
    acp.model.enqueue(slow)
    prompt = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=text("think")))
    await eventually(lambda: "Thinking" in acp.client.message_text())
    await asyncio.wait_for(acp.conn.close_session(session_id=session_id), 30)
    assert (await asyncio.wait_for(prompt, 30)).stop_reason == "cancelled"


async def test_delete_removes_the_stored_session_and_refuses_a_running_one(acp):
    await acp.initialize()
    kept, gone = await acp.new_session(), await acp.new_session()
    acp.model.enqueue(text_reply("One."), text_reply("Two."))
    await acp.conn.prompt(session_id=kept, prompt=text("keep me"))
    await acp.conn.prompt(session_id=gone, prompt=text("delete me"))

    slow = text_reply("Working", pieces=2)
    slow.events, slow.hold = slow.events[:3], 60
    acp.model.enqueue(slow)
    running = asyncio.ensure_future(acp.conn.prompt(session_id=kept, prompt=text("work")))
    await eventually(lambda: "Working" in acp.client.message_text())
    with pytest.raises(RequestError) as busy:
        await acp.conn._conn.send_request("session/delete", {"sessionId": kept})
    assert busy.value.code == -32600 and "cannot be deleted" in str(busy.value)
    await acp.conn.cancel(session_id=kept)
    assert (await asyncio.wait_for(running, 30)).stop_reason == "cancelled"

    assert await acp.conn._conn.send_request("session/delete", {"sessionId": gone}) == {}
    listed = await acp.conn.list_sessions(cwd=str(acp.project))
    assert [s.session_id for s in listed.sessions] == [kept]
    with pytest.raises(RequestError) as missing:
        await acp.conn.load_session(cwd=str(acp.project), session_id=gone, mcp_servers=[])
    assert missing.value.code == -32002
    with pytest.raises(RequestError) as again:
        await acp.conn._conn.send_request("session/delete", {"sessionId": gone})
    assert again.value.code == -32002


async def test_cancel_request_cancels_the_prompt_it_names_quietly(acp):
    await acp.initialize()
    session_id = await acp.new_session()
    slow = text_reply("Thinking", pieces=2)
    slow.events, slow.hold = slow.events[:3], 60
    acp.model.enqueue(slow)
    request_id = acp.conn._conn._next_request_id  # the id the prompt goes out with
    prompt = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=text("think")))
    await eventually(lambda: "Thinking" in acp.client.message_text())
    await acp.conn._conn.send_notification("$/cancel_request", {"requestId": 12345})  # nothing by that id
    await acp.conn._conn.send_notification("$/cancel_request", {"requestId": request_id})
    assert (await asyncio.wait_for(prompt, 30)).stop_reason == "cancelled"

    acp.model.enqueue(text_reply("Fine."))
    assert (await acp.conn.prompt(session_id=session_id, prompt=text("again"))).stop_reason == "end_turn"
    assert "Traceback" not in acp.stderr.read_text()
