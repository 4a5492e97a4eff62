"""``session/load`` replays a stored session; the client's file system and MCP servers are used."""

from __future__ import annotations

import asyncio
import sys

from acp.schema import EnvVariable, McpServerStdio

from tests.acp.conftest import ROOT, Client, running_acp
from tests.support.model_server import text_reply, tool_reply
from tests.support.processes import none_left


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
        assert "y = 2" in model.requests[1]["messages"][-1]["content"]  # the agent read the buffer
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
    assert acp.model.requests[1]["messages"][-1]["content"] == "HELLO THERE"

    acp.process.stdin.close()  # the client goes: the session's server is stopped with the process
    assert await asyncio.wait_for(acp.process.wait(), 30) == 0
    assert none_left(acp.project) == []
