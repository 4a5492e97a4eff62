"""totem/tools through the real ``totem lsp``: the tools a session's model is offered, and why
fewer than all, for a model with a 32K window; an unknown session is invalid."""

from __future__ import annotations

import asyncio

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import start_editor, to_dict
from tests.support.model_server import text_reply

WAIT = 15.0


async def call(editor, method: str, params) -> dict:
    return to_dict(await asyncio.wait_for(editor.request(method, params), WAIT))


async def test_a_32k_session_lists_its_core_tools_and_why_the_rest_are_left_out(tmp_path, model):
    editor = await start_editor(
        tmp_path, model, totem={"permission": True, "events": True},
        extra_config='code_mode = "never"\n[models."sim/test-model"]\ncontext_window = 32768\n',
    )
    try:
        model.enqueue(text_reply("hi"))
        session_id = (await call(editor, "totem/chat", {"text": "hi"}))["sessionId"]
        listed = await call(editor, "totem/tools", {"sessionId": session_id})
        assert [t["name"] for t in listed["tools"]] == ["bash", "edit", "glob", "grep", "read", "todo", "write"]
        assert all(t["description"] and t["refused"] is None for t in listed["tools"])
        assert "job" in listed["leftOut"] and "fetch" in listed["leftOut"]
        assert listed["narrowed"] == "the model's window (32,768 tokens) is under 65,536: it gets the core tools only"
        assert listed["contextWindow"] == 32768 and listed["model"] == "sim/test-model" and listed["mode"] == "build"
        assert listed["scripts"] is False

        await call(editor, "totem/setMode", {"sessionId": session_id, "mode": "plan"})
        planned = await call(editor, "totem/tools", {"sessionId": session_id})
        refused = {t["name"]: t["refused"] for t in planned["tools"] if t["refused"]}
        assert set(refused) >= {"bash", "edit", "write"} and "read" not in refused

        with pytest.raises(JsonRpcException, match="ses_nope"):
            await call(editor, "totem/tools", {"sessionId": "ses_nope"})
    finally:
        await editor.client.shutdown_session()
