"""A ``session/prompt`` that comes while a turn of its session runs waits for that turn and then
runs (none of its text lost); a ``session/cancel`` drops the prompts still waiting, which answer
``cancelled`` unrun (docs/acp.md "Prompts")."""

from __future__ import annotations

import asyncio

from tests.acp.conftest import eventually
from tests.support.model_server import text_reply
from tests.support.reminder import sent_messages


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


def held(answer: str, seconds: float):
    """An answer whose stream stays open ``seconds`` after its first words."""
    reply = text_reply(answer, pieces=1)
    reply.events, reply.hold = reply.events[:2], seconds
    return reply


async def test_prompts_sent_while_a_turn_runs_wait_and_run_in_order(acp):
    await acp.initialize()
    session_id = await acp.new_session()
    acp.model.enqueue(held("Working on", 1.5), text_reply("Second done."), text_reply("Third done."))
    first = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=text("first")))
    await eventually(lambda: "Working" in acp.client.message_text())
    second = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=text("second")))
    await asyncio.sleep(0.1)  # the second is in line before the third
    third = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=text("third")))
    await asyncio.sleep(0.3)
    assert not second.done() and not third.done()
    assert len(acp.model.requests) == 1  # nothing of the waiting prompts reached the model yet

    answers = await asyncio.wait_for(asyncio.gather(first, second, third), 30)
    assert [a.stop_reason for a in answers] == ["end_turn"] * 3
    assert len(acp.model.requests) == 3
    users = [[m["content"] for m in sent_messages(r) if m["role"] == "user"] for r in acp.model.requests]
    assert users[1][-2:] == ["first", "second"] and users[2][-3:] == ["first", "second", "third"]
    assert "Working on" in acp.client.message_text() and "Third done." in acp.client.message_text()


async def test_a_cancel_stops_the_turn_and_drops_the_waiting_prompts_unrun(acp):
    await acp.initialize()
    session_id = await acp.new_session()
    acp.model.enqueue(held("Thinking", 60))
    first = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=text("think")))
    await eventually(lambda: "Thinking" in acp.client.message_text())
    waiting = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=text("and this?")))
    await asyncio.sleep(0.3)
    await acp.conn.cancel(session_id=session_id)
    assert (await asyncio.wait_for(first, 30)).stop_reason == "cancelled"
    assert (await asyncio.wait_for(waiting, 30)).stop_reason == "cancelled"
    assert len(acp.model.requests) == 1  # the dropped prompt never ran

    acp.model.enqueue(text_reply("Back."))
    after = await acp.conn.prompt(session_id=session_id, prompt=text("still there?"))
    assert after.stop_reason == "end_turn"
    users = [m["content"] for m in sent_messages(acp.model.requests[-1]) if m["role"] == "user"]
    assert "and this?" not in users and users[-1] == "still there?"
