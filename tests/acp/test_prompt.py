"""``totem acp`` driven by the ACP SDK's client: initialize, a new session, a prompt that streams
message chunks and a tool call whose permission request carries the diff; allow and reject."""

from __future__ import annotations

from tests.acp.conftest import eventually
from tests.support.model_server import text_reply, tool_reply
from tests.support.reminder import sent_messages

EDIT = {"path": "app.py", "old_string": "return 'hi'", "new_string": "return 'hello'"}


async def test_initialize_says_what_totem_offers(acp):
    answer = await acp.initialize()
    capabilities = answer.agent_capabilities
    assert answer.protocol_version == 1
    assert capabilities.load_session is True
    assert capabilities.prompt_capabilities.embedded_context is True
    assert capabilities.prompt_capabilities.image is True  # attached as the language server's attachments are
    assert capabilities.mcp_capabilities.http is True and capabilities.mcp_capabilities.sse is False
    assert answer.auth_methods == [] and answer.agent_info.name == "totem"


async def test_a_prompt_streams_chunks_and_an_allowed_edit_lands_with_its_diff_asked(acp):
    (acp.project / "app.py").write_text("def greet():\n    return 'hi'\n")
    await acp.initialize()
    new = await acp.conn.new_session(cwd=str(acp.project), mcp_servers=[])
    assert new.modes.current_mode_id == "build" and {m.id for m in new.modes.available_modes} == {"build", "plan"}
    [model_option] = [o for o in new.config_options if o.id == "model"]
    assert model_option.category == "model" and model_option.current_value == "sim/test-model"
    await eventually(lambda: acp.client.of("available_commands_update"))
    commands = {c.name for c in acp.client.of("available_commands_update")[0].available_commands}
    assert {"init", "undo", "compact"} <= commands

    acp.model.enqueue(tool_reply([("edit", EDIT)], text="Let me change the greeting."))
    acp.model.enqueue(text_reply("Changed it to hello.", pieces=4))
    acp.client.answers.append("allow_once")
    response = await acp.conn.prompt(session_id=new.session_id, prompt=[{"type": "text", "text": "say hello instead"}])

    assert response.stop_reason == "end_turn"
    assert acp.client.message_text() == "Let me change the greeting.Changed it to hello."
    assert len(acp.client.of("agent_message_chunk")) >= 4  # streamed, not sent whole
    [opened] = acp.client.of("tool_call")
    assert opened.kind == "edit" and opened.status == "pending" and opened.raw_input == {**EDIT, "replace_all": False}
    assert [loc.path for loc in opened.locations] == [str(acp.project / "app.py")]
    [(asked, options)] = acp.client.permissions
    assert asked.tool_call_id == opened.tool_call_id and asked.kind == "edit"
    [diff] = asked.content
    assert diff.type == "diff" and diff.path == str(acp.project / "app.py")
    assert diff.old_text == "def greet():\n    return 'hi'\n" and diff.new_text == "def greet():\n    return 'hello'\n"
    assert [(o.option_id, o.kind) for o in options] == [
        ("allow_once", "allow_once"), ("allow_always", "allow_always"), ("reject_once", "reject_once"),
        ("reject_always", "reject_always"),
    ]
    statuses = [u.status for u in acp.client.of("tool_call_update") if u.tool_call_id == opened.tool_call_id]
    assert statuses == ["in_progress", "completed"]
    assert (acp.project / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    ended = acp.client.of("tool_call_update")[-1]
    assert ended.content[0].type == "diff" and ended.content[0].new_text.endswith("return 'hello'\n")
    assert "return 'hello'" not in sent_messages(acp.model.requests[0])[-1]["content"]


async def test_reject_once_rejects_that_call_and_the_turn_goes_on_to_its_end(acp):
    (acp.project / "app.py").write_text("def greet():\n    return 'hi'\n")
    await acp.initialize()
    session_id = await acp.new_session()
    acp.model.enqueue(tool_reply([("edit", EDIT)]))
    acp.model.enqueue(tool_reply([("read", {"path": "app.py"})]))
    acp.model.enqueue(text_reply("I left app.py as it is."))
    acp.client.answers.append("reject_once")
    response = await acp.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "say hello instead"}])

    assert response.stop_reason == "end_turn"  # a reject is not a cancel: the turn went on
    assert len(acp.model.requests) == 3
    assert (acp.project / "app.py").read_text() == "def greet():\n    return 'hi'\n"
    edit_call, read_call = acp.client.of("tool_call")
    ends = {u.tool_call_id: u for u in acp.client.of("tool_call_update") if u.status in ("completed", "failed")}
    assert ends[edit_call.tool_call_id].status == "failed"
    assert ends[edit_call.tool_call_id].raw_output["status"] == "denied"
    assert read_call.kind == "read" and ends[read_call.tool_call_id].status == "completed"
    assert acp.client.message_text().endswith("I left app.py as it is.")
