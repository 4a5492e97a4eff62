"""MCP servers through the real ``totem lsp`` (issue 24): starting a server is a ``totem/permission``
request for a pseudo call (tool ``mcp-start``) that names the command, sent as toolStart/toolEnd
too; the server's tool calls stream as events; shutdown stops the servers."""

from __future__ import annotations

import pytest_asyncio

from tests.lsp.conftest import start_editor
from tests.lsp.test_chat import eventually
from tests.support.model_server import text_reply, tool_reply
from tests.support.processes import none_left, running_in
from tests.support.real_mcp import real_entries, standin, write_mcp_json
from tests.support.reminder import sent_messages


@pytest_asyncio.fixture
async def editor(tmp_path, model):
    project = tmp_path / "project"
    project.mkdir()
    write_mcp_json(tmp_path / "home" / "config" / "totem" / "mcp.json", real_entries(project))
    editor = await start_editor(tmp_path, model, totem={"permission": True, "question": True, "trust": True, "events": True})
    yield editor
    if not editor.client.stopped:  # the test shut it down itself, to see what it leaves
        await editor.client.shutdown_session()


async def test_the_start_is_asked_naming_the_command_and_the_servers_tool_events_stream(editor):
    (editor.project / "todo.txt").write_text("ship it\n")
    editor.model.enqueue(tool_reply([("fs__read_text_file", {"path": str(editor.project / "todo.txt")})]))
    editor.model.enqueue(text_reply("Ship it."))
    editor.permission_answers += [{"outcome": "allow_once"}, {"outcome": "reject_once"}, {"outcome": "allow_once"}]
    result = await editor.request("totem/chat", {"text": "what is on my list?"})

    assert result.stopReason == "finished" and result.text == "Ship it."
    fs_start, time_start, call = editor.permissions
    assert fs_start["tool"] == "mcp-start" and fs_start["permission"] == "mcp-start" and fs_start["alwaysPattern"] == "fs"
    assert fs_start["title"].startswith("Start MCP server fs: ") and "node" in fs_start["title"]
    assert fs_start["title"].endswith(str(editor.project)) and fs_start["input"]["server"] == "fs"
    assert time_start["alwaysPattern"] == "time" and "mcp-server-time" in time_start["title"]
    assert (call["tool"], call["permission"], call["alwaysPattern"]) == ("fs__read_text_file", "mcp", "fs__read_text_file")
    # Each start is a pseudo call clients already show: its own call id, toolStart and toolEnd.
    started = {e["callId"]: e for e in editor.of("toolStart")}
    ended = {e["callId"]: e for e in editor.of("toolEnd")}
    assert started[fs_start["callId"]]["tool"] == "mcp-start" and ended[fs_start["callId"]]["status"] == "ok"
    assert ended[time_start["callId"]]["status"] == "denied"
    assert len({fs_start["callId"], time_start["callId"], call["callId"]}) == 3
    # The server's tool call streams like any other, its result in the model's next request.
    assert started[call["callId"]]["tool"] == "fs__read_text_file"
    assert ended[call["callId"]]["status"] == "ok" and ended[call["callId"]]["output"] == "ship it\n"
    assert not any(t["function"]["name"].startswith("time__") for t in editor.model.requests[0]["tools"])
    assert sent_messages(editor.model.requests[1])[-1]["content"] == "ship it\n"
    assert any(e["message"].startswith("MCP server fs started") for e in editor.of("notice"))

    # The server stays for the next turn of the open project: not asked again.
    editor.model.enqueue(text_reply("Still here."))
    editor.permission_answers.append({"outcome": "reject_once"})
    await editor.request("totem/chat", {"text": "again", "sessionId": result.sessionId})
    assert [p["tool"] for p in editor.permissions[3:]] == ["mcp-start"]  # only time, which was refused
    assert any(t["function"]["name"] == "fs__read_text_file" for t in editor.model.requests[-1]["tools"])

    await editor.client.shutdown_session()
    assert none_left(editor.project) == []


async def test_servers_unused_for_mcp_idle_stop_seconds_are_stopped_and_said(tmp_path, model):
    project = tmp_path / "project"
    project.mkdir()
    write_mcp_json(tmp_path / "home" / "config" / "totem" / "mcp.json", {"echo": standin()})
    editor = await start_editor(tmp_path, model, totem={"permission": True, "events": True}, extra_config="mcp_idle_stop = 0.5")
    try:
        editor.model.enqueue(text_reply("Hi."))
        editor.permission_answers.append({"outcome": "allow_once"})
        result = await editor.request("totem/chat", {"text": "hello"})
        assert running_in(project)
        await eventually(lambda: any("stopped: unused for 0.5 s" in e["message"] for e in editor.of("notice")))
        assert none_left(project) == []

        # The session keeps what the server said, the idle stop after the turn too, in that turn;
        # a reopened chat shows them.
        session = await editor.request("totem/session", {"sessionId": result.sessionId})
        kept = [(m.turnId, p.data.text) for m in session.messages for p in m.parts if p.type == "notice"]
        assert [text for _, text in kept] == ["MCP server echo started, 1 tool.", "MCP server echo stopped: unused for 0.5 s."]
        assert {turn for turn, _ in kept} == {session.messages[0].turnId}
    finally:
        await editor.client.shutdown_session()
