"""Hooks through the real ``totem lsp`` (issue 36): a PreToolUse hook's block reaches the model
as the call's result and the editor as its toolEnd; ``totem/hooks`` lists them."""

from __future__ import annotations

import asyncio
import json
import sys

from tests.cli.test_hooks import VALIDATOR
from tests.lsp.conftest import start_editor, to_dict
from tests.support.model_server import text_reply, tool_reply

WAIT = 15.0


async def test_a_pre_tool_use_hook_blocks_a_command_in_the_editor_and_is_listed(tmp_path, model):
    validator = tmp_path / "validator.py"
    validator.write_text(VALIDATOR)
    hooks = f'[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = {json.dumps(f"{sys.executable} {validator}")}\ntimeout = 30\n'
    editor = await start_editor(
        tmp_path, model, totem={"permission": True, "question": True, "trust": True, "events": True}, extra_config=hooks,
    )
    try:
        (editor.project / "keep.txt").write_text("kept\n")
        model.enqueue(tool_reply([("bash", {"command": "rm -rf keep.txt"})]))
        model.enqueue(text_reply("I will not."))
        await asyncio.wait_for(editor.request("totem/chat", {"text": "clean up"}), WAIT)
        [end] = editor.of("toolEnd")
        assert end["status"] == "denied" and "rm -rf is not allowed here" in end["output"]
        assert editor.permissions == []  # denied before anyone was asked
        assert (editor.project / "keep.txt").exists()
        assert "rm -rf is not allowed here" in json.dumps(model.requests[1]["messages"])

        listed = to_dict(await asyncio.wait_for(editor.request("totem/hooks", {"uri": editor.uri("x")}), WAIT))
        assert listed == [{
            "event": "PreToolUse", "matcher": "Bash", "command": f"{sys.executable} {validator}", "timeout": 30.0,
            "source": listed[0]["source"], "active": True, "ignored": None,
        }]
        assert listed[0]["source"].endswith("totem/config.toml")
    finally:
        await editor.client.shutdown_session()
