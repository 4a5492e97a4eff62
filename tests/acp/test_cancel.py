"""``session/cancel``: the prompt ends with ``cancelled``, the turn's processes are killed, and a
permission request the client answers ``cancelled`` is part of the abort, not a reject."""

from __future__ import annotations

import asyncio
import random

from tests.acp.conftest import eventually
from tests.support.model_server import text_reply, tool_reply
from tests.support.processes import none_left, processes_with


async def test_cancel_mid_stream_ends_with_cancelled_and_kills_the_turns_processes(acp):
    marker = f"41.{random.randint(10**5, 10**6)}"  # unique, so no other run's process is taken for this one's
    await acp.initialize()
    session_id = await acp.new_session()
    acp.model.enqueue(tool_reply([("job", {"action": "start", "command": f"sleep {marker}"})]))
    slow = text_reply("The server is up and", pieces=2)
    slow.events, slow.hold = slow.events[:3], 60  # the first words, then nothing until it is cancelled
    acp.model.enqueue(slow)
    acp.client.answers.append("allow_once")
    prompt = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "start the server"}]))
    await eventually(lambda: "The server is up and" in acp.client.message_text())
    assert processes_with(f"sleep {marker}")

    await acp.conn.cancel(session_id=session_id)
    response = await asyncio.wait_for(prompt, 30)

    assert response.stop_reason == "cancelled"
    await eventually(lambda: not processes_with(f"sleep {marker}"))
    assert "Stopped by the user." in acp.client.message_text()
    assert none_left(acp.project) == []


async def test_a_running_command_is_killed_and_its_call_closed_when_the_prompt_is_cancelled(acp):
    marker = f"43.{random.randint(10**5, 10**6)}"
    await acp.initialize()
    session_id = await acp.new_session()
    acp.model.enqueue(tool_reply([("bash", {"command": f"sleep {marker}"})], text="Running it."))
    acp.client.answers.append("allow_once")
    prompt = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "run it"}]))
    await eventually(lambda: processes_with(f"sleep {marker}"))
    [(asked, _)] = acp.client.permissions
    assert asked.kind == "execute" and asked.content[0].content.text == f"$ sleep {marker}"

    await acp.conn.cancel(session_id=session_id)
    assert (await asyncio.wait_for(prompt, 30)).stop_reason == "cancelled"
    await eventually(lambda: not processes_with(f"sleep {marker}"))
    ended = acp.client.of("tool_call_update")[-1]
    assert ended.status == "failed" and ended.raw_output["status"] == "interrupted"


async def test_a_permission_request_answered_cancelled_is_part_of_the_abort_not_a_reject(acp):
    await acp.initialize()
    session_id = await acp.new_session()
    acp.model.enqueue(tool_reply([("write", {"path": "app.py", "content": "x = 2\n"})]))
    acp.model.enqueue(text_reply("A reject would have brought the turn here."))
    acp.client.answers.append("hold")
    prompt = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "change x"}]))
    await eventually(lambda: acp.client.permissions)

    acp.send_cancel(session_id)
    response = await asyncio.wait_for(prompt, 30)

    assert response.stop_reason == "cancelled"
    assert len(acp.model.requests) == 1  # the model was not told of a rejection and asked again
    assert not (acp.project / "app.py").exists()
    ended = acp.client.of("tool_call_update")[-1]
    assert ended.status == "failed" and ended.raw_output["status"] == "interrupted"  # not "denied"
