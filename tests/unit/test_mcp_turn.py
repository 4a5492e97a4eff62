"""MCP servers in an in-process turn (totem_engine/mcp/servers.py, turn/loop.py): the stand-in
stdio server started for real, the model scripted. What starts, what is asked, what each step
offers."""

from __future__ import annotations

import json

import pytest

from tests.support.processes import none_left
from tests.support.real_mcp import standin, write_mcp_json
from tests.support.turns import SMALL, RecordingFrontEnd, Scene, answer, calls
from totem_engine.api import events as ev
from totem_engine.config import Config, load_config
from totem_engine.mcp.answers import stored_answer
from totem_engine.mcp.deferred import SchemaInput, fit_schemas, schema_tokens
from totem_engine.mcp.servers import McpServers
from totem_engine.mcp.specs import load_specs, project_mcp_path, user_mcp_path
from totem_engine.mcp.start import ask_start
from totem_engine.opening import open_runtime
from totem_engine.permissions import Policy
from totem_engine.providers.capabilities import CapabilityRecord
from totem_engine.tools.registry import tool_specs
from totem_engine.vocab.tools import ToolError


def offered(request) -> set[str]:
    return {spec.name for spec in request.tools}


def starts(front: RecordingFrontEnd) -> list[ev.ToolEnd]:
    return [e for e in front.of(ev.ToolEnd) if e.tool == "mcp-start"]


@pytest.fixture
async def scene(tmp_path):
    scene = Scene(tmp_path, mcp=True)
    yield scene
    await scene.close()
    assert none_left(scene.root) == []


async def test_a_server_switched_off_mid_turn_offers_nothing_at_the_next_step(scene):
    path = write_mcp_json(project_mcp_path(scene.root), {"echo": standin(), "other": standin()})
    scene.provider.enqueue(calls(("echo__echo", {"text": "one"})), calls(("echo__echo", {"text": "two"})), answer("Done."))
    front = RecordingFrontEnd()

    async def switch_off(event: ev.Event) -> None:
        front.events.append(event)
        if isinstance(event, ev.ToolEnd) and event.tool == "echo__echo" and event.output == "echo: one":
            write_mcp_json(path, {"echo": {**standin(), "enabled": False}, "other": standin()})

    front.emit = switch_off
    result = await scene.run("echo twice", front)

    assert result.stop_reason == "finished"
    first, second, _ = scene.provider.requests
    assert {"echo__echo", "other__echo"} <= offered(first)
    assert "echo__echo" not in offered(second) and "other__echo" in offered(second)
    outputs = [e.output for e in front.of(ev.ToolEnd) if e.tool == "echo__echo"]
    assert outputs[0] == "echo: one" and "There is no tool named 'echo__echo'" in outputs[1]
    assert any(e.message == "MCP server echo stopped: its entry in mcp.json changed." for e in front.of(ev.Notice))


async def test_a_sub_agent_gets_no_mcp_tools(scene):
    write_mcp_json(project_mcp_path(scene.root), {"echo": standin()})
    scene.provider.enqueue(
        calls(("task", {"agent": "general", "prompt": "look around", "description": "look"})), answer("Nothing here."), answer("Done."),
    )
    result = await scene.run("look around", RecordingFrontEnd())

    assert result.stop_reason == "finished"
    parent, sub, last = scene.provider.requests
    assert "echo__echo" in offered(parent) and "echo__echo" in offered(last)
    assert "read" in offered(sub) and not any("__" in name for name in offered(sub))


async def test_an_always_answer_is_kept_for_the_project_and_bound_to_the_command_line(scene):
    path = write_mcp_json(project_mcp_path(scene.root), {"echo": standin()})
    scene.provider.enqueue(answer("Hi."))
    front = RecordingFrontEnd("allow_always")
    await scene.run("hello", front)
    asked = [r for r in front.asked if r.tool == "mcp-start"]
    assert len(asked) == 1 and asked[0].always_pattern == "echo" and asked[0].input["server"] == "echo"
    target = asked[0].input["command"]
    assert stored_answer(scene.root, "echo", target) == "allow"

    # The next runtime of the same project (its servers all stopped): not asked again.
    await scene.mcp.aclose()
    scene.agent.mcp = scene.mcp = McpServers(scene.root, Config(forge=False), trusted=True)
    scene.provider.enqueue(answer("Hi."))
    front = RecordingFrontEnd("reject_once")
    await scene.run("hello", front)
    assert not front.asked and starts(front)[0].status == "ok"
    allowed = front.of(ev.Permission)[0]
    assert allowed.rule is not None and (allowed.rule.source, allowed.rule.pattern) == ("stored", target)

    # The project changes what the server runs: asked again.
    write_mcp_json(path, {"echo": standin("--noisy")})
    scene.provider.enqueue(answer("Hi."))
    front = RecordingFrontEnd("reject_once")
    await scene.run("hello", front)
    assert [r.tool for r in front.asked] == ["mcp-start"] and "--noisy" in front.asked[0].title
    assert starts(front)[0].status == "denied"


async def test_a_server_outside_this_machine_needs_a_person_unless_mcp_allow_names_it(scene):
    # Never started here: these machines reach no outside address, and no test may try.
    url = "https://forge.example.invalid/mcp/"
    write_mcp_json(user_mcp_path(), {"forge": {"url": url}})
    scene.provider.enqueue(answer("Hi."))
    front = RecordingFrontEnd("reject_once")
    await scene.run("hello", front)
    (request,) = front.asked
    assert request.needs_person and "outside this machine" in request.title and request.input == {"server": "forge", "url": url}

    (spec,) = load_specs(scene.root).values()
    host = _Host(RecordingFrontEnd("reject_once"))
    call = await ask_start(spec, host, policy=Policy(), config=Config(mcp_allow=[url]), root=scene.root)
    assert call.allowed and not host.frontend.asked
    (permission,) = host.frontend.of(ev.Permission)
    assert permission.decision == "allow" and permission.rule is not None and permission.rule.source == "user"


class _Host:
    session_id = "ses_1"

    def __init__(self, frontend: RecordingFrontEnd):
        self.frontend = frontend

    async def emit(self, event: ev.Event) -> None:
        await self.frontend.emit(event)


async def test_two_servers_whose_tools_get_one_name_are_an_error_naming_both(scene):
    write_mcp_json(project_mcp_path(scene.root), {"a.b": standin(), "a_b": standin()})
    scene.provider.enqueue(answer("Hi."))
    front = RecordingFrontEnd()
    await scene.run("hello", front)

    assert sorted(n for n in offered(scene.provider.requests[0]) if "__" in n) == ["a_b__echo"]
    errors = [e.message for e in front.of(ev.Notice) if e.level == "error"]
    assert errors == ["MCP tool names clash: two tools would both be called a_b__echo: a.b/echo and a_b/echo; a_b/echo is not offered."]


async def test_a_denied_start_by_rule_is_not_asked(tmp_path):
    scene = Scene(tmp_path, mcp=True)
    scene.agent.rules = [ev.RuleRef(source="user", permission="mcp-start", pattern="echo", action="deny")]
    write_mcp_json(project_mcp_path(scene.root), {"echo": standin()})
    scene.provider.enqueue(answer("Hi."))
    front = RecordingFrontEnd()
    await scene.run("hello", front)
    await scene.close()
    assert not front.asked and starts(front)[0].status == "denied"
    assert "rule mcp-start 'echo' -> deny (user)" in starts(front)[0].output


async def test_a_project_whose_only_project_file_is_mcp_json_is_asked_for_trust(tmp_path):
    root = tmp_path / "cloned"
    write_mcp_json(project_mcp_path(root), {"echo": standin()})
    asked: list[list[str]] = []

    async def ask(where, reasons) -> bool:
        asked.append(reasons)
        return False

    async with open_runtime(root, ask_trust=ask, start_local=False) as runtime:
        assert not runtime.trusted and not runtime.mcp.trusted
    assert asked == [[".totem/mcp.json"]]
    assert json.loads(project_mcp_path(root).read_text())["servers"]["echo"]
    assert load_config(root).config == Config()


async def test_schemas_over_their_share_of_the_window_are_offered_by_name_and_fetched_on_demand(scene):
    write_mcp_json(project_mcp_path(scene.root), {"echo": standin()})
    scene.provider.enqueue(answer("Hi."))
    await scene.run("hello", RecordingFrontEnd())
    served = scene.mcp.tools(set())
    (echo,) = served.values()
    cost = schema_tokens([echo])

    assert fit_schemas(served, window=128_000, share=0.1, small=False) is served  # within its share: full schemas
    deferred = fit_schemas(served, window=10_000, share=cost / 20_000, small=False)  # over its share
    assert sorted(deferred) == ["echo__echo", "mcp_schema"]
    assert deferred["echo__echo"].parameters() == {"type": "object"} and deferred["echo__echo"].description == "Echo the text back."
    assert schema_tokens(list(deferred.values())) > 0
    assert sorted(fit_schemas(served, window=None, share=0.1, small=True)) == ["echo__echo", "mcp_schema"]  # a small model: always
    tiny = fit_schemas(served, window=4096, share=0.1, small=True)  # the minimal surface: the name alone
    assert tiny["echo__echo"].description == "" and tool_specs(tiny, brief=True)[0].description == ""

    shown = await (await deferred["mcp_schema"].prepare(SchemaInput(tool="echo__echo"), None)).apply(None)
    assert shown.output.startswith("echo__echo: Echo the text back.") and '"required": ["text"]' in shown.output
    with pytest.raises(ToolError, match="There is no MCP tool 'nope'"):
        await deferred["mcp_schema"].prepare(SchemaInput(tool="nope"), None)


async def test_a_small_model_gets_the_servers_tools_by_name_and_one_line_and_calls_them(tmp_path):
    scene = Scene(tmp_path, record=SMALL, mcp=True)
    write_mcp_json(project_mcp_path(scene.root), {"echo": standin()})
    scene.provider.enqueue(calls(("echo__echo", {"text": "small"})), answer("It said small."))
    front = RecordingFrontEnd()
    result = await scene.run("say small through the echo server", front)
    await scene.close()

    assert result.stop_reason == "finished"
    first = scene.provider.requests[0]
    # Taught as text (the small model's record): one line per tool, the servers' among them.
    assert "echo__echo" in first.system and "mcp_schema" in first.system and "Echo the text back." in first.system
    assert '"required"' not in first.system  # no server schema until the model asks for one
    assert [e.output for e in front.of(ev.ToolEnd) if e.tool == "echo__echo"] == ["echo: small"]
    assert none_left(scene.root) == []


async def test_an_image_result_reaches_the_model_as_its_caption(scene):
    write_mcp_json(project_mcp_path(scene.root), {"cam": standin("--image")})
    scene.provider.enqueue(calls(("cam__picture", {})), answer("A grey picture."))
    await scene.run("show me the picture", RecordingFrontEnd())

    result = [m.text for m in scene.provider.requests[1].messages if m.role == "tool"][-1]
    assert result.startswith("Here it is.\n[image: cam__picture result, 640x480 PNG, ")
    assert "base64" not in result and len(result) < 200
    assert not any(m.images for m in scene.provider.requests[1].messages)  # the test model does not see images


async def test_an_image_result_reaches_a_vision_model_once_then_its_caption(tmp_path):
    scene = Scene(tmp_path, mcp=True, record=CapabilityRecord(context_window=128_000, vision=True))
    write_mcp_json(project_mcp_path(scene.root), {"cam": standin("--image")})
    scene.provider.enqueue(calls(("cam__picture", {})), calls(("cam__echo", {"text": "again"})), answer("A grey picture."))
    await scene.run("show me the picture", RecordingFrontEnd())
    await scene.close()
    assert none_left(scene.root) == []

    second, third = scene.provider.requests[1:]
    [picture] = [m for m in second.messages if m.role == "tool"]
    assert [image.mime_type for image in picture.images] == ["image/png"]
    assert picture.text.startswith("Here it is.\n[image: cam__picture result, 640x480 PNG, ")
    later = [m for m in third.messages if m.role == "tool"]
    assert [m.images for m in later] == [(), ()] and later[0].text == picture.text
