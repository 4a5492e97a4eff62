"""Plan mode against every tool a turn has (issue 34, hole 1): the built-in ones, an MCP server's
and the ``task`` tool. Each tool that can change the project has a call here that changes a file
when allowed (checked in build mode); in plan mode, with every rule allowing and the user
answering "always", the same call is refused and the file stays as it was. A tool added without
a call here fails the test unless it declares that it cannot change anything."""

from __future__ import annotations

import anyio
import pytest

from tests.support.processes import none_left
from tests.support.real_mcp import standin, write_mcp_json
from tests.support.turns import RecordingFrontEnd, Scene, answer, calls
from totem_engine.api import events as ev
from totem_engine.config import Config
from totem_engine.mcp.specs import project_mcp_path

ORIGINAL = "one\n"

# Per tool: a call that changes a.txt (which holds ORIGINAL) when it is allowed.
CHANGING = {
    "write": {"path": "a.txt", "content": "changed\n"},
    "edit": {"path": "a.txt", "old_string": "one", "new_string": "changed"},
    "patch": {"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+changed\n"},
    "bash": {"command": "echo changed > a.txt"},
    "run_script": {"script": "import totem\ntotem.write('a.txt', 'changed\\n')\n"},
    "job": {"action": "start", "command": "echo changed > a.txt"},
    "terminal": {"action": "start", "command": "echo changed > a.txt"},
    "task": {"agent": "general", "prompt": "change a.txt", "description": "change it"},
    "notes__write_note": {"path": "a.txt", "text": "changed\n"},
}
# What the sub-agent does when its task runs (build mode only).
SUB_AGENT = [calls(("read", {"path": "a.txt"}), ("write", {"path": "a.txt", "content": "changed\n"})), answer("Changed.")]


def _scene(tmp_path, **config) -> Scene:
    scene = Scene(tmp_path, jobs=True, mcp=True, config=Config(forge=False, **config))
    (scene.root / "a.txt").write_text(ORIGINAL)
    write_mcp_json(project_mcp_path(scene.root), {"notes": standin("--writer")})
    return scene


def _tree(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".totem" not in p.parts}


async def _settled(scene: Scene) -> str:
    """a.txt once the session's jobs and terminals have ended (they run on after the call)."""
    await scene.close()
    return (scene.root / "a.txt").read_text()


async def test_every_tool_that_can_change_the_project_is_refused_in_plan_mode(tmp_path):
    scene = _scene(tmp_path, permission={"*": "allow"})
    scene.provider.enqueue(calls(("read", {"path": "a.txt"})))
    for number, (name, arguments) in enumerate(CHANGING.items()):
        # A read that brings something new between the refusals: the guards let the turn go on.
        (scene.root / f"note{number}.txt").write_text(f"note {number}\n")
        scene.provider.enqueue(calls(("read", {"path": f"note{number}.txt"}), (name, arguments)))
    scene.provider.enqueue(calls(("notes__echo", {"text": "read-only"})), answer("Here is the plan."))
    before = _tree(scene.root)
    front = RecordingFrontEnd("allow_always")
    turn = await scene.turn("plan the change", front, mode="plan")
    result = await turn.run()

    assert result.stop_reason == "finished"
    unlisted = sorted(name for name, tool in turn.tools.items() if tool.can_change and name not in CHANGING)
    assert unlisted == [], f"tools that can change the project without a call in CHANGING: {unlisted}"
    assert {"notes__write_note", "notes__echo", "task", "job", "terminal"} <= set(turn.tools)
    ends = {e.call_id: e for e in front.of(ev.ToolEnd)}
    starts = {e.call_id: e.tool for e in front.of(ev.ToolStart)}
    decisions = {starts[p.call_id]: p for p in front.of(ev.Permission) if starts[p.call_id] != "read"}
    for name in CHANGING:
        assert decisions[name].decision == "deny" and decisions[name].rule.source == "mode", name
    assert [r.tool for r in front.asked if r.tool in CHANGING] == []
    assert [e.status for e in ends.values() if e.tool == "notes__echo"] == ["ok"]  # readOnlyHint: allowed
    assert await _settled(scene) == ORIGINAL
    assert _tree(scene.root) == before
    assert none_left(scene.root) == []


@pytest.mark.parametrize("name", sorted(CHANGING))
async def test_each_call_of_the_table_changes_the_file_in_build_mode(tmp_path, name):
    scene = _scene(tmp_path, permission={"*": "allow"})
    scene.provider.enqueue(calls(("read", {"path": "a.txt"}), (name, CHANGING[name])))
    if name == "task":
        scene.provider.enqueue(*SUB_AGENT)
    if name == "terminal":  # the terminal's program ends by itself; its change is taken in when read
        scene.provider.enqueue(calls(("terminal", {"action": "read", "id": "term1"})))
    scene.provider.enqueue(answer("Done."))
    result = await scene.run("change a.txt", RecordingFrontEnd("allow_always"))

    assert result.stop_reason == "finished"
    for _ in range(100):  # a job's command runs on after its call
        if (scene.root / "a.txt").read_text() != ORIGINAL:
            break
        await anyio.sleep(0.05)
    assert await _settled(scene) == "changed\n"
