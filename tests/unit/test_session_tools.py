"""The tools a session has (api/session_tools.py, ``Engine.session_tools``) and what the model is
told when it calls one its window left out (turn/calls.py), against the scripted loopback model
server: a 32K window narrows the set to the core tools, and both say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.model_server import ModelServer, text_reply, tool_reply
from tests.support.turns import RecordingFrontEnd
from totem_engine.api import events as ev
from totem_engine.api.engine import open_project


@pytest.fixture
def server():
    with ModelServer() as srv:
        yield srv


def _config(tmp_path: Path, server: ModelServer, window: int) -> tuple[Path, Path]:
    root = tmp_path / "project"
    root.mkdir()
    config = tmp_path / "totem.toml"
    config.write_text(
        'model = "sim/test-model"\nforge = false\ncode_mode = "never"\n'
        f'[providers.sim]\nkind = "openai"\nbase_url = "{server.base_url}"\napi_key = "k"\n'
        f'[models."sim/test-model"]\ncontext_window = {window}\n'
    )
    return root, config


async def test_a_32k_window_narrows_the_tools_and_both_the_list_and_the_model_say_why(tmp_path, server):
    root, config = _config(tmp_path, server, 32_768)
    async with open_project(root, holder="test", config_file=config, start_local=False) as engine:
        server.enqueue(tool_reply([("job", {"action": "start", "command": "python3 -m http.server"})]))
        server.enqueue(text_reply("I cannot."))
        front = RecordingFrontEnd()
        result = await (await engine.prompt("start a dev server", front)).result()

        (end,) = [e for e in front.of(ev.ToolEnd) if e.tool == "job"]
        assert end.status == "error"
        assert "There is no tool named 'job' in this session: the model's window (32,768 tokens) is under 65,536" in end.output
        assert "Available tools: bash, edit, glob, grep, read, todo, write." in end.output

        listed = await engine.session_tools(result.session_id)
        names = [tool.name for tool in listed.tools]
        assert names == ["bash", "edit", "glob", "grep", "read", "todo", "write"]
        assert {"job", "fetch", "task", "terminal"} <= set(listed.left_out)
        assert listed.narrowed == "the model's window (32,768 tokens) is under 65,536: it gets the core tools only"
        assert listed.window == 32_768 and listed.model == "sim/test-model" and listed.mode == "build"
        assert all(tool.description and tool.refused is None for tool in listed.tools)


async def test_a_large_window_has_every_tool_and_plan_mode_marks_what_it_refuses(tmp_path, server):
    root, config = _config(tmp_path, server, 200_000)
    async with open_project(root, holder="test", config_file=config, start_local=False) as engine:
        session = await engine.new_session(mode="plan")
        listed = await engine.session_tools(session.id)
        names = {tool.name for tool in listed.tools}
        assert {"job", "fetch", "task", "terminal", "bash", "read"} <= names
        assert listed.left_out == [] and listed.narrowed is None
        refused = {tool.name for tool in listed.tools if tool.refused}
        assert {"write", "edit", "bash", "job"} <= refused and not {"read", "grep", "glob", "todo"} & refused
