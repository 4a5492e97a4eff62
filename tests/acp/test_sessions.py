"""``session/load`` replays a stored session (and refuses one of another project, open here or\nnot); the client's file system and MCP servers are used; engine refusals as JSON-RPC errors."""

from __future__ import annotations

import asyncio
import sys

import pytest
from acp import RequestError
from acp.schema import EnvVariable, McpServerStdio

from tests.acp.conftest import ROOT, Client, eventually, running_acp
from tests.support.model_server import text_reply, tool_reply
from tests.support.processes import none_left
from tests.support.reminder import sent_messages


async def test_session_load_replays_the_stored_session_and_the_conversation_goes_on(tmp_path, model):
    async with running_acp(tmp_path, model) as first:
        (first.project / "notes.txt").write_text("buy milk\n")
        await first.initialize()
        session_id = await first.new_session()
        model.enqueue(tool_reply([("read", {"path": "notes.txt"})], text="Reading your notes."))
        model.enqueue(text_reply("You need to buy milk.", reasoning="The notes say milk."))
        await first.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "what do I need?"}])

    async with running_acp(tmp_path, model) as second:
        await second.initialize()
        loaded = await second.conn.load_session(cwd=str(second.project), session_id=session_id, mcp_servers=[])
        assert loaded.modes.current_mode_id == "build"
        kinds = [u.session_update for u in second.client.updates]
        # The replay comes before the answer, in the conversation's order.
        assert kinds[:6] == [
            "user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update", "agent_thought_chunk",
            "agent_message_chunk",
        ]
        assert second.client.of("user_message_chunk")[0].content.text == "what do I need?"
        assert second.client.message_text() == "Reading your notes.You need to buy milk."
        [call] = second.client.of("tool_call")
        [ended] = second.client.of("tool_call_update")
        assert call.kind == "read" and call.title and ended.status == "completed"
        assert "buy milk" in ended.content[0].content.text
        assert second.client.of("agent_thought_chunk")[0].content.text == "The notes say milk."

        model.enqueue(text_reply("Milk, still."))
        response = await second.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "and now?"}])
        assert response.stop_reason == "end_turn"
        sent = [m.get("content") for m in model.requests[-1]["messages"]]
        assert "what do I need?" in sent and "You need to buy milk." in sent and sent[-1] == "and now?"


async def test_with_the_clients_file_system_the_agent_edits_the_buffer_and_not_the_disk(tmp_path, model):
    path = tmp_path / "project" / "app.py"
    path.parent.mkdir()
    path.write_text("x = 1\n")
    client = Client(files={str(path): "x = 1\ny = 2\n"})  # unsaved in the editor: y = 2
    async with running_acp(tmp_path, model, client) as acp:
        await acp.initialize(fs=True)
        session_id = await acp.new_session()
        model.enqueue(tool_reply([("read", {"path": "app.py"})]))
        model.enqueue(tool_reply([("edit", {"path": "app.py", "old_string": "y = 2", "new_string": "y = 3"})]))
        model.enqueue(text_reply("Set y to 3."))
        client.answers.append("allow_once")
        response = await acp.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "make y 3"}])

        assert response.stop_reason == "end_turn"
        assert "y = 2" in sent_messages(model.requests[1])[-1]["content"]  # the agent read the buffer
        [(asked, _)] = client.permissions
        assert asked.content[0].old_text == "x = 1\ny = 2\n" and asked.content[0].new_text == "x = 1\ny = 3\n"
        assert client.writes == [(str(path), "x = 1\ny = 3\n")]  # through fs/write_text_file
        assert client.files[str(path)] == "x = 1\ny = 3\n"
        assert path.read_text() == "x = 1\n"  # and not on disk
        assert str(path) in client.reads


async def test_the_clients_mcp_server_starts_after_the_question_and_its_tool_is_called(acp):
    await acp.initialize()
    shouter = McpServerStdio(
        name="shouter", command=sys.executable, args=["-m", "tests.acp.mcp_stdio"],
        env=[EnvVariable(name="PYTHONPATH", value=str(ROOT))],
    )
    session_id = await acp.new_session(mcp_servers=[shouter])
    acp.model.enqueue(tool_reply([("shouter__shout", {"text": "hello there"})]))
    acp.model.enqueue(text_reply("It shouted."))
    acp.client.answers += ["allow_once", "allow_once"]  # the start, then the call
    response = await acp.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "shout hello there"}])

    assert response.stop_reason == "end_turn"
    (start, _), (call, _) = acp.client.permissions
    assert start.title == f"Start MCP server shouter: {sys.executable} -m tests.acp.mcp_stdio"
    assert call.title and call.raw_input == {"text": "hello there"}
    assert any(t["function"]["name"] == "shouter__shout" for t in acp.model.requests[0]["tools"])
    ended = {u.tool_call_id: u for u in acp.client.of("tool_call_update") if u.status == "completed"}
    assert ended[call.tool_call_id].content[0].content.text == "HELLO THERE"
    assert sent_messages(acp.model.requests[1])[-1]["content"] == "HELLO THERE"

    acp.process.stdin.close()  # the client goes: the session's server is stopped with the process
    assert await asyncio.wait_for(acp.process.wait(), 30) == 0
    assert none_left(acp.project) == []


async def test_a_loaded_session_shows_what_its_mcp_server_said_as_it_came_live(tmp_path, model):
    shouter = McpServerStdio(
        name="shouter", command=sys.executable, args=["-m", "tests.acp.mcp_stdio"],
        env=[EnvVariable(name="PYTHONPATH", value=str(ROOT))],
    )
    gone = McpServerStdio(name="gone", command=str(tmp_path / "no-such-server"), args=[], env=[])
    async with running_acp(tmp_path, model) as first:
        await first.initialize()
        session_id = await first.new_session(mcp_servers=[shouter, gone])
        model.enqueue(text_reply("Ready."))
        first.client.answers += ["allow_once", "allow_once"]  # both starts
        await first.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "hello"}])
        live = [u.content.text for u in first.client.of("agent_thought_chunk")]
        assert "MCP server shouter started, 1 tool.\n" in live

    async with running_acp(tmp_path, model) as second:
        await second.initialize()
        await second.conn.load_session(cwd=str(second.project), session_id=session_id, mcp_servers=[])
        thoughts = [u.content.text for u in second.client.of("agent_thought_chunk")]
        # The start, and the stop when the first process ended, are thoughts as they were live;
        # the failure is a message of its own paragraph.
        assert "MCP server shouter started, 1 tool.\n" in thoughts
        assert any(t.startswith("MCP server shouter stopped") for t in thoughts)
        said = second.client.message_text()
        assert "Ready." in said and "MCP server gone did not start" in said and "MCP server shouter" not in said


async def test_loading_a_session_open_here_checks_its_cwd_as_a_fresh_process_does(tmp_path, model):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with running_acp(tmp_path, model) as acp:
        (acp.project / "notes.txt").write_text("buy milk\n")
        await acp.initialize()
        session_id = await acp.new_session()
        model.enqueue(text_reply("Hello."))
        await acp.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "hi"}])

        before = len(acp.client.updates)
        await acp.conn.load_session(cwd=str(acp.project), session_id=session_id, mcp_servers=[])
        replayed = [u for u in acp.client.updates[before:] if u.session_update == "user_message_chunk"]
        assert [u.content.text for u in replayed] == ["hi"]

        with pytest.raises(RequestError) as here:
            await acp.conn.load_session(cwd=str(elsewhere), session_id=session_id, mcp_servers=[])
        # Refused, the session keeps its own project as its root.
        model.enqueue(tool_reply([("read", {"path": "notes.txt"})]), text_reply("Milk."))
        response = await acp.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "read the notes"}])
        assert response.stop_reason == "end_turn"
        assert "buy milk" in sent_messages(model.requests[-1])[-1]["content"]

    async with running_acp(tmp_path, model) as fresh:
        await fresh.initialize()
        with pytest.raises(RequestError) as there:
            await fresh.conn.load_session(cwd=str(elsewhere), session_id=session_id, mcp_servers=[])

    assert here.value.code == there.value.code == -32602
    assert str(here.value) == str(there.value)
    assert f"belongs to the project {(tmp_path / 'project').resolve()}, not {elsewhere.resolve()}" in str(here.value)
    assert here.value.data == there.value.data == {"errorClass": "SessionElsewhere"}


async def test_engine_refusals_keep_their_message_and_map_by_kind(acp):
    await acp.initialize()
    with pytest.raises(RequestError) as missing:  # not_found
        await acp.conn.load_session(cwd=str(acp.project), session_id="no-such-session", mcp_servers=[])
    assert missing.value.code == -32002 and str(missing.value) == "no session 'no-such-session'"

    session_id = await acp.new_session()
    with pytest.raises(RequestError) as unconfigured:  # config
        await acp.conn.set_config_option(config_id="model", session_id=session_id, value="nowhere/model")
    assert unconfigured.value.code == -32603 and unconfigured.value.data == {"errorClass": "ConfigError"}
    assert "nowhere" in str(unconfigured.value)

    slow = text_reply("Thinking", pieces=2)
    slow.events, slow.hold = slow.events[:3], 60
    acp.model.enqueue(slow)
    first = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "think"}]))
    await eventually(lambda: "Thinking" in acp.client.message_text())
    with pytest.raises(RequestError) as busy:  # busy (a prompt waits instead: test_queue.py)
        await acp.conn.set_config_option(config_id="thought_level", session_id=session_id, value="high")
    assert busy.value.code == -32600 and f"session {session_id} is busy" in str(busy.value)
    await acp.conn.cancel(session_id=session_id)
    assert (await asyncio.wait_for(first, 30)).stop_reason == "cancelled"
