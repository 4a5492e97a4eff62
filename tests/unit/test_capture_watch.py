"""The watch that spares the git capture's before-pass (tree_watch.py, worktree_capture.py), on
real repositories and real inotify: a before-capture reuses the last tree only when nothing in
the project changed since that tree's pass began, or reads again only the paths the watch saw
change, and a change the user makes between two commands, however close to the next one, is in
that command's before-state. ``passes`` counts the captures that read every file's dates: the
first capture is one, each after-capture one, a before-capture none when the watch could tell."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import anyio

from tests.unit.test_worktree_capture import repo
from totem_engine.worktree_capture import GitCapture


def commands(root: Path, state: Path, steps, *, watch: bool = True):
    """Run ``steps`` (pairs: what the user does, then what the command does) around captures of
    one GitCapture; each command's changes as (path, before, after) bytes, and the passes made."""

    async def main():
        capture = await GitCapture.open(root, state, watch=watch)
        assert capture is not None
        taken = []
        for user, command in steps:
            user()
            before = await capture.tree()
            command()
            found, _ = await capture.changed_since(before)
            # A submodule's commit is not an object of the capture: its change shows as its ids.
            data = await capture.read([b for c in found if c.regular for b in (c.before, c.after) if b])
            taken.append([(c.path, data.get(c.before, c.before), data.get(c.after, c.after)) for c in found])
        await capture.aclose()
        return taken, capture.passes

    return anyio.run(main)


def nothing() -> None:
    pass


def writes(path: Path, text: str):
    return lambda: path.write_text(text)


def test_nothing_changed_between_commands_reuses_the_last_tree(tmp_path):
    root = repo(tmp_path / "repo", {"f.txt": "0\n"})
    f = root / "f.txt"
    steps = [(nothing, writes(f, f"{n}\n")) for n in range(1, 4)] + [(nothing, nothing)]
    expected = [[("f.txt", b"0\n", b"1\n")], [("f.txt", b"1\n", b"2\n")], [("f.txt", b"2\n", b"3\n")], []]

    assert commands(root, tmp_path / "s1", steps) == (expected, 1 + 4)
    assert commands(root, tmp_path / "s2", [(writes(f, "0\n"), writes(f, "1\n"))] + steps[1:], watch=False) == (expected, 2 * 4)


def test_a_change_made_just_before_a_command_is_in_its_before_state(tmp_path):
    root = repo(tmp_path / "repo", {"f.txt": "start\n", "d/g.txt": "g\n"})
    f, g = root / "f.txt", root / "d" / "g.txt"
    steps = []
    for n in range(20):
        # The user's write comes right before the capture: no pause for the event to arrive.
        steps.append((writes(f if n % 2 else g, f"user {n}\n"), writes(f if n % 2 else g, f"agent {n}\n")))

    taken, passes = commands(root, tmp_path / "state", steps)
    assert [change[0][1] for change in taken] == [f"user {n}\n".encode() for n in range(20)]
    assert passes == 1 + 20  # each before-capture after the first read only the file the watch named


def test_a_folder_made_between_commands_is_watched_from_then_on(tmp_path):
    root = repo(tmp_path / "repo", {"f.txt": "f\n"})
    deep = root / "new" / "deep"

    def user_makes_folders():
        deep.mkdir(parents=True)
        (deep / "n.txt").write_text("made\n")

    taken, _ = commands(root, tmp_path / "state", [
        (nothing, writes(root / "f.txt", "F\n")),
        (user_makes_folders, nothing),
        (writes(deep / "n.txt", "changed by the user\n"), writes(deep / "n.txt", "the agent's\n")),
    ])
    assert taken == [[("f.txt", b"f\n", b"F\n")], [], [("new/deep/n.txt", b"changed by the user\n", b"the agent's\n")]]


def test_a_folder_moved_between_commands_is_followed_under_its_new_name(tmp_path):
    root = repo(tmp_path / "repo", {"d/sub/f.txt": "f\n", "top.txt": "t\n"})
    moved = root / "e" / "sub" / "f.txt"
    made = root / "e" / "sub" / "new" / "n.txt"

    def user_makes_a_folder_in_it():
        made.parent.mkdir()
        made.write_text("made\n")

    taken, _ = commands(root, tmp_path / "state", [
        (nothing, nothing),  # the watch starts with the first capture
        (lambda: (root / "d").rename(root / "e"), writes(root / "top.txt", "T\n")),
        (writes(moved, "the user's\n"), writes(moved, "the agent's\n")),
        (user_makes_a_folder_in_it, nothing),  # a folder under the moved one, watched by its new path
        (writes(made, "the user's\n"), writes(made, "the agent's\n")),
    ])
    assert taken == [
        [],
        [("top.txt", b"t\n", b"T\n")],
        [("e/sub/f.txt", b"the user's\n", b"the agent's\n")],
        [],
        [("e/sub/new/n.txt", b"the user's\n", b"the agent's\n")],
    ]


def test_an_overflowing_event_queue_counts_as_a_change_and_the_watch_starts_again(tmp_path):
    root = repo(tmp_path / "repo", {"a": "a\n", "b": "b\n", "d/c.txt": "c\n"})
    queue = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())

    def user_floods_the_queue():
        # Two files in turn, so the kernel cannot merge an event into the one before it.
        for n in range(queue + 100):
            os.utime(root / ("a" if n % 2 else "b"))
        (root / "d" / "c.txt").write_text("the user's\n")

    taken, passes = commands(root, tmp_path / "state", [
        (nothing, nothing),  # the watch starts with the first capture
        (user_floods_the_queue, writes(root / "d" / "c.txt", "the agent's\n")),
        (writes(root / "d" / "c.txt", "the user's again\n"), writes(root / "d" / "c.txt", "the agent's again\n")),
        (nothing, nothing),
    ])
    assert taken == [
        [],
        [("d/c.txt", b"the user's\n", b"the agent's\n")],
        [("d/c.txt", b"the user's again\n", b"the agent's again\n")],
        [],
    ]
    # The flood's before-capture a full pass; after it the watch names the paths again.
    assert passes == 2 + 2 + 1 + 1


def test_a_nested_repository_keeps_every_capture_a_full_pass(tmp_path):
    root = repo(tmp_path / "repo", {"f.txt": "f\n"})
    repo(root / "inner", {"i.txt": "i\n"})
    steps = [(nothing, writes(root / "f.txt", "1\n")), (nothing, writes(root / "f.txt", "2\n"))]

    taken, passes = commands(root, tmp_path / "state", steps)
    assert taken == [[("f.txt", b"f\n", b"1\n")], [("f.txt", b"1\n", b"2\n")]]
    assert passes == 4  # its commits would change the capture without an event in the project


def test_a_repository_made_by_a_command_stops_the_watch(tmp_path):
    root = repo(tmp_path / "repo", {"f.txt": "f\n"})

    def command_makes_a_repository():
        repo(root / "vendor", {"v.txt": "v\n"})

    _, passes = commands(root, tmp_path / "state", [(nothing, command_makes_a_repository), (nothing, nothing), (nothing, nothing)])
    assert passes == 1 + 1 + 2 + 2


def test_a_gitignore_above_the_project_is_watched(tmp_path):
    top = repo(tmp_path / "repo", {".gitignore": "*.log\n", "app/a.txt": "a\n"})
    project = top / "app"
    (project / "x.log").write_text("was ignored\n")

    def user_unignores_and_edits():
        (top / ".gitignore").write_text("\n")
        (project / "a.txt").write_text("the user's\n")

    taken, _ = commands(project, tmp_path / "state", [
        (nothing, writes(project / "a.txt", "A\n")),
        (user_unignores_and_edits, nothing),  # x.log is the project's now: not the command's doing
        (nothing, writes(project / "x.log", "logged\n")),
    ])
    assert taken == [[("a.txt", b"a\n", b"A\n")], [], [("x.log", b"was ignored\n", b"logged\n")]]


def test_what_a_command_writes_through_mmap_is_found(tmp_path):
    root = repo(tmp_path / "repo", {"f.bin": "0123456789\n"})

    def command_writes_through_a_mapping():
        with open(root / "f.bin", "r+b") as file, mmap.mmap(file.fileno(), 0) as mapped:
            mapped[0:4] = b"ABCD"

    taken, _ = commands(root, tmp_path / "state", [(nothing, nothing), (nothing, command_writes_through_a_mapping)])
    assert taken == [[], [("f.bin", b"0123456789\n", b"ABCD456789\n")]]


def test_the_watch_is_closed_with_the_capture(tmp_path):
    root = repo(tmp_path / "repo", {"f.txt": "f\n"})

    def inotify_fds() -> int:
        fds = Path("/proc/self/fd")
        found = 0
        for fd in fds.iterdir():
            try:
                found += os.readlink(fd) == "anon_inode:inotify"
            except OSError:
                pass
        return found

    async def main():
        before = inotify_fds()
        capture = await GitCapture.open(root, tmp_path / "state")
        await capture.tree()
        during = inotify_fds()
        await capture.aclose()
        return before, during, inotify_fds()

    before, during, after = anyio.run(main)
    assert during == before + 1 and after == before


def test_the_users_global_ignore_file_still_applies(tmp_path, monkeypatch):
    (tmp_path / "config" / "git").mkdir(parents=True)
    (tmp_path / "config" / "git" / "ignore").write_text("*.tmp\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = repo(tmp_path / "repo", {"f.txt": "f\n"})

    def command():
        (root / "scratch.tmp").write_text("scratch\n")
        (root / "f.txt").write_text("F\n")

    taken, _ = commands(root, tmp_path / "state", [(nothing, command)])
    assert taken == [[("f.txt", b"f\n", b"F\n")]]


def test_paths_the_user_removed_or_renamed_between_commands(tmp_path):
    root = repo(tmp_path / "repo", {"d/x.txt": "x\n", "d/e/y.txt": "y\n", "a.txt": "a\n", "keep.txt": "k\n"})

    def user_removes_and_renames():
        for path in (root / "d" / "e" / "y.txt", root / "d" / "x.txt"):
            path.unlink()
        (root / "d" / "e").rmdir()
        (root / "d").rmdir()
        (root / "a.txt").rename(root / "b.txt")

    def command():
        (root / "d").mkdir()
        (root / "d" / "x.txt").write_text("made again\n")
        (root / "b.txt").write_text("B\n")

    taken, passes = commands(root, tmp_path / "state", [
        (nothing, writes(root / "keep.txt", "K\n")),
        (user_removes_and_renames, command),
    ])
    assert taken[1] == [("b.txt", b"a\n", b"B\n"), ("d/x.txt", None, b"made again\n")]
    assert passes == 3  # the second before-capture read only what the watch named


def test_a_gitignore_changed_in_a_folder_is_read_for_its_whole_folder(tmp_path):
    root = repo(tmp_path / "repo", {"sub/.gitignore": "*.log\n", "sub/deep/a.txt": "a\n", "f.txt": "f\n"})
    (root / "sub" / "deep" / "x.log").write_text("was ignored\n")

    taken, passes = commands(root, tmp_path / "state", [
        (nothing, writes(root / "f.txt", "F\n")),
        (writes(root / "sub" / ".gitignore", "\n"), nothing),  # x.log is the project's now
        (nothing, writes(root / "sub" / "deep" / "x.log", "logged\n")),
    ])
    assert taken == [[("f.txt", b"f\n", b"F\n")], [], [("sub/deep/x.log", b"was ignored\n", b"logged\n")]]
    assert passes == 1 + 3  # the .gitignore's folder read, not every file
