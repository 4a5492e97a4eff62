"""The sessions' transcripts and diffs as resources, and the protocol errors the spec words:
through the ``mcp`` package's client over stdio (the 2025-11-25 handshake)."""

from __future__ import annotations

import json

import pytest
from mcp.shared.exceptions import MCPError

from tests.mcp_server.conftest import result
from tests.support.model_server import text_reply, tool_reply


async def test_a_sessions_transcript_and_diff_are_resources(served):
    served.server.enqueue(tool_reply([("write", {"path": "notes.txt", "content": "hello\n"})]))
    served.server.enqueue(text_reply("I wrote notes.txt."))
    async with served.stdio() as client:
        capabilities = client.initialize_result.capabilities
        templates = {t.uri_template: t.mime_type for t in (await client.list_resource_templates()).resource_templates}
        session_id = result(await client.call_tool("start_session", {}))["session_id"]
        result(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "write notes.txt"}))
        transcript = (await client.read_resource(f"totem://session/{session_id}/transcript")).contents[0]
        diff = (await client.read_resource(f"totem://session/{session_id}/diff")).contents[0]
        exported = result(await client.call_tool("read_session", {"session_id": session_id}))
    assert capabilities.resources is not None and capabilities.prompts is None
    assert templates == {
        "totem://session/{session_id}/transcript": "application/json", "totem://session/{session_id}/diff": "text/x-diff",
    }
    assert transcript.mime_type == "application/json"
    assert json.loads(transcript.text)["messages"] == exported["messages"]
    assert diff.mime_type == "text/x-diff"
    assert "+++ b/notes.txt" in diff.text and "+hello" in diff.text


async def test_unknown_names_are_protocol_errors(served):
    async with served.stdio() as client:
        with pytest.raises(MCPError) as tool:
            await client.call_tool("no_such_tool", {})
        with pytest.raises(MCPError) as resource:
            await client.read_resource("totem://session/ses_missing/transcript")
        with pytest.raises(MCPError) as elsewhere:
            await client.read_resource("file:///etc/hostname")
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("anything")
        assert result(await client.call_tool("list_projects", {}))["projects"] == []  # still serving
    assert (tool.value.code, tool.value.message) == (-32602, "Unknown tool: no_such_tool")
    assert resource.value.code == -32002 and "ses_missing" in resource.value.message  # 2025-11-25's code
    assert elsewhere.value.code == -32002
    assert prompt.value.code == -32601  # no prompts: the method is not served
