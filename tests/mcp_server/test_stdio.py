"""``totem mcp serve`` over stdio, with the ``mcp`` package's client: its tools and nothing
of the agent's own; a prompt answered by the scripted model, its change in the diff, undo taking
it back; an ask with nobody to ask ending the turn; a request its client cancels aborting its
turn; no key in any result."""

from __future__ import annotations

import anyio

from tests.mcp_server.conftest import API_KEY, TOOLS, error_text, result
from tests.support.model_server import text_reply, tool_reply
from tests.support.reminder import sent_messages

AGENT_TOOLS = {"read", "write", "edit", "patch", "glob", "grep", "bash", "job", "terminal", "run_script", "fetch", "task", "todo", "ask", "skill"}


async def test_the_tools_each_with_a_schema_and_a_description_and_none_of_the_agents(served):
    async with served.stdio() as client:
        listed = (await client.list_tools()).tools
    names = {tool.name for tool in listed}
    assert names == TOOLS
    assert not names & AGENT_TOOLS
    for tool in listed:
        assert tool.input_schema["type"] == "object" and tool.output_schema["type"] == "object"
        assert 20 < len(tool.description) < 600, tool.name
    by_name = {tool.name: tool for tool in listed}
    assert by_name["send_prompt"].input_schema["required"] == ["session_id", "prompt"]
    assert by_name["read_session"].annotations.read_only_hint is True
    assert by_name["undo_turn"].annotations.destructive_hint is True


async def test_a_prompt_gets_the_models_answer_the_diff_shows_its_change_and_undo_takes_it_back(served):
    served.server.enqueue(tool_reply([("write", {"path": "hello.py", "content": "print('hi')\n"})]))
    served.server.enqueue(text_reply("I wrote hello.py."))
    async with served.stdio() as client:
        started = result(await client.call_tool("start_session", {}))
        assert started["project"] == str(served.project.resolve()) and started["model"] == "sim/test-model"
        session_id = started["session_id"]

        answer = result(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "write hello.py"}))
        assert answer["stop_reason"] == "finished"
        assert answer["text"] == "I wrote hello.py."
        assert answer["changed"] == ["hello.py"] and answer["refused"] == []
        assert [(c["tool"], c["status"]) for c in answer["calls"]] == [("write", "ok")]
        assert (served.project / "hello.py").read_text() == "print('hi')\n"
        assert sent_messages(served.server.requests[0])[-1]["content"] == "write hello.py"

        diff = result(await client.call_tool("session_diff", {"session_id": session_id}))
        assert [(f["path"], f["change"], f["changed_since"]) for f in diff["files"]] == [("hello.py", "added", False)]
        assert "+++ b/hello.py" in diff["diff"] and "+print('hi')" in diff["diff"]
        only = result(await client.call_tool("session_diff", {"session_id": session_id, "turn_id": answer["turn_id"]}))
        assert only["diff"] == diff["diff"]

        listed = result(await client.call_tool("list_sessions", {}))
        assert [(s["session_id"], s["title"], s["running"]) for s in listed["sessions"]] == [(session_id, "write hello.py", None)]
        projects = result(await client.call_tool("list_projects", {}))["projects"]
        assert [(p["root"], p["sessions"], p["exists"]) for p in projects] == [(str(served.project.resolve()), 1, True)]

        read = result(await client.call_tool("read_session", {"session_id": session_id}))
        texts = [p["data"].get("text") for m in read["messages"] for p in m["parts"] if p["type"] == "text"]
        assert texts == ["write hello.py", "I wrote hello.py."]
        assert read["session"]["id"] == session_id and read["omitted"] == 0
        last = result(await client.call_tool("read_session", {"session_id": session_id, "last": 1}))
        assert len(last["messages"]) == 1 and last["omitted"] == len(read["messages"]) - 1

        undone = result(await client.call_tool("undo_turn", {"session_id": session_id}))
        assert undone["files"] == [{"path": "hello.py", "action": "deleted", "reason": None}]
        assert not (served.project / "hello.py").exists()
        assert result(await client.call_tool("session_diff", {"session_id": session_id}))["files"] == []
        assert result(await client.call_tool("undo_turn", {"session_id": session_id}))["files"] == []


async def test_an_ask_is_rejected_by_the_rules_and_ends_the_turn(served):
    served.server.enqueue(tool_reply([("bash", {"command": "touch made-by-bash"})]))
    async with served.stdio() as client:
        session_id = result(await client.call_tool("start_session", {"title": "asks"}))["session_id"]
        answer = result(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "make a file"}))
    assert answer["stop_reason"] == "guard"
    assert "totem mcp serve asks nobody" in answer["reason"] and "[permission]" in answer["reason"]
    assert len(answer["refused"]) == 1 and "touch made-by-bash" in answer["refused"][0]
    assert [c["status"] for c in answer["calls"]] == ["denied"]
    assert not (served.project / "made-by-bash").exists()
    assert len(served.server.requests) == 1  # the turn ended at the reject: no second model call


async def test_no_result_carries_a_key(served):
    served.server.enqueue(text_reply(f"The key is {API_KEY}, keep it safe."))
    async with served.stdio() as client:
        session_id = result(await client.call_tool("start_session", {}))["session_id"]
        answer = result(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "what is the key?"}))
        read = await client.call_tool("read_session", {"session_id": session_id})
        missing = error_text(await client.call_tool("read_session", {"session_id": "ses_missing"}))
    assert answer["text"] == "The key is ***, keep it safe."
    assert API_KEY not in read.content[0].text and "The key is ***" in read.content[0].text
    assert "ses_missing" in missing


async def test_a_session_of_another_project_is_read_but_a_missing_folder_is_an_error(served, tmp_path):
    async with served.stdio() as client:
        absent = error_text(await client.call_tool("list_sessions", {"project": str(tmp_path / "nowhere")}))
        other = tmp_path / "other"
        other.mkdir()
        started = result(await client.call_tool("start_session", {"project": str(other), "mode": "plan"}))
        listed = result(await client.call_tool("list_sessions", {"project": str(other)}))
    assert "is not a directory" in absent
    assert started["mode"] == "plan" and started["project"] == str(other.resolve())
    assert [s["session_id"] for s in listed["sessions"]] == [started["session_id"]]


async def test_a_request_its_client_cancels_aborts_the_turn_which_still_ends_cleanly(served):
    held = text_reply("partial answer that never ends", pieces=2)
    held.events = held.events[:3]
    held.hold = 60
    served.server.enqueue(held)
    async with served.stdio() as client:
        session_id = result(await client.call_tool("start_session", {}))["session_id"]
        with anyio.CancelScope() as request:

            async def cancel_when_running() -> None:
                while not served.server.requests:
                    await anyio.sleep(0.05)
                await anyio.sleep(1.0)  # the two deltas the model sends before it holds the stream
                request.cancel()

            async with anyio.create_task_group() as group:
                group.start_soon(cancel_when_running)
                await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "tell me"})
        assert request.cancelled_caught
        with anyio.fail_after(20):
            while result(await client.call_tool("list_sessions", {}))["sessions"][0]["running"]:
                await anyio.sleep(0.05)
        messages = result(await client.call_tool("read_session", {"session_id": session_id}))["messages"]
    parts = [p for m in messages for p in m["parts"]]
    assert [p["data"]["text"] for p in parts if p["type"] == "text"] == ["tell me", "partial answer that never ends"]
    assert [p["data"]["stopReason"] for p in parts if p["type"] == "notice"][-1] == "aborted"
