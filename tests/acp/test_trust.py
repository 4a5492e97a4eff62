"""An untrusted project over ACP: its first prompt asks, once per project, whether to trust it
(``session/request_permission``, the pseudo call ``trust-project``); trusted, its whole config
applies from that prompt on; kept restricted, the notice says what it lost."""

from __future__ import annotations

import asyncio
import json

from tests.acp.conftest import eventually
from tests.support.model_server import text_reply, tool_reply


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


def untrusted_project(acp) -> None:
    """A project config that allows touch without asking: an allow rule, dropped untrusted."""
    (acp.project / ".totem").mkdir()
    (acp.project / ".totem" / "config.toml").write_text('[permission]\nbash = { "touch *" = "allow" }\n')


async def test_trusting_the_project_at_its_first_prompt_applies_its_whole_config(acp):
    untrusted_project(acp)
    await acp.initialize()
    session_id = await acp.new_session()
    acp.model.enqueue(tool_reply([("bash", {"command": "touch made"})]))
    acp.model.enqueue(text_reply("Made."))
    acp.client.answers.append("trust")

    assert (await acp.conn.prompt(session_id=session_id, prompt=text("make it"))).stop_reason == "end_turn"

    [(asked, options)] = acp.client.permissions  # the trust question only: the project's rule allowed touch
    assert asked.title == f"Trust the project {acp.project}?" and "touch *" in asked.content[0].content.text
    assert [(o.option_id, o.kind) for o in options] == [("trust", "allow_always"), ("restricted", "reject_once")]
    assert (acp.project / "made").exists()
    assert "is not trusted" not in acp.client.message_text()
    trusted = json.loads((acp.home / "data" / "totem" / "trusted.json").read_text())
    assert str(acp.project.resolve()) in trusted["roots"]


async def test_a_project_kept_restricted_is_asked_once_and_its_notice_said(acp):
    untrusted_project(acp)
    await acp.initialize()
    first = await acp.new_session()
    acp.model.enqueue(text_reply("Hello."))
    acp.client.answers.append("restricted")
    assert (await acp.conn.prompt(session_id=first, prompt=text("hi"))).stop_reason == "end_turn"
    assert "is not trusted" in acp.client.message_text()

    second = await acp.new_session()
    acp.model.enqueue(tool_reply([("bash", {"command": "touch made"})]))
    acp.model.enqueue(text_reply("Not made."))
    acp.client.answers.append("reject_once")
    assert (await acp.conn.prompt(session_id=second, prompt=text("make it"))).stop_reason == "end_turn"

    asked = [call.title for call, _ in acp.client.permissions]
    assert asked == [f"Trust the project {acp.project}?", "$ touch made"]  # the rule stayed dropped: touch was asked
    assert not (acp.project / "made").exists()
    assert not (acp.home / "data" / "totem" / "trusted.json").exists()


async def test_a_trust_question_answered_cancelled_ends_the_prompt_and_is_asked_again(acp):
    untrusted_project(acp)
    await acp.initialize()
    session_id = await acp.new_session()
    acp.client.answers.append("hold")
    prompt = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=text("hi")))
    await eventually(lambda: acp.client.permissions)
    acp.send_cancel(session_id)
    assert (await asyncio.wait_for(prompt, 30)).stop_reason == "cancelled"
    assert acp.model.requests == []

    acp.model.enqueue(text_reply("Hello."))
    acp.client.answers.append("restricted")
    assert (await acp.conn.prompt(session_id=session_id, prompt=text("hi"))).stop_reason == "end_turn"
    assert [call.title for call, _ in acp.client.permissions] == [f"Trust the project {acp.project}?"] * 2
