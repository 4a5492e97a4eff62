"""A session's changes as diffs, from its snapshots (totem_engine/session_diff.py): the span of
every turn not undone, a single turn's, binary files, and a file changed since."""

from __future__ import annotations

from pathlib import Path

import pytest

from totem_engine.session_diff import session_diff
from totem_engine.snapshots import Snapshots
from totem_engine.workspace.files import DiskWorkspace


@pytest.fixture
async def snapshots(tmp_path: Path):
    async with Snapshots(tmp_path / "data", max_bytes=10_000_000, max_age_days=7) as snapshots:
        yield snapshots


async def _change(snapshots: Snapshots, root: Path, turn_id: str, files: dict[str, bytes | None]) -> None:
    """A turn of session ``s1`` writing (or, for None, deleting) ``files``, recorded as the loop does."""
    workspace = DiskWorkspace()
    where = {"session_id": "s1", "turn_id": turn_id, "root": root, "paths": [root / p for p in files]}
    await snapshots.before_change(workspace, **where)
    for path, data in files.items():
        if data is None:
            (root / path).unlink()
        else:
            (root / path).write_bytes(data)
    await snapshots.after_change(workspace, **where)


async def test_the_span_of_the_sessions_turns_by_file(snapshots, tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.py").write_text("one\n")
    (root / "gone.txt").write_text("bye\n")
    await _change(snapshots, root, "t1", {"a.py": b"two\n", "new.py": b"fresh\n"})
    await _change(snapshots, root, "t2", {"a.py": b"three\n", "gone.txt": None})

    diffs = await session_diff(snapshots, DiskWorkspace(), root, "s1")
    assert [(d.path, d.change) for d in diffs] == [("a.py", "modified"), ("gone.txt", "deleted"), ("new.py", "added")]
    assert "-one\n+three\n" in diffs[0].diff  # from before the first change to after the last
    assert diffs[1].diff.startswith("--- a/gone.txt\n+++ /dev/null")
    assert "+fresh" in diffs[2].diff and not any(d.changed_since for d in diffs)

    only = await session_diff(snapshots, DiskWorkspace(), root, "s1", turn_id="t1")
    assert [d.path for d in only] == ["a.py", "new.py"] and "-one\n+two\n" in only[0].diff


async def test_undone_turns_are_left_out_and_a_later_edit_is_flagged(snapshots, tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.py").write_text("one\n")
    await _change(snapshots, root, "t1", {"a.py": b"two\n"})
    await _change(snapshots, root, "t2", {"b.py": b"b\n"})
    await snapshots.undo(DiskWorkspace(), session_id="s1", root=root)
    (root / "a.py").write_text("edited by hand\n")

    diffs = await session_diff(snapshots, DiskWorkspace(), root, "s1")
    assert [d.path for d in diffs] == ["a.py"]
    assert diffs[0].changed_since and "+two" in diffs[0].diff


async def test_a_binary_file_has_no_text_diff(snapshots, tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    await _change(snapshots, root, "t1", {"logo.png": b"\x89PNG\0\1\2"})
    [diff] = await session_diff(snapshots, DiskWorkspace(), root, "s1")
    assert diff.binary and diff.diff == "" and diff.change == "added"
