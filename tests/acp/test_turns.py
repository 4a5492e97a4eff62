"""How prompt turns end over ACP (stop reasons, errors, a stop of the process) and what shapes
them: slash commands, the mode, the model, the context blocks."""

from __future__ import annotations

import asyncio
import signal

import pytest
from acp import RequestError

from tests.acp.conftest import eventually, running_acp
from tests.support.images import b64, png
from tests.support.model_server import Reply, chunk, text_reply, tool_reply
from tests.support.reminder import sent_messages


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


async def started(acp) -> str:
    await acp.initialize()
    return await acp.new_session()


async def test_a_provider_error_is_a_json_rpc_error_with_its_message(acp):
    session_id = await started(acp)
    acp.model.enqueue(Reply(status=400, body='{"error": {"message": "model test-model does not exist"}}'))
    with pytest.raises(RequestError) as raised:
        await acp.conn.prompt(session_id=session_id, prompt=text("hello"))
    assert "model test-model does not exist" in str(raised.value)
    assert raised.value.data["errorClass"] == "InvalidRequestError"


async def test_an_answer_cut_at_the_output_limit_ends_with_max_tokens(acp):
    session_id = await started(acp)
    events = [chunk({"role": "assistant", "content": "The list goes on and"}), chunk({}, finish_reason="length")]
    acp.model.enqueue(Reply(events=events))
    response = await acp.conn.prompt(session_id=session_id, prompt=text("list everything"))
    assert response.stop_reason == "max_tokens"
    assert acp.client.message_text() == "The list goes on and"


async def test_a_guard_ends_the_turn_after_an_agent_message_that_names_it(acp):
    session_id = await started(acp)
    for n in range(3):
        acp.model.enqueue(tool_reply([("write", {"path": f"f{n}.txt", "content": "x"})]))
    acp.client.answers += ["reject_once"] * 3
    response = await acp.conn.prompt(session_id=session_id, prompt=text("write the files"))
    assert response.stop_reason == "end_turn"
    assert len(acp.model.requests) == 3  # three rejections in a row stopped it
    assert "rejected" in acp.client.message_text().lower()


async def test_a_slash_command_is_expanded_and_listed(acp):
    commands = acp.home / "config" / "totem" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text("---\ndescription: Greet someone\n---\nSay hello to $ARGUMENTS.\n")
    session_id = await started(acp)
    await eventually(lambda: acp.client.of("available_commands_update"))
    listed = {c.name: c.description for c in acp.client.of("available_commands_update")[0].available_commands}
    assert listed["greet"] == "Greet someone"
    acp.model.enqueue(text_reply("Hello, Ada."))
    await acp.conn.prompt(session_id=session_id, prompt=text("/greet Ada"))
    assert sent_messages(acp.model.requests[0])[-1]["content"] == "Say hello to Ada."


async def test_undo_as_a_slash_command_puts_the_files_back(acp):
    session_id = await started(acp)
    acp.model.enqueue(tool_reply([("write", {"path": "new.txt", "content": "x\n"})]), text_reply("Wrote it."))
    acp.client.answers.append("allow_once")
    await acp.conn.prompt(session_id=session_id, prompt=text("write new.txt"))
    assert (acp.project / "new.txt").exists()
    response = await acp.conn.prompt(session_id=session_id, prompt=text("/undo"))
    assert response.stop_reason == "end_turn" and not (acp.project / "new.txt").exists()
    assert acp.client.message_text().endswith("deleted new.txt")
    assert len(acp.model.requests) == 2  # the action asked no model


async def test_plan_mode_set_by_the_client_refuses_changes_and_is_said(acp):
    session_id = await started(acp)
    await acp.conn.set_session_mode(session_id=session_id, mode_id="plan")
    assert acp.client.of("current_mode_update")[-1].current_mode_id == "plan"
    acp.model.enqueue(tool_reply([("write", {"path": "new.txt", "content": "x"})]), text_reply("I would write new.txt."))
    await acp.conn.prompt(session_id=session_id, prompt=text("write new.txt"))
    assert acp.client.permissions == [] and not (acp.project / "new.txt").exists()
    assert acp.client.of("tool_call_update")[-1].raw_output["status"] == "denied"
    with pytest.raises(RequestError) as refused:
        await acp.conn.set_session_mode(session_id=session_id, mode_id="yolo")
    assert refused.value.code == -32602  # invalid params: the request names no mode


async def test_the_model_is_chosen_through_the_sessions_config_option(acp):
    acp.model.models.append({"id": "other-model", "object": "model"})
    session_id = await started(acp)
    answer = await acp.conn.set_config_option(config_id="model", session_id=session_id, value="sim/other-model")
    [option] = [o for o in answer.config_options if o.id == "model"]
    assert option.current_value == "sim/other-model"
    assert {o.value for o in option.options} == {"sim/test-model", "sim/other-model"}
    acp.model.enqueue(text_reply("Hi.", model="other-model"))
    await acp.conn.prompt(session_id=session_id, prompt=text("hi"))
    assert acp.model.requests[0]["model"] == "other-model"


async def test_resource_links_and_embedded_files_come_with_the_message(acp):
    session_id = await started(acp)
    acp.model.enqueue(text_reply("Seen."))
    blocks = [
        {"type": "text", "text": "explain "},
        {"type": "resource_link", "uri": (acp.project / "a.py").as_uri(), "name": "a.py"},
        {"type": "resource", "resource": {"uri": (acp.project / "b.py").as_uri(), "text": "y = 2\n"}},
    ]
    await acp.conn.prompt(session_id=session_id, prompt=blocks)
    sent = sent_messages(acp.model.requests[0])[-1]["content"]
    assert sent == '<context file="a.py"/>\n\n<context file="b.py">\ny = 2\n</context>\n\nexplain'


PNG = b64(png(2, 1))


async def test_an_image_reaches_a_model_that_sees_images_once_then_its_caption(tmp_path, model):
    async with running_acp(tmp_path, model, config='[models."sim/test-model"]\nvision = true\n') as acp:
        session_id = await started(acp)
        acp.model.enqueue(text_reply("A red dot."))
        acp.model.enqueue(text_reply("Still a red dot."))
        image = {"type": "image", "mimeType": "image/png", "data": PNG, "uri": "file:///tmp/dot.png"}
        await acp.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "what is this?"}, image])
        await acp.conn.prompt(session_id=session_id, prompt=text("and now?"))
    first, second = acp.model.requests
    parts = sent_messages(first)[-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert parts[1]["image_url"]["url"] == f"data:image/png;base64,{PNG}"
    assert "[image: dot.png, 2x1 PNG, 1 KB]" in parts[0]["text"] and "what is this?" in parts[0]["text"]
    asked = next(m for m in second["messages"] if m["role"] == "user" and "what is this?" in str(m["content"]))
    assert isinstance(asked["content"], str) and "[image: dot.png, 2x1 PNG, 1 KB]" in asked["content"]  # the caption only


async def test_a_stopped_process_answers_the_running_prompt_with_an_error_and_says_why(acp):
    session_id = await started(acp)
    slow = text_reply("Thinking about it", pieces=2)
    slow.events, slow.hold = slow.events[:3], 60
    acp.model.enqueue(slow)
    prompt = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=text("think")))
    await eventually(lambda: "Thinking about it" in acp.client.message_text())
    acp.process.send_signal(signal.SIGTERM)
    with pytest.raises(RequestError) as raised:
        await asyncio.wait_for(prompt, 30)
    assert "stopped (SIGTERM)" in str(raised.value)
    assert await asyncio.wait_for(acp.process.wait(), 30) == 143
    assert "totem acp: stopped by SIGTERM" in acp.stderr.read_text()


async def test_the_todo_tool_is_the_clients_plan_and_sessions_are_listed(acp):
    session_id = await started(acp)
    todos = [{"content": "read the code", "status": "completed"}, {"content": "fix the bug", "status": "in_progress"}]
    acp.model.enqueue(tool_reply([("todo", {"todos": todos})]), text_reply("On it."))
    await acp.conn.prompt(session_id=session_id, prompt=text("fix the bug"))
    [plan] = acp.client.of("plan")
    assert [(e.content, e.status) for e in plan.entries] == [("read the code", "completed"), ("fix the bug", "in_progress")]
    [call] = acp.client.of("tool_call")
    assert call.kind == "think"
    listed = await acp.conn.list_sessions(cwd=str(acp.project))
    assert [(s.session_id, s.title) for s in listed.sessions] == [(session_id, "fix the bug")]
