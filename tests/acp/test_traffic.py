"""Every message of a whole session, both ways, checked against ACP's JSON schema (schema_check.py):
a prompt with a plan, an allowed edit (its diff), a command in the client's terminal, a denied
write, a sub-agent; a prompt cancelled while its permission request is open; the options; then
``session/load`` and ``session/close`` in a fresh process."""

from __future__ import annotations

import asyncio

from tests.acp.conftest import eventually, running_acp
from tests.acp.schema_check import Traffic, problems
from tests.acp.test_terminal import TerminalClient
from tests.support.model_server import text_reply, tool_reply


# Without the sandbox (a sandboxed command stays in Totem); a known window (usage_update).
CONFIG = 'sandbox = "never"\n[models."sim/test-model"]\ncontext_window = 200000'


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


async def test_every_message_of_a_whole_session_validates_against_the_acp_schema(tmp_path, model):
    traffic = Traffic()
    client = TerminalClient(answers=["allow_once", "allow_once", "reject_once", "hold"], files={})
    todos = [{"content": "fix the greeting", "status": "in_progress"}]
    async with running_acp(tmp_path, model, client, config=CONFIG, observers=[traffic.observe]) as first:
        (first.project / "app.py").write_text("def greet():\n    return 'hi'\n")
        await first.initialize(fs=True, terminal=True)
        session_id = await first.new_session()
        model.enqueue(tool_reply([("todo", {"todos": todos})], text="Planning."))
        model.enqueue(tool_reply([("edit", {"path": "app.py", "old_string": "'hi'", "new_string": "'hello'"})]))
        model.enqueue(tool_reply([("bash", {"command": "echo terminal-$((6*7))"})]))
        model.enqueue(tool_reply([("write", {"path": "new.txt", "content": "x\n"})]))
        model.enqueue(tool_reply([("task", {"agent": "explore", "prompt": "find the greeting", "description": "find it"})]))
        model.enqueue(tool_reply([("read", {"path": "app.py"})]))  # the sub-agent's
        model.enqueue(text_reply("It is in app.py."))
        model.enqueue(text_reply("Done.", reasoning="All went in."))
        done = await first.conn.prompt(session_id=session_id, prompt=text("fix the greeting"))
        assert done.stop_reason == "end_turn"

        model.enqueue(tool_reply([("write", {"path": "other.txt", "content": "y\n"})]))
        asked = len(client.permissions)
        running = asyncio.ensure_future(first.conn.prompt(session_id=session_id, prompt=text("write other.txt")))
        await eventually(lambda: len(client.permissions) > asked)
        first.send_cancel(session_id)
        assert (await running).stop_reason == "cancelled"

        await first.conn.set_config_option(config_id="mode", session_id=session_id, value="plan")
        await first.conn.set_session_mode(session_id=session_id, mode_id="build")
        await first.conn.list_sessions(cwd=str(first.project))

    async with running_acp(tmp_path, model, observers=[traffic.observe]) as second:
        await second.initialize()
        await second.conn.load_session(cwd=str(second.project), session_id=session_id, mcp_servers=[])
        await second.conn.close_session(session_id=session_id)

    agent_sent, client_sent = traffic.methods("agent"), traffic.methods("client")
    # The traffic had what the test says it had.
    assert {"session/update", "session/request_permission", "fs/read_text_file", "fs/write_text_file", "terminal/create",
            "terminal/output", "terminal/release"} <= agent_sent
    assert {"initialize", "session/new", "session/prompt", "session/cancel", "session/set_config_option",
            "session/set_mode", "session/list", "session/load", "session/close"} <= client_sent
    kinds = {m["params"]["update"]["sessionUpdate"] for _, method, m in traffic.messages if method == "session/update" and "params" in m}
    assert {"plan", "tool_call", "tool_call_update", "agent_message_chunk", "agent_thought_chunk", "user_message_chunk",
            "available_commands_update", "current_mode_update", "config_option_update", "session_info_update", "usage_update"} <= kinds
    contents = {c["type"] for _, method, m in traffic.messages if method == "session/update"
                for c in m["params"]["update"].get("content") or [] if isinstance(c, dict) and "type" in c}
    assert {"diff", "terminal", "content"} <= contents

    # Totem's messages, and the SDK client's (a check of the check: they must pass too).
    assert [p for _, method, message in traffic.messages for p in problems(method, message)] == []


def test_the_check_finds_a_field_of_totems_own_and_a_value_the_schema_refuses():
    call = {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read a.py", "kind": "read", "status": "completed",
            "rawInput": {"anything": {"goes": 1}}, "_meta": {"totem": 1}}
    update = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": call}}
    assert problems("session/update", update) == []
    call["elapsed"] = 3
    assert problems("session/update", update) == ["session/update (SessionNotification): field /update/elapsed is not in the schema"]
    del call["elapsed"]
    call["status"] = "done"
    [refused] = problems("session/update", update)
    assert refused.startswith("session/update (SessionNotification) at /update:")
    answer = {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn", "usage": {"total": 1}}}
    assert problems("session/prompt", answer) == ["session/prompt (PromptResponse): field /usage is not in the schema"]
