"""run_script (code mode): a script run in its own process on a staged view of the project,
through a real turn (scripted provider, real folder, real child process)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support.turns import RecordingFrontEnd, Scene, answer, calls
from totem_engine.api import events as ev
from totem_engine.config import Config


@pytest.fixture
async def scene(tmp_path: Path):
    scene = Scene(tmp_path)
    (scene.root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (scene.root / "notes.txt").write_text("first\nsecond\n")
    yield scene
    await scene.close()


async def run(scene: Scene, script: str, *, outcome: str = "allow_once", **args) -> tuple[ev.ToolEnd, RecordingFrontEnd]:
    scene.provider.enqueue(calls(("run_script", {"script": textwrap.dedent(script), **args})), answer("done"))
    front = RecordingFrontEnd(outcome)
    await scene.run("do it", front)
    (end,) = front.of(ev.ToolEnd)
    return end, front


def contents(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_a_script_that_reads_and_edits_two_files_is_one_change_asked_once_and_undone_at_once(scene):
    end, front = await run(scene, """
        import totem
        print(totem.files("*.py"), totem.files())
        source = totem.read("calc.py")
        totem.edit("calc.py", "return a + b", "return a + b  # sum")
        totem.write("calc_test.py", "from calc import add\\n\\nassert add(1, 2) == 3\\n")
        totem.delete("notes.txt")
        print("staged; calc.py now reads:", totem.read("calc.py", offset=2).strip())
    """)
    assert end.status == "ok", end.output
    assert end.output.splitlines() == [
        "['calc.py'] ['calc.py', 'notes.txt']",
        "staged; calc.py now reads: return a + b  # sum",
        "[Changes: edited calc.py; created calc_test.py; deleted notes.txt]",
    ]
    assert contents(scene.root) == {
        "calc.py": b"def add(a, b):\n    return a + b  # sum\n",
        "calc_test.py": b"from calc import add\n\nassert add(1, 2) == 3\n",
    }
    (asked,) = front.asked
    assert asked.permission == "edit" and asked.paths == ["calc.py", "calc_test.py", "notes.txt"]
    assert "-    return a + b\n+    return a + b  # sum" in asked.diff and "+++ b/calc_test.py" in asked.diff
    outcomes = await scene.agent.snapshots.undo(scene.agent.workspace, session_id=scene.session_id, root=scene.root)
    assert len(outcomes) == 3
    assert contents(scene.root) == {"calc.py": b"def add(a, b):\n    return a + b\n", "notes.txt": b"first\nsecond\n"}


async def test_a_script_that_raises_after_editing_leaves_every_file_as_it_was(scene):
    before = contents(scene.root)
    end, front = await run(scene, """
        import totem
        totem.edit("calc.py", "a + b", "a - b")
        totem.write("new.py", "x = 1\\n")
        print("about to fail")
        raise ValueError("on purpose")
    """)
    assert end.status == "error"
    lines = end.output.splitlines()
    assert lines[0] == "Error: about to fail" and lines[1] == "Traceback (most recent call last):"
    assert '  File "script.py", line 6, in <module>' in lines and "ValueError: on purpose" in lines
    assert lines[-1] == "[The script failed (exit code 1); the project is unchanged.]"
    assert "host.py" not in end.output
    assert contents(scene.root) == before and front.asked == []


async def test_a_mismatched_edit_says_so_and_the_script_can_go_on(scene):
    end, _ = await run(scene, """
        import totem
        try:
            totem.edit("calc.py", "return a * b", "return a * b * 1")
        except totem.TotemError as error:
            print("refused:", error)
        try:
            totem.read("../outside.txt")
        except totem.TotemError as error:
            print("refused:", error)
    """)
    assert end.status == "ok"
    refused = [line for line in end.output.splitlines() if line.startswith("refused:")]
    assert "calc.py" in refused[0] and "return a + b" in end.output  # the file's real line, to copy
    assert "outside the project" in refused[1]
    assert end.output.endswith("[No changes]")


async def test_a_script_past_its_time_limit_is_killed_and_changes_nothing(scene):
    before = contents(scene.root)
    end, _ = await run(scene, """
        import time, totem
        totem.write("late.py", "x = 1\\n")
        print("sleeping", flush=True)
        time.sleep(60)
    """, timeout=1)
    assert end.status == "error" and end.output.startswith("Error: sleeping")
    assert "ran past its time limit of 1 s and was killed; the project is unchanged" in end.output
    assert contents(scene.root) == before


# Ways out of the API, and how each is refused (the audit hook, host.py; the sandbox's profile beneath).
DOORS = [
    ("open('{root}/calc.py', 'w').write('x')", "PermissionError: A script may not write"),
    ("open('{root}/calc.py').read()", "PermissionError: A script may not open"),
    ("import os; os.remove('{root}/notes.txt')", "PermissionError: A script may not change"),
    ("import os; os.listdir('{root}')", "PermissionError: A script may not list"),
    ("import subprocess; subprocess.run(['touch', '{root}/made'])", "PermissionError: A script may not start a process"),
    ("import os; os.system('touch {root}/made')", "PermissionError: A script may not start a process"),
    ("import socket; socket.create_connection(('127.0.0.1', 9))", "PermissionError: A script may not use the network"),
    ("import ctypes", "PermissionError: A script may not load native code"),
    ("import os; os.kill(1, 0)", "PermissionError: A script may not signal a process"),
    ("open('/tmp/totem-script-escape', 'w')", "PermissionError: A script may not write"),
    ("import pydantic", "ModuleNotFoundError: No module named 'pydantic'"),  # the standard library only
]


@pytest.mark.parametrize(("escape", "refused"), DOORS)
async def test_the_api_is_the_only_door_to_the_project(scene, escape, refused):
    before = contents(scene.root)
    end, _ = await run(scene, escape.format(root=scene.root))
    assert end.status == "error" and refused in end.output, end.output
    assert contents(scene.root) == before
    assert not Path("/tmp/totem-script-escape").exists()


async def test_a_script_may_use_its_scratch_folder(scene):
    end, _ = await run(scene, """
        import json, pathlib, tempfile
        pathlib.Path("work.json").write_text(json.dumps({"n": 2}))
        with tempfile.NamedTemporaryFile("w", delete=False) as handle:
            handle.write("x")
        print(json.loads(pathlib.Path("work.json").read_text())["n"] * 21)
    """)
    assert end.status == "ok" and end.output.splitlines() == ["42", "[No changes]"]


async def test_a_rejected_change_set_writes_nothing(scene):
    before = contents(scene.root)
    end, front = await run(scene, "import totem\ntotem.write('calc.py', 'broken\\n')\n", outcome="reject_once")
    assert end.status == "denied" and len(front.asked) == 1
    assert contents(scene.root) == before


async def test_run_sees_the_staged_edits_asks_like_bash_and_the_script_goes_on(scene):
    (scene.root / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    end, front = await run(scene, """
        import totem
        totem.edit("calc.py", "return a + b", "return a * b")
        broken = totem.tests()
        print("broken:", broken["exit_code"])
        totem.edit("calc.py", "return a * b", "return a + b")
        fixed = totem.run("python3 -m pytest -q -p no:cacheprovider test_calc.py")
        print("fixed:", fixed["exit_code"], "1 passed" in fixed["output"])
    """)
    assert end.status == "ok", end.output
    assert "broken: 1" in end.output and "fixed: 0 True" in end.output
    assert end.output.count("[Written before a command: edited calc.py]") == 2
    # The last line lists every change, those written before the commands included.
    assert "[Commands run: python3 -m pytest" in end.output and end.output.endswith("[Changes: edited calc.py]")
    # Asked: the staged edit before each command, then the command.
    assert [a.permission for a in front.asked] == ["edit", "bash", "edit", "bash"]
    assert (scene.root / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


async def test_a_refused_command_raises_in_the_script_and_a_failure_says_what_stays(scene):
    end, front = await run(scene, """
        import totem
        try:
            totem.run("touch made.txt")
        except totem.TotemError as error:
            print("refused:", error)
    """, outcome="reject_once")
    assert end.status == "ok" and "refused: Running `touch made.txt` was not allowed; nothing ran." in end.output
    assert not (scene.root / "made.txt").exists() and [a.permission for a in front.asked] == ["bash"]
    end, _ = await run(scene, """
        import totem
        totem.write("calc.py", "x = 1\\n")
        totem.run("true")
        raise RuntimeError("late")
    """)
    assert end.status == "error"
    assert "what was written before its commands stays (edited calc.py; undo takes it back)" in end.output


async def test_agent_mode_lets_a_script_import_the_project_but_never_write_it(tmp_path):
    scene = Scene(tmp_path, config=Config(agent_mode=True))
    (scene.root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    try:
        end, _ = await run(scene, """
            import calc
            print(calc.add(40, 2))
            open(calc.__file__, "a").write("# changed")
        """)
        assert end.output.startswith("Error: 42\n") and "PermissionError: A script may not write" in end.output
        assert (scene.root / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    finally:
        await scene.close()


async def test_without_agent_mode_the_project_is_not_importable(scene):
    end, _ = await run(scene, "import calc\n")
    assert "ModuleNotFoundError: No module named 'calc'" in end.output
