"""The git capture around commands without the sandbox (worktree_capture.py, command_changes.py),
on real git repositories: its private index is kept between commands, so each capture must still
read the files as they are then. A file the user changed between two commands is the next
command's before-state with the user's content, even when its size and dates look unchanged.
Each test runs with the watch of the project's folders (tree_watch.py) and without it (where it
cannot run): the same changes either way."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from totem_engine.command_changes import CommandChanges

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def repo(root: Path, files: dict[str, str]) -> Path:
    """``root`` made a git repository of ``files``, committed."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True)
    return root


@pytest.fixture(params=[True, False], ids=["watched", "unwatched"])
def watch(request) -> bool:
    return request.param


def commands(root: Path, steps, watch: bool = True):
    """Run ``steps``: each a pair (what the user does first, what the command does), both
    callables, the command inside a scope of one CommandChanges; the changes of each command."""

    async def main():
        changes = CommandChanges(root, max_file_bytes=10_000, watch=watch)
        taken = []
        for user, command in steps:
            user()
            scope = await changes.scope("s1", command="cmd", may_change=True)
            command()
            taken.append([(c.path, c.before, c.after) for c in await scope.close()])
        await changes.aclose()
        return taken

    return anyio.run(main)


def nothing() -> None:
    pass


def test_created_changed_and_deleted_files_are_found_with_both_contents(tmp_path, watch):
    repo(tmp_path, {"a.txt": "a\n", "d/b.txt": "b\n", "ignored/x": "x\n", ".gitignore": "ignored/\n"})

    def command():
        (tmp_path / "a.txt").write_text("A\n")
        (tmp_path / "d" / "b.txt").unlink()
        (tmp_path / "new" / "deep").mkdir(parents=True)
        (tmp_path / "new" / "deep" / "n.txt").write_text("n\n")
        (tmp_path / "ignored" / "y").write_text("y\n")

    assert commands(tmp_path, [(nothing, command)], watch) == [[
        ("a.txt", b"a\n", b"A\n"), ("d/b.txt", b"b\n", None), ("new/deep/n.txt", None, b"n\n"),
    ]]


def test_a_user_edit_between_commands_is_the_next_before_state_even_with_its_dates_put_back(tmp_path, watch):
    repo(tmp_path, {"f.txt": "one\n", "g.txt": "g\n"})
    target = tmp_path / "f.txt"

    def agent_writes(text):
        return lambda: target.write_text(text)

    def user_writes_same_size_and_dates():
        stat = target.stat()
        target.write_text("ONE\n")  # the size the command left
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    def user_makes_files():
        (tmp_path / "mine").mkdir()
        (tmp_path / "mine" / "m.txt").write_text("mine\n")
        (tmp_path / "g.txt").unlink()

    def command_removes_them():
        (tmp_path / "mine" / "m.txt").unlink()
        (tmp_path / "g.txt").write_text("g again\n")

    taken = commands(tmp_path, [
        (nothing, agent_writes("two\n")),
        (user_writes_same_size_and_dates, agent_writes("six\n")),
        (nothing, nothing),
        (user_makes_files, command_removes_them),
    ], watch)
    assert taken == [
        [("f.txt", b"one\n", b"two\n")],
        [("f.txt", b"ONE\n", b"six\n")],  # the user's version, not the previous command's
        [],
        [("g.txt", None, b"g again\n"), ("mine/m.txt", b"mine\n", None)],
    ]


def test_a_project_inside_an_untracked_folder_of_the_repository(tmp_path, watch):
    repo(tmp_path, {"top.txt": "top\n"})
    project = tmp_path / "work" / "app"
    project.mkdir(parents=True)
    (project / "old.txt").write_text("old\n")
    (tmp_path / "work" / "beside.txt").write_text("beside\n")

    def command():
        (project / "old.txt").write_text("new\n")
        (project / "made.txt").write_text("made\n")
        (tmp_path / "work" / "beside.txt").write_text("not the project's\n")

    def again():
        (project / "made.txt").unlink()

    assert commands(project, [(nothing, command), (nothing, again)], watch) == [
        [("made.txt", None, b"made\n"), ("old.txt", b"old\n", b"new\n")],
        [("made.txt", b"made\n", None)],
    ]


def test_a_file_turned_into_an_empty_folder_or_a_link_after_a_plain_edit(tmp_path, watch):
    repo(tmp_path, {"f": "f\n", "g": "g\n", "h": "h\n"})

    def edit():
        (tmp_path / "h").write_text("H\n")

    def reshape():
        (tmp_path / "f").unlink()
        (tmp_path / "f").mkdir()
        (tmp_path / "g").unlink()
        (tmp_path / "g").symlink_to("h")

    async def main():
        changes = CommandChanges(tmp_path, max_file_bytes=10_000, watch=watch)
        taken = []
        for command in (edit, reshape):
            scope = await changes.scope("s1", command="cmd", may_change=True)
            command()
            taken.append([(c.path, c.before, c.unrestorable is not None) for c in await scope.close()])
        await changes.aclose()
        return taken

    assert anyio.run(main) == [[("h", b"h\n", False)], [("f", b"f\n", False), ("g", None, True)]]
