"""A script's ``run()`` and ``tests()`` in the sandbox (codemode/overlaid.py): the command runs in
a real bubblewrap overlay of the project seeded with the script's stage, what it writes goes back
into the stage, and the script's changes and the command's are one change set, asked once,
undone at once; nothing reaches the project before that."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tests.support.turns import RecordingFrontEnd, Scene, answer, calls
from tests.unit.test_run_script import DOORS
from totem_engine import events as ev
from totem_engine.frontend import PermissionReply, PermissionRequest


@pytest.fixture
async def scene(tmp_path: Path):
    scene = Scene(tmp_path, sandbox=True)
    (scene.root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (scene.root / "notes.txt").write_text("first\n")
    (scene.root / "old.txt").write_text("old\n")
    (scene.root / "tool.sh").write_text("#!/bin/sh\necho tool ran\n")
    (scene.root / "tool.sh").chmod(0o755)
    (scene.root / "pkg").mkdir()
    (scene.root / "pkg" / "a.py").write_text("A = 1\n")
    (scene.root / "pkg" / "b.py").write_text("B = 2\n")
    yield scene
    await scene.close()


def contents(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


class Watching(RecordingFrontEnd):
    """Also keeps the project's files as they were at each question."""

    def __init__(self, root: Path, outcome: str = "allow_once"):
        super().__init__(outcome)
        self.root = root
        self.seen: list[dict[str, bytes]] = []

    async def permission(self, request: PermissionRequest) -> PermissionReply:
        self.seen.append(contents(self.root))
        return await super().permission(request)


async def run(scene: Scene, script: str, *, outcome: str = "allow_once") -> tuple[ev.ToolEnd, Watching]:
    scene.provider.enqueue(calls(("run_script", {"script": textwrap.dedent(script)})), answer("done"))
    front = Watching(scene.root, outcome)
    await scene.run("do it", front)
    (end,) = front.of(ev.ToolEnd)
    return end, front


async def test_a_command_sees_the_stage_and_what_it_writes_joins_the_one_change_set(scene):
    before = contents(scene.root)
    end, front = await run(scene, """
        import totem
        totem.edit("calc.py", "a + b", "a * b")
        totem.edit("tool.sh", "tool ran", "tool edited")
        totem.delete("notes.txt")
        ran = totem.run("grep -c 'a [*] b' calc.py > count.txt; test -e notes.txt && echo seen || echo gone; rm old.txt; ./tool.sh")
        print(ran["exit_code"], ran["output"].split())
        print("count:", totem.read("count.txt").strip(), "old:", totem.files("old.txt"))
    """)
    assert end.status == "ok", end.output
    # The command saw the staged edits (and an edited script kept its mode), not the staged delete.
    assert "0 ['gone', 'tool', 'edited']" in end.output and "count: 1 old: []" in end.output
    assert end.output.endswith(
        "[Changes: edited calc.py; edited tool.sh; deleted notes.txt; created count.txt; deleted old.txt]"
    )
    # The command was asked as bash; then one question for the whole change set, which names the
    # command, while the project was still exactly as it was.
    assert [a.permission for a in front.asked] == ["bash", "edit"]
    assert front.seen == [before, before]
    change = front.asked[1]
    assert sorted(change.paths) == ["calc.py", "count.txt", "notes.txt", "old.txt", "tool.sh"]
    assert "(after running `grep -c" in change.title and "+++ b/count.txt" in change.diff
    assert contents(scene.root) == {
        "calc.py": b"def add(a, b):\n    return a * b\n",
        "count.txt": b"1\n",
        "pkg/a.py": b"A = 1\n",
        "pkg/b.py": b"B = 2\n",
        "tool.sh": b"#!/bin/sh\necho tool edited\n",
    }
    assert os.access(scene.root / "tool.sh", os.X_OK)
    await scene.agent.snapshots.undo(scene.agent.workspace, session_id=scene.session_id, root=scene.root)
    assert contents(scene.root) == before


async def test_a_script_that_raises_after_a_command_leaves_the_project_byte_for_byte(scene):
    before = contents(scene.root)
    end, front = await run(scene, """
        import totem
        totem.edit("calc.py", "a + b", "a - b")
        print(totem.run("sed -i s/first/changed/ notes.txt && touch made.txt && rm old.txt")["exit_code"])
        print(totem.read("notes.txt").strip(), totem.files("made.txt"))
        raise RuntimeError("late")
    """)
    assert end.status == "error"
    assert "0\nchanged ['made.txt']" in end.output and "RuntimeError: late" in end.output
    assert end.output.endswith("[The script failed (exit code 1); the project is unchanged.]")
    assert [a.permission for a in front.asked] == ["bash"]
    assert contents(scene.root) == before


async def test_a_command_deleting_files_and_folders_is_read_back_as_deletes(scene):
    end, _ = await run(scene, """
        import totem
        totem.write("fresh.txt", "made by the script\\n")
        totem.write("pkg/c.py", "C = 3\\n")
        totem.run("rm fresh.txt && rm -rf pkg && mkdir pkg && echo 'A = 10' > pkg/a.py")
        print(totem.files())
    """)
    assert end.status == "ok", end.output
    assert "['calc.py', 'notes.txt', 'old.txt', 'pkg/a.py', 'tool.sh']" in end.output
    # fresh.txt was made and removed, pkg/c.py too: no change; the folder made again hides b.py.
    assert end.output.endswith("[Changes: edited pkg/a.py; deleted pkg/b.py]")
    assert sorted(p.relative_to(scene.root).as_posix() for p in (scene.root / "pkg").iterdir()) == ["pkg/a.py"]
    assert (scene.root / "pkg" / "a.py").read_text() == "A = 10\n" and not (scene.root / "fresh.txt").exists()


async def test_a_folder_a_command_removes_is_every_file_of_it_deleted(scene):
    end, _ = await run(scene, """
        import totem
        totem.run("rm -r pkg")
        print(totem.files("pkg/**"))
    """)
    assert end.status == "ok", end.output
    assert end.output.startswith("[]") and end.output.endswith("[Changes: deleted pkg/a.py; deleted pkg/b.py]")
    assert not (scene.root / "pkg" / "a.py").exists() and not (scene.root / "pkg" / "b.py").exists()


async def test_what_a_stage_cannot_hold_or_the_project_ignores_is_said_and_left_out(scene):
    (scene.root / ".gitignore").write_text("build/\n")
    end, _ = await run(scene, """
        import totem
        totem.write("build/wanted.txt", "the script's own\\n")
        out = totem.run(
            "ln -s calc.py link.py && touch old.txt && echo made > kept.txt"
            " && echo o > build/out.o && mkdir pkg/__pycache__ && echo c > pkg/__pycache__/a.pyc"
        )["output"]
        print(out)
    """)
    assert end.status == "ok", end.output
    assert (
        "[Not part of the script's changes: build/out.o (ignored); link.py (a symbolic link); pkg/__pycache__/ (ignored)]"
    ) in end.output
    # A touch copies old.txt up unchanged: not a change.
    assert end.output.endswith("[Changes: created build/wanted.txt; created kept.txt]")
    assert not (scene.root / "link.py").exists() and (scene.root / "kept.txt").read_text() == "made\n"
    assert not (scene.root / "pkg" / "__pycache__").exists() and not (scene.root / "build" / "out.o").exists()


async def test_a_refused_command_runs_nothing_and_the_change_set_is_still_asked(scene):
    before = contents(scene.root)
    end, front = await run(scene, """
        import totem
        totem.write("calc.py", "x = 1\\n")
        try:
            totem.run("touch made.txt")
        except totem.TotemError as error:
            assert "not allowed; nothing ran" in str(error)
    """, outcome="reject_once")
    # Nothing was written before the command was asked (no edit question first), and the change
    # set, asked at the end, was refused too.
    assert [a.permission for a in front.asked] == ["bash", "edit"] and end.status == "denied"
    assert front.seen == [before, before] and contents(scene.root) == before


@pytest.mark.parametrize("sandbox", [True, False])
async def test_the_script_itself_runs_in_the_stricter_profile_where_there_is_a_sandbox(tmp_path, sandbox):
    scene = Scene(tmp_path, sandbox=sandbox)
    (scene.root / "calc.py").write_text("x = 1\n")
    # Outside the project's folder under /tmp: a fresh /tmp hides it (os.stat raises no audit event).
    marker = Path(f"/tmp/totem-marker-{os.getpid()}-{tmp_path.name}")
    marker.write_text("x")
    try:
        end, _ = await run(scene, f"""
            import os, sys
            print(os.path.exists({str(marker)!r}), os.path.exists({str(scene.root / "calc.py")!r}))
        """)
    finally:
        marker.unlink()
        await scene.close()
    assert end.output.splitlines()[0] == f"{not sandbox} True", end.output


@pytest.mark.parametrize(("escape", "refused"), DOORS)
async def test_in_the_sandbox_too_the_api_is_the_only_door(scene, escape, refused):
    before = contents(scene.root)
    end, _ = await run(scene, escape.format(root=scene.root))
    assert end.status == "error" and refused in end.output, end.output
    assert contents(scene.root) == before


async def test_what_the_audit_hook_misses_the_sandbox_stops(scene):
    # _posixsubprocess.fork_exec starts a process without an audit event (CPython 3.11's
    # signature); in the sandbox the project is read-only to it, and /tmp is the script's own.
    made = scene.root / "made.txt"
    end, _ = await run(scene, f"""
        import _posixsubprocess, os
        command = b"echo x > {made} ; echo y > /tmp/totem-fork-escape"
        pid = _posixsubprocess.fork_exec(
            [b"/bin/sh", b"-c", command], [b"/bin/sh"], True, (), None, None,
            -1, -1, -1, -1, -1, -1, *os.pipe(), True, False, -1, None, None, None, -1, None, False,
        )
        print("exit", os.waitpid(pid, 0)[1])
    """)
    assert end.status == "ok" and f"{made}: Read-only file system" in end.output, end.output
    assert not made.exists() and not Path("/tmp/totem-fork-escape").exists()
