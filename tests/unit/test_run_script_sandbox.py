"""A script's ``run()`` and ``tests()`` in the sandbox (codemode/overlaid.py): the command runs in
a real bubblewrap overlay of the project seeded with the script's stage, what it writes goes back
into the stage, and the script's changes and the command's are one change set, asked once,
undone at once; nothing reaches the project before that."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import anyio
import pytest

from tests.support.processes import processes_with
from tests.support.turns import RecordingFrontEnd, Scene, answer, calls
from tests.unit.test_run_script import DOORS
from totem_engine.api import events as ev
from totem_engine.codemode.overlaid import StageScope
from totem_engine.codemode.staging import StagedWorkspace
from totem_engine.api.frontend import PermissionReply, PermissionRequest
from totem_engine.workspace.files import DiskWorkspace


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


async def run(scene: Scene, script: str, *, outcome: str = "allow_once", **args) -> tuple[ev.ToolEnd, Watching]:
    scene.provider.enqueue(calls(("run_script", {"script": textwrap.dedent(script), **args})), answer("done"))
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
            print("pid", os.getpid() < 10)  # in a process namespace of its own: bwrap is 1
        """)
    finally:
        marker.unlink()
        await scene.close()
    assert end.output.splitlines()[:2] == [f"{not sandbox} True", f"pid {sandbox}"], end.output


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


async def test_a_file_a_command_makes_again_after_a_staged_delete_is_kept(scene):
    end, _ = await run(scene, """
        import totem
        totem.delete("notes.txt")
        totem.delete("old.txt")
        totem.run("echo first > notes.txt && echo new > old.txt")
        print(totem.files("*.txt"))
    """)
    assert end.status == "ok", end.output
    # notes.txt is made again as the project has it: no change; old.txt with new bytes: an edit.
    assert end.output.startswith("['notes.txt', 'old.txt']") and end.output.endswith("[Changes: edited old.txt]")
    assert (scene.root / "notes.txt").read_text() == "first\n" and (scene.root / "old.txt").read_text() == "new\n"


@pytest.mark.parametrize(("script", "clash"), [
    ('totem.delete("notes.txt"); totem.write("notes.txt/f", "x\\n")', "notes.txt"),
    ('totem.delete("notes.txt"); totem.run("mkdir notes.txt && echo x > notes.txt/f")', "notes.txt"),
    ('totem.run("rm notes.txt && mkdir -p notes.txt/deep && echo x > notes.txt/deep/f")', "notes.txt"),
    ('totem.run("rm -r pkg && echo file > pkg")', "pkg"),
])
async def test_a_change_set_that_puts_a_folder_for_a_file_or_a_file_for_a_folder_is_refused(scene, script, clash):
    before = contents(scene.root)
    end, front = await run(scene, f"import totem\n{script}\n")
    # One change set cannot take a file's place with a folder (or the reverse) and be undone:
    # refused before anything is written, naming the path.
    assert end.status == "error" and f"replace a file with a folder or a folder with a file ({clash})" in end.output, end.output
    assert "edit" not in [a.permission for a in front.asked]
    assert contents(scene.root) == before and (scene.root / "notes.txt").is_file() and (scene.root / "pkg").is_dir()


async def test_without_the_sandbox_a_clash_staged_before_a_command_is_refused_and_nothing_runs(tmp_path):
    scene = Scene(tmp_path, sandbox=False)
    (scene.root / "notes.txt").write_text("first\n")
    try:
        end, front = await run(scene, """
            import totem
            totem.delete("notes.txt")
            totem.write("notes.txt/f", "x\\n")
            totem.run("touch ran.txt")
        """)
    finally:
        await scene.close()
    assert end.status == "error" and "(notes.txt), which one change set cannot undo" in end.output, end.output
    assert "so the command did not run" in end.output and front.asked == []
    assert contents(scene.root) == {"notes.txt": b"first\n"}


async def test_staged_deletes_past_the_argument_limit_still_reach_the_command(scene):
    # Long names (a folder of 200 characters, files of 240): 5,000 of them are past the 2 MB that
    # one command line may hold, where the deletes went to the command as arguments.
    folder = scene.root / ("d" * 200)
    folder.mkdir()
    for n in range(5000):
        (folder / f"{n:05d}{'x' * 235}").write_text(str(n))
    stage = StagedWorkspace(DiskWorkspace())
    for path in sorted(folder.iterdir())[1:]:
        await stage.delete(path)
    box = await scene.commands.script_box("ses_argv")
    scope = StageScope(box, stage, scene.root, max_file_bytes=10_000, command="ls")
    await scope.open()
    try:
        result = await anyio.run_process(scope.argv(["sh", "-c", f"ls {folder.name} | wc -l; ls -a /tmp"]), check=False)
    finally:
        await scope.close()
    assert result.returncode == 0, result.stderr
    # One file is left; the list of the deletes is gone from the command's /tmp.
    count, *in_tmp = result.stdout.decode().split()
    assert count == "1" and not [name for name in in_tmp if "deletes" in name]
    assert len(list(folder.iterdir())) == 5000 and len(stage.changes()) == 4999


async def test_a_mode_a_command_changes_is_said_to_be_left_out(scene):
    end, _ = await run(scene, """
        import totem
        totem.edit("calc.py", "a + b", "a * b")
        print(totem.run(
            "chmod +x calc.py notes.txt && chmod -x tool.sh && echo '#!/bin/sh' > gen.sh && chmod +x gen.sh"
            " && echo plain > plain.txt && mkdir -p empty/deep pkg/sub"
        )["output"])
    """)
    assert end.status == "ok", end.output
    assert (
        "[Not part of the script's changes: calc.py (mode 755: a change set keeps the project's modes);"
        " gen.sh (mode 755: a change set keeps the project's modes);"
        " notes.txt (mode 755: a change set keeps the project's modes);"
        " tool.sh (mode 644: a change set keeps the project's modes)]"
    ) in end.output
    assert end.output.endswith("[Changes: edited calc.py; created gen.sh; created plain.txt]")


async def test_a_staged_file_over_the_size_limit_survives_a_command(scene):
    # The limit keeps a command's large output (a build) out of the stage, not what the script
    # staged itself: a staged file over it was read back as deleted.
    scene.commands.max_file_bytes = 100
    (scene.root / "big.txt").write_text("y" * 200)
    end, _ = await run(scene, """
        import totem
        totem.write("big.txt", "x" * 200)
        totem.write("big2.txt", "z" * 200)
        totem.delete("notes.txt")
        print(totem.run("echo first > notes.txt && head -c 300 /dev/zero > out.bin")["output"])
    """)
    assert end.status == "ok", end.output
    assert "[Not part of the script's changes: out.bin (300 bytes, over the 100-byte limit of undo)]" in end.output
    assert end.output.endswith("[Changes: edited big.txt; created big2.txt]")
    assert (scene.root / "big.txt").read_text() == "x" * 200 and (scene.root / "big2.txt").read_text() == "z" * 200
    assert not (scene.root / "out.bin").exists()


async def test_undo_of_a_bash_that_put_a_folder_for_a_file_and_a_file_for_a_folder(scene):
    # bash can do what a script's change set cannot (the clash above); undo puts a file back
    # where the command left a folder (emptied first), and a folder where it left a file.
    before = contents(scene.root)
    command = "rm notes.txt && mkdir notes.txt && echo x > notes.txt/f && rm -r pkg && echo file > pkg"
    scene.provider.enqueue(calls(("bash", {"command": command})), answer("done"))
    front = Watching(scene.root)
    await scene.run("do it", front)
    (end,) = front.of(ev.ToolEnd)
    assert end.status == "ok" and (scene.root / "notes.txt" / "f").is_file() and (scene.root / "pkg").is_file()
    outcomes = await scene.agent.snapshots.undo(scene.agent.workspace, session_id=scene.session_id, root=scene.root)
    assert [o for o in outcomes if o.action == "conflict"] == []
    assert contents(scene.root) == before and (scene.root / "notes.txt").is_file()
    outcomes = await scene.agent.snapshots.redo(scene.agent.workspace, session_id=scene.session_id, root=scene.root)
    assert [o for o in outcomes if o.action == "conflict"] == []
    assert (scene.root / "notes.txt" / "f").is_file() and (scene.root / "pkg").read_text() == "file\n"


async def test_rewind_of_a_bash_that_put_a_folder_for_a_file_and_a_file_for_a_folder(scene):
    before = contents(scene.root)
    command = "rm notes.txt && mkdir notes.txt && echo x > notes.txt/f && rm -r pkg && echo file > pkg"
    scene.provider.enqueue(calls(("bash", {"command": command})), answer("done"))
    turn = await scene.turn("do it", Watching(scene.root))
    await turn.run()
    assert (scene.root / "notes.txt" / "f").is_file() and (scene.root / "pkg").is_file()
    outcomes = await scene.agent.snapshots.rewind(
        scene.agent.workspace, session_id=scene.session_id, since=[turn.turn_id], root=scene.root, turn_id="rwd_1",
    )
    assert [o for o in outcomes if o.action == "conflict"] == []
    assert contents(scene.root) == before and (scene.root / "notes.txt").is_file()


async def test_a_name_that_is_not_utf8_is_said_to_be_left_out_and_the_rest_is_kept(scene):
    bad = os.fsdecode(b"bad\xffname.txt")
    (scene.root / bad).write_text("project's\n")
    (scene.root / os.fsdecode(b"dir\xfe")).mkdir()
    end, _ = await run(scene, r"""
        import totem
        print(totem.run("printf x > \"$(printf 'new\\377.txt')\"; rm \"$(printf 'bad\\377name.txt')\"; echo made > kept.txt"
                        "; echo in > \"$(printf 'dir\\376')/f.txt\"")["output"])
    """)
    # No path, message or event can hold such a name; the change set keeps the rest.
    assert end.status == "ok", end.output
    assert (
        "[Not part of the script's changes: bad\\xffname.txt (a name that is not UTF-8); dir\\xfe/ (a name that is not"
        " UTF-8); new\\xff.txt (a name that is not UTF-8)]"
    ) in end.output
    assert end.output.endswith("[Changes: created kept.txt]")
    assert (scene.root / bad).read_text() == "project's\n" and (scene.root / "kept.txt").read_text() == "made\n"


async def test_a_bash_that_makes_a_name_that_is_not_utf8_is_taken_in_and_said_not_restorable(scene):
    command = "printf x > \"$(printf 'new\\377.txt')\" && echo made > kept.txt"
    scene.provider.enqueue(calls(("bash", {"command": command})), answer("done"))
    front = Watching(scene.root)
    await scene.run("do it", front)
    (end,) = front.of(ev.ToolEnd)
    assert end.status == "ok", end.output
    assert "Not restorable by undo: new\\xff.txt (a name that is not UTF-8" in end.output
    assert (scene.root / os.fsdecode(b"new\xff.txt")).read_text() == "x" and (scene.root / "kept.txt").exists()


async def test_a_folder_a_command_makes_in_place_of_a_link_to_outside_is_not_written_through_it(scene, tmp_path):
    # The project's ext links to a folder outside it; the command replaces the link with a folder
    # of its own. Staged as ext/evil.txt, the change set would have written through the link.
    outside = tmp_path / "outside"
    outside.mkdir()
    (scene.root / "ext").symlink_to(outside)
    end, _ = await run(scene, """
        import totem
        print(totem.run("rm ext && mkdir ext && echo pwn > ext/evil.txt && echo fine > kept.txt")["output"])
    """)
    assert end.status == "ok", end.output
    assert "[Not part of the script's changes: ext/evil.txt (its folder leads outside the project)]" in end.output
    assert end.output.endswith("[Changes: created kept.txt]")
    assert list(outside.iterdir()) == [] and (scene.root / "ext").is_symlink()


async def test_what_a_command_does_in_a_repository_inside_the_project_is_not_staged(scene):
    sub = scene.root / "sub"
    sub.mkdir()
    (sub / "x.txt").write_text("x\n")
    await anyio.run_process(["git", "init", "-q", str(sub)])
    end, _ = await run(scene, """
        import totem
        print(totem.run("echo y >> sub/x.txt && git -C sub add x.txt")["output"])
    """)
    assert end.status == "ok", end.output
    assert "[Not part of the script's changes: sub/.git (what a command does to a repository is not staged)]" in end.output
    assert end.output.endswith("[Changes: edited sub/x.txt]")


async def test_a_file_a_command_puts_in_place_of_a_link_and_a_link_it_removes_are_left_out(scene):
    # The change set would replace the link with a file, and undo (files only) would put back a
    # copy of what it pointed to, not the link.
    (scene.root / "link.py").symlink_to("calc.py")
    (scene.root / "gone.py").symlink_to("calc.py")
    end, _ = await run(scene, """
        import totem
        print(totem.run("rm link.py gone.py && echo 'x = 1' > link.py && echo made > kept.txt")["output"])
    """)
    assert end.status == "ok", end.output
    assert (
        "[Not part of the script's changes: gone.py (a symbolic link, removed); link.py (a file in place of a symbolic link)]"
    ) in end.output
    assert end.output.endswith("[Changes: created kept.txt]")
    assert (scene.root / "link.py").is_symlink() and (scene.root / "gone.py").is_symlink()
    assert "a + b" in (scene.root / "calc.py").read_text()


async def test_a_script_past_its_time_limit_in_the_sandbox_leaves_no_process_and_no_change(scene):
    before = contents(scene.root)
    marker = f"totem-slow-{scene.root.parent.name}"
    end, _ = await run(scene, f"""
        import totem, _posixsubprocess, os
        totem.write("late.py", "x = 1\\n")
        # A child of the script's own (fork_exec raises no audit event), and a command of run().
        _posixsubprocess.fork_exec(
            [b"/bin/sleep", b"300"], [b"/bin/sleep"], True, (), None, None,
            -1, -1, -1, -1, -1, -1, *os.pipe(), True, True, -1, None, None, None, -1, None, False,
        )
        totem.run("exec -a {marker} sleep 300")
    """, timeout=2)
    assert end.status == "error" and "ran past its time limit of 2 s and was killed" in end.output, end.output
    assert contents(scene.root) == before
    for _ in range(60):  # the machine's init reaps what the kill left as zombies
        if not processes_with(marker) and not processes_with("/bin/sleep 300"):
            break
        await anyio.sleep(0.05)
    assert processes_with(marker) == [] and processes_with("/bin/sleep 300") == []
