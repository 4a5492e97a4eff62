"""Snapshots: undo and redo of a turn's file changes, conflicts, the redo rule, shared blobs,
pruning by age and size, and the [snapshots] config keys."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import anyio
import pytest

from totem_engine.config import Config, ConfigError, ConfigLayer, merge_layers
from totem_engine.snapshots import FileOutcome, Snapshots
from totem_engine.workspace.files import DiskWorkspace

SESSION = "ses_1"
DAY = 86400.0


class Clock:
    """A settable clock that starts at the real time (blob mtimes are real)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project.resolve()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def snaps(tmp_path: Path, clock: Clock):
    async with Snapshots(tmp_path / "data", max_bytes=10**9, max_age_days=30, clock=clock) as s:
        yield s


ws = DiskWorkspace()


async def change(
    snaps: Snapshots, root: Path, turn_id: str, edits: dict[str, bytes | None],
    session_id: str = SESSION,
) -> None:
    """One file-changing call of a turn: before_change, then write (bytes) or delete (None)
    each file through the workspace, then after_change."""
    paths = [root / rel for rel in edits]
    await snaps.before_change(ws, session_id=session_id, turn_id=turn_id, root=root, paths=paths)
    for rel, data in edits.items():
        if data is None:
            await ws.delete(root / rel)
        else:
            await ws.write_bytes(root / rel, data)
    await snaps.after_change(ws, session_id=session_id, turn_id=turn_id, root=root, paths=paths)


def blobs(snaps: Snapshots) -> dict[str, int]:
    """{hash: size} of the blob files on disk."""
    return {p.name: p.stat().st_size for p in snaps.blob_dir.glob("*/*")}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def test_undo_restores_modified_and_deleted_files_and_deletes_created_ones(snaps, root):
    crlf, no_newline = b"one\r\ntwo\r\n", b"last line without newline"
    (root / "a.txt").write_bytes(crlf)
    (root / "b.txt").write_bytes(no_newline)
    await change(snaps, root, "trn_1",
                 {"a.txt": b"one\ntwo\n", "b.txt": None, "sub/new.txt": b"created\n"})

    outcomes = await snaps.undo(ws, session_id=SESSION, root=root)

    assert outcomes == [
        FileOutcome("a.txt", "restored"),
        FileOutcome("b.txt", "restored"),
        FileOutcome("sub/new.txt", "deleted"),
    ]
    assert (root / "a.txt").read_bytes() == crlf
    assert (root / "b.txt").read_bytes() == no_newline
    assert not (root / "sub/new.txt").exists()


async def test_redo_reapplies_the_undone_turn_once(snaps, root):
    (root / "a.txt").write_bytes(b"old\n")
    (root / "b.txt").write_bytes(b"doomed\n")
    await change(snaps, root, "trn_1", {"a.txt": b"new\n", "b.txt": None, "c.txt": b"born\n"})
    await snaps.undo(ws, session_id=SESSION, root=root)

    outcomes = await snaps.redo(ws, session_id=SESSION, root=root)

    assert outcomes == [
        FileOutcome("a.txt", "restored"),
        FileOutcome("b.txt", "deleted"),
        FileOutcome("c.txt", "restored"),
    ]
    assert (root / "a.txt").read_bytes() == b"new\n"
    assert not (root / "b.txt").exists()
    assert (root / "c.txt").read_bytes() == b"born\n"
    assert await snaps.redo(ws, session_id=SESSION, root=root) == []
    # Redone, the turn can be undone again.
    await snaps.undo(ws, session_id=SESSION, root=root)
    assert (root / "a.txt").read_bytes() == b"old\n"


async def test_first_before_state_and_last_after_state_of_a_turn_win(snaps, root):
    (root / "a.txt").write_bytes(b"v0")
    await change(snaps, root, "trn_1", {"a.txt": b"v1"})
    await change(snaps, root, "trn_1", {"a.txt": b"v2"})

    # Undo compares against the last after-state (v2): an earlier one would be a conflict.
    assert await snaps.undo(ws, session_id=SESSION, root=root) == [FileOutcome("a.txt", "restored")]
    assert (root / "a.txt").read_bytes() == b"v0"
    await snaps.redo(ws, session_id=SESSION, root=root)
    assert (root / "a.txt").read_bytes() == b"v2"


class PausingWorkspace(DiskWorkspace):
    """A DiskWorkspace whose first ``stat`` waits for ``gate``."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.paused = anyio.Event()

    async def stat(self, path: Path):
        if not self.paused.is_set():
            self.paused.set()
            await self.gate.wait()
        return await super().stat(path)


async def test_of_two_racing_calls_the_first_recorded_before_state_wins(snaps, root):
    (root / "a.txt").write_bytes(b"v0")
    slow = PausingWorkspace()
    async with anyio.create_task_group() as tg:
        # The slow call registers a.txt, then stalls before reading it...
        tg.start_soon(lambda: snaps.before_change(
            slow, session_id=SESSION, turn_id="trn_1", root=root, paths=[root / "a.txt"]))
        await slow.paused.wait()
        # ...while a second call of the same turn records v0 and changes the file.
        await change(snaps, root, "trn_1", {"a.txt": b"v1"})
        slow.gate.set()

    await snaps.undo(ws, session_id=SESSION, root=root)
    assert (root / "a.txt").read_bytes() == b"v0"


async def test_a_file_changed_after_the_turn_is_a_conflict_and_left_alone(snaps, root):
    (root / "a.txt").write_bytes(b"a0")
    (root / "b.txt").write_bytes(b"b0")
    await change(snaps, root, "trn_1", {"a.txt": b"a1", "b.txt": b"b1"})
    (root / "a.txt").write_bytes(b"the user's edit")

    outcomes = await snaps.undo(ws, session_id=SESSION, root=root)

    assert [(o.path, o.action) for o in outcomes] == [("a.txt", "conflict"), ("b.txt", "restored")]
    assert (outcomes[0].reason or "").startswith("changed since the turn")
    assert (root / "a.txt").read_bytes() == b"the user's edit"
    assert (root / "b.txt").read_bytes() == b"b0"

    # Redo checks against the before-state: a.txt still is not a0, so it stays as the user left it.
    outcomes = await snaps.redo(ws, session_id=SESSION, root=root)
    assert [(o.path, o.action) for o in outcomes] == [("a.txt", "conflict"), ("b.txt", "restored")]
    assert (root / "a.txt").read_bytes() == b"the user's edit"
    assert (root / "b.txt").read_bytes() == b"b1"


async def test_a_file_deleted_by_the_user_after_the_turn_is_a_conflict(snaps, root):
    await change(snaps, root, "trn_1", {"new.txt": b"made by the turn"})
    (root / "new.txt").unlink()
    (root / "new.txt").mkdir()  # and something else in its place

    outcomes = await snaps.undo(ws, session_id=SESSION, root=root)

    assert [(o.path, o.action) for o in outcomes] == [("new.txt", "conflict")]
    assert (outcomes[0].reason or "").startswith("changed since the turn")
    assert (root / "new.txt").is_dir()


async def test_a_file_already_back_to_its_before_state_counts_as_restored(snaps, root):
    (root / "a.txt").write_bytes(b"a0")
    await change(snaps, root, "trn_1", {"a.txt": b"a1"})
    (root / "a.txt").write_bytes(b"a0")  # the user reverted it by hand

    assert await snaps.undo(ws, session_id=SESSION, root=root) == [FileOutcome("a.txt", "restored")]
    assert (root / "a.txt").read_bytes() == b"a0"


async def test_nothing_to_undo_or_redo_returns_empty(snaps, root):
    assert await snaps.undo(ws, session_id=SESSION, root=root) == []
    assert await snaps.redo(ws, session_id=SESSION, root=root) == []
    # Another session's turn is not this session's to undo.
    await change(snaps, root, "trn_other", {"a.txt": b"x"}, session_id="ses_other")
    assert await snaps.undo(ws, session_id=SESSION, root=root) == []
    assert (root / "a.txt").read_bytes() == b"x"


async def test_a_turn_that_changed_nothing_is_skipped(snaps, root):
    (root / "a.txt").write_bytes(b"a0")
    (root / "b.txt").write_bytes(b"b0")
    await change(snaps, root, "trn_1", {"a.txt": b"a1"})
    # trn_2's apply failed: before_change ran, the file did not change, after_change never came.
    await snaps.before_change(ws, session_id=SESSION, turn_id="trn_2", root=root,
                              paths=[root / "b.txt"])

    assert await snaps.undo(ws, session_id=SESSION, root=root) == [FileOutcome("a.txt", "restored")]
    assert (root / "b.txt").read_bytes() == b"b0"


async def test_restoring_a_running_turn_puts_its_files_back_and_leaves_it_nothing_to_undo(snaps, root):
    (root / "a.txt").write_bytes(b"a0")
    await change(snaps, root, "trn_0", {"kept.txt": b"an earlier turn's"})
    await change(snaps, root, "trn_1", {"a.txt": b"a1", "new.txt": b"made"})
    await change(snaps, root, "trn_1", {"a.txt": b"a2"})

    outcomes = await snaps.restore_turn(ws, session_id=SESSION, turn_id="trn_1", root=root)

    assert outcomes == [FileOutcome("a.txt", "restored"), FileOutcome("new.txt", "deleted")]
    assert (root / "a.txt").read_bytes() == b"a0" and not (root / "new.txt").exists()
    # The turn goes on from its start: its next change is recorded from the same before-state,
    # and an undo after it takes the turn back to where it began.
    await change(snaps, root, "trn_1", {"a.txt": b"a3"})
    assert await snaps.undo(ws, session_id=SESSION, root=root) == [FileOutcome("a.txt", "restored")]
    assert (root / "a.txt").read_bytes() == b"a0" and (root / "kept.txt").read_bytes() == b"an earlier turn's"


async def test_restoring_a_turn_touches_nothing_when_a_file_changed_since(snaps, root):
    (root / "a.txt").write_bytes(b"a0")
    (root / "b.txt").write_bytes(b"b0")
    await change(snaps, root, "trn_1", {"a.txt": b"a1", "b.txt": b"b1"})
    (root / "b.txt").write_bytes(b"the user's edit")

    outcomes = await snaps.restore_turn(ws, session_id=SESSION, turn_id="trn_1", root=root)

    assert [(o.path, o.action) for o in outcomes] == [("b.txt", "conflict")]
    assert (root / "a.txt").read_bytes() == b"a1" and (root / "b.txt").read_bytes() == b"the user's edit"
    assert await snaps.restore_turn(ws, session_id=SESSION, turn_id="trn_none", root=root) == []


async def test_undo_twice_goes_back_two_turns_and_redo_twice_comes_forward(snaps, root):
    (root / "a.txt").write_bytes(b"v0")
    await change(snaps, root, "trn_1", {"a.txt": b"v1"})
    await change(snaps, root, "trn_2", {"a.txt": b"v2", "b.txt": b"b"})

    assert await snaps.undo(ws, session_id=SESSION, root=root) == [
        FileOutcome("a.txt", "restored"), FileOutcome("b.txt", "deleted")]
    assert (root / "a.txt").read_bytes() == b"v1"
    assert await snaps.undo(ws, session_id=SESSION, root=root) == [FileOutcome("a.txt", "restored")]
    assert (root / "a.txt").read_bytes() == b"v0"
    assert not (root / "b.txt").exists()
    assert await snaps.undo(ws, session_id=SESSION, root=root) == []

    await snaps.redo(ws, session_id=SESSION, root=root)
    assert (root / "a.txt").read_bytes() == b"v1"
    assert not (root / "b.txt").exists()
    await snaps.redo(ws, session_id=SESSION, root=root)
    assert (root / "a.txt").read_bytes() == b"v2"
    assert (root / "b.txt").read_bytes() == b"b"


async def test_a_new_turn_after_an_undo_clears_redo(snaps, root):
    (root / "a.txt").write_bytes(b"a0")
    await change(snaps, root, "trn_1", {"a.txt": b"a1"})
    await snaps.undo(ws, session_id=SESSION, root=root)
    await change(snaps, root, "trn_2", {"c.txt": b"c"})

    assert await snaps.redo(ws, session_id=SESSION, root=root) == []
    assert (root / "a.txt").read_bytes() == b"a0"
    # The new turn is undoable; the forgotten one is neither undoable nor redoable.
    assert await snaps.undo(ws, session_id=SESSION, root=root) == [FileOutcome("c.txt", "deleted")]
    assert await snaps.undo(ws, session_id=SESSION, root=root) == []
    assert await snaps.redo(ws, session_id=SESSION, root=root) == [FileOutcome("c.txt", "restored")]
    assert (root / "a.txt").read_bytes() == b"a0"


async def test_relative_paths_are_taken_from_the_root(snaps, root):
    (root / "a.txt").write_bytes(b"a0")
    await snaps.before_change(ws, session_id=SESSION, turn_id="trn_1", root=root,
                              paths=[Path("a.txt")])
    await ws.write_bytes(root / "a.txt", b"a1")
    await snaps.after_change(ws, session_id=SESSION, turn_id="trn_1", root=root,
                             paths=[Path("a.txt")])

    assert await snaps.undo(ws, session_id=SESSION, root=root) == [FileOutcome("a.txt", "restored")]
    assert (root / "a.txt").read_bytes() == b"a0"


async def test_identical_contents_share_one_blob_in_the_default_data_dir(
    tmp_path, root, monkeypatch
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    same = b"same content\n"
    (root / "a.txt").write_bytes(same)
    (root / "b.txt").write_bytes(same)
    async with Snapshots(max_bytes=10**9, max_age_days=30) as snaps:
        await change(snaps, root, "trn_1", {"a.txt": b"x", "b.txt": b"x"})
        await change(snaps, root, "trn_2", {"a.txt": same})

        digest = sha(same)
        assert snaps.blob_dir == tmp_path / "xdg" / "totem" / "blobs"
        assert (snaps.blob_dir / digest[:2] / digest).read_bytes() == same
        # Blobs: `same` (before of a and b in trn_1, after of a in trn_2) and b"x".
        assert blobs(snaps) == {digest: len(same), sha(b"x"): 1}


async def test_prune_by_age_forgets_old_turns_and_their_blobs(snaps, root, clock):
    await change(snaps, root, "trn_old", {"old.txt": b"old content"})
    clock.now += 31 * DAY
    await change(snaps, root, "trn_new", {"new.txt": b"new content"})

    await snaps.prune()

    assert set(blobs(snaps)) == {sha(b"new content")}
    undone = await snaps.undo(ws, session_id=SESSION, root=root)
    assert undone == [FileOutcome("new.txt", "deleted")]
    assert await snaps.undo(ws, session_id=SESSION, root=root) == []
    assert (root / "old.txt").read_bytes() == b"old content"


async def test_prune_keeps_young_unreferenced_blobs_for_a_grace_period(snaps, root, clock):
    await change(snaps, root, "trn_1", {"a.txt": b"dropped"})
    await snaps.undo(ws, session_id=SESSION, root=root)
    await change(snaps, root, "trn_2", {"b.txt": b"kept"})  # forgets trn_1 and its blob

    await snaps.prune()
    assert set(blobs(snaps)) == {sha(b"dropped"), sha(b"kept")}  # another process may need it

    clock.now += 2 * 3600
    await snaps.prune()
    assert set(blobs(snaps)) == {sha(b"kept")}


async def test_prune_by_size_forgets_oldest_turns_until_the_blobs_fit(tmp_path, root, clock):
    x, y, z = b"x" * 1000, b"y" * 1000, b"z" * 1000
    async with Snapshots(tmp_path / "data", max_bytes=2500, max_age_days=30, clock=clock) as snaps:
        await change(snaps, root, "trn_1", {"a.txt": x})
        await change(snaps, root, "trn_2", {"b.txt": y})
        await change(snaps, root, "trn_3", {"c.txt": z})
        await change(snaps, root, "trn_4", {"d.txt": x})
        clock.now += 2 * 3600  # past the grace period, well within max_age_days

        await snaps.prune()

        # Dropping trn_1 frees nothing (trn_4 still refers to x); dropping trn_2 frees y.
        assert blobs(snaps) == {sha(x): 1000, sha(z): 1000}
        assert await snaps.undo(ws, session_id=SESSION, root=root) == [
            FileOutcome("d.txt", "deleted")]
        assert await snaps.undo(ws, session_id=SESSION, root=root) == [
            FileOutcome("c.txt", "deleted")]
        assert await snaps.undo(ws, session_id=SESSION, root=root) == []
        assert (root / "b.txt").read_bytes() == y

        await snaps.prune()  # within the limit now: nothing more goes
        assert blobs(snaps) == {sha(x): 1000, sha(z): 1000}


def test_snapshots_config_defaults_and_errors():
    assert Config().snapshots.max_bytes == 524288000
    assert Config().snapshots.max_age_days == 30
    config = merge_layers([ConfigLayer("f.toml", "file", {"snapshots": {"max_age_days": 7}})])
    assert (config.snapshots.max_age_days, config.snapshots.max_bytes) == (7, 524288000)

    typo = 'snapshots: unknown key "max_byte"; did you mean "max_bytes"'
    with pytest.raises(ConfigError, match=typo):
        merge_layers([ConfigLayer("f.toml", "file", {"snapshots": {"max_byte": 1}})])
    with pytest.raises(ConfigError, match="snapshots.max_bytes: expected more than 0, got 0"):
        merge_layers([ConfigLayer("f.toml", "file", {"snapshots": {"max_bytes": 0}})])


# --- rewind ---------------------------------------------------------------------------------


async def test_rewind_takes_back_every_change_since_the_first_turn_given(snaps, root):
    (root / "a.txt").write_bytes(b"0")
    await change(snaps, root, "t1", {"a.txt": b"1"})
    await change(snaps, root, "t2", {"a.txt": b"2", "b.txt": b"b"})
    await change(snaps, root, "t3", {"a.txt": b"3"})
    await snaps.undo(ws, session_id=SESSION, root=root)  # t3 undone: a.txt is back at 2

    done = await snaps.rewind(ws, session_id=SESSION, since=["t2", "t9"], root=root, turn_id="rwd_1")

    assert done == [FileOutcome("a.txt", "restored"), FileOutcome("b.txt", "deleted")]
    assert (root / "a.txt").read_bytes() == b"1" and not (root / "b.txt").exists()
    # Recorded as a change set of its own, the newest: undo takes the rewind back.
    assert await snaps.undo(ws, session_id=SESSION, root=root) == [FileOutcome("a.txt", "restored"), FileOutcome("b.txt", "restored")]
    assert (root / "a.txt").read_bytes() == b"2"


async def test_rewind_leaves_a_file_changed_since_unless_told_and_a_dry_run_touches_nothing(snaps, root):
    await change(snaps, root, "t1", {"a.txt": b"1", "b.txt": b"b"})
    (root / "a.txt").write_bytes(b"mine")
    conflict = FileOutcome("a.txt", "conflict", "changed since; left as it is")

    preview = await snaps.rewind(ws, session_id=SESSION, since=["t1"], root=root, turn_id="rwd_1", dry_run=True)
    assert preview == [conflict, FileOutcome("b.txt", "deleted")]
    assert (root / "b.txt").exists()

    done = await snaps.rewind(ws, session_id=SESSION, since=["t1"], root=root, turn_id="rwd_2", overwrite=lambda p: p == "a.txt")
    assert done == [FileOutcome("a.txt", "deleted"), FileOutcome("b.txt", "deleted")]
    assert not (root / "a.txt").exists()


async def test_rewind_of_turns_that_changed_nothing_does_nothing(snaps, root):
    await change(snaps, root, "t1", {"a.txt": b"1"})
    assert await snaps.rewind(ws, session_id=SESSION, since=["t2"], root=root, turn_id="rwd_1") == []
    assert (root / "a.txt").read_bytes() == b"1"


async def test_a_file_in_an_extra_root_is_kept_by_its_absolute_path_and_undone(snaps, root, tmp_path):
    shared = (tmp_path / "shared").resolve()
    shared.mkdir()
    (shared / "a.txt").write_bytes(b"shared\n")
    (root / "a.txt").write_bytes(b"project\n")
    paths = [root / "a.txt", shared / "a.txt"]  # the same relative name in two roots: two keys
    await snaps.before_change(ws, session_id=SESSION, turn_id="trn_1", root=root, paths=paths)
    for path in paths:
        await ws.write_bytes(path, b"changed\n")
    await snaps.after_change(ws, session_id=SESSION, turn_id="trn_1", root=root, paths=paths)
    key = (shared / "a.txt").as_posix()
    assert await snaps.turn_paths(session_id=SESSION, turn_id="trn_1") == sorted(["a.txt", key])

    outcomes = await snaps.undo(ws, session_id=SESSION, root=root)

    assert sorted(outcomes, key=lambda o: o.path) == sorted([FileOutcome("a.txt", "restored"), FileOutcome(key, "restored")], key=lambda o: o.path)
    assert (root / "a.txt").read_bytes() == b"project\n"
    assert (shared / "a.txt").read_bytes() == b"shared\n"
