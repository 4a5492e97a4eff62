"""Agents and slash commands over the real language server: totem/agents, agentSave,
agentDelete, totem/commands, a command in the chat, and a sub-agent's events nested."""

from __future__ import annotations

import asyncio

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import start_editor, to_dict
from tests.support.model_server import text_reply, tool_reply
from tests.support.reminder import sent_messages

WAIT = 15.0


async def call(editor, method: str, params) -> object:
    return to_dict(await asyncio.wait_for(editor.request(method, params), WAIT))


async def test_agents_are_listed_saved_and_deleted(editor):
    listed = await call(editor, "totem/agents", {})
    by_name = {a["name"]: a for a in listed}
    assert by_name["explore"]["source"] == "built-in" and by_name["explore"]["file"].endswith("explore.md")
    assert by_name["general"]["tools"] is None

    saved = await call(
        editor, "totem/agentSave",
        {"name": "reviewer", "description": "Reviews", "prompt": "Review.", "scope": "project", "tools": ["read", "grep"], "deny": ["bash"]},
    )
    assert saved["file"] == str(editor.project / ".totem" / "agents" / "reviewer.md")
    reviewer = next(a for a in await call(editor, "totem/agents", {}) if a["name"] == "reviewer")
    assert (reviewer["source"], reviewer["tools"], reviewer["deny"]) == ("project", ["read", "grep"], ["bash"])

    with pytest.raises(JsonRpcException, match="not a word"):
        await call(editor, "totem/agentSave", {"name": "a b", "description": "d", "prompt": "p"})
    deleted = await call(editor, "totem/agentDelete", {"name": "reviewer"})
    assert deleted["file"] == saved["file"]
    assert "reviewer" not in {a["name"] for a in await call(editor, "totem/agents", {})}
    with pytest.raises(JsonRpcException, match="built in"):
        await call(editor, "totem/agentDelete", {"name": "explore"})


async def test_commands_are_listed_and_a_command_in_the_chat_is_expanded(editor):
    folder = editor.project / ".totem" / "commands"
    folder.mkdir(parents=True)
    (folder / "fix.md").write_text("---\ndescription: Fix a bug\n---\nFind and fix $ARGUMENTS.\n")
    listed = {c["name"]: c for c in await call(editor, "totem/commands", {})}
    assert (listed["fix"]["description"], listed["fix"]["source"]) == ("Fix a bug", "project")
    assert listed["init"]["source"] == "built-in" and listed["undo"]["file"] is None

    editor.model.enqueue(text_reply("Fixed."))
    result = await asyncio.wait_for(editor.request("totem/chat", {"text": "/fix the login bug"}), WAIT)
    assert result.stopReason == "finished"
    assert sent_messages(editor.model.requests[0])[-1]["content"] == "Find and fix the login bug."
    session = await call(editor, "totem/session", {"sessionId": result.sessionId})
    [part] = [p for p in session["messages"][0]["parts"] if p["type"] == "text"]
    assert part["data"]["typed"] == "/fix the login bug"



async def test_compact_and_undo_typed_in_the_chat_act_on_the_session_without_a_turn(editor):
    editor.permission_answers.append({"outcome": "allow_once"})
    editor.model.enqueue(tool_reply([("write", {"path": "a.txt", "content": "new\n"})]), text_reply("Wrote it."))
    first = await asyncio.wait_for(editor.request("totem/chat", {"text": "write a.txt"}), WAIT)
    assert (editor.project / "a.txt").exists()

    editor.model.enqueue(text_reply("The user had a.txt written."))
    compacted = await asyncio.wait_for(editor.request("totem/chat", {"text": "/compact", "sessionId": first.sessionId}), WAIT)
    assert compacted.stopReason == "finished" and compacted.text.startswith("Compacted: 3 messages")  # user, call with result, answer
    assert "tools" not in editor.model.requests[-1]  # the summary request, not a turn
    nothing = await call(editor, "totem/compact", {"sessionId": first.sessionId})
    assert nothing == {"compacted": False, "messages": 0}
    session = await call(editor, "totem/session", {"sessionId": first.sessionId})
    assert [p["data"]["text"] for m in session["messages"] for p in m["parts"] if p["type"] == "checkpoint"] == [
        "The user had a.txt written."
    ]

    undone = await asyncio.wait_for(editor.request("totem/chat", {"text": "/undo", "sessionId": first.sessionId}), WAIT)
    assert "a.txt" in undone.text and not (editor.project / "a.txt").exists()
    assert len(editor.model.requests) == 3
    with pytest.raises(JsonRpcException, match="send sessionId"):
        await editor.request("totem/chat", {"text": "/compact"})

def _script(model) -> None:
    model.enqueue(
        tool_reply([("task", {"agent": "explore", "prompt": "find it", "description": "find"})]),
        text_reply("It is in a.py."),
        text_reply("Found: a.py."),
    )


async def test_a_client_that_does_not_declare_sub_agents_gets_none_of_their_events(editor):
    _script(editor.model)
    result = await asyncio.wait_for(editor.request("totem/chat", {"text": "where is it?"}), WAIT)
    assert result.text == "Found: a.py."
    assert not [e for e in editor.events if "parentCallId" in e]
    assert [e["tool"] for e in editor.of("toolEnd")] == ["task"]


async def test_a_sub_agents_events_arrive_nested_under_its_task_call(tmp_path, model):
    editor = await start_editor(tmp_path, model, totem={"permission": True, "question": True, "trust": True, "events": True, "subAgents": True})
    try:
        await _nested(editor)
    finally:
        await editor.client.shutdown_session()


async def _nested(editor) -> None:
    editor.model.enqueue(
        tool_reply([("task", {"agent": "explore", "prompt": "find it", "description": "find"})]),
        text_reply("It is in a.py."),
        text_reply("Found: a.py."),
    )
    result = await asyncio.wait_for(editor.request("totem/chat", {"text": "where is it?"}), WAIT)
    assert result.stopReason == "finished" and result.text == "Found: a.py."
    nested = [e for e in editor.events if e.get("parentCallId")]
    assert nested and {e["agent"] for e in nested} == {"explore"}
    [task_start] = [e for e in editor.of("toolStart") if e["tool"] == "task"]
    assert {e["parentCallId"] for e in nested} == {task_start["callId"]}
    kinds = [e["kind"] for e in editor.events]
    assert kinds.count("turnStart") == 1 and kinds.count("turnEnd") == 1
    start, end = editor.events.index(task_start), next(i for i, e in enumerate(editor.events) if e["kind"] == "toolEnd" and e["tool"] == "task")
    assert all(start < editor.events.index(e) < end for e in nested)
    assert editor.events[end]["output"] == "It is in a.py."
