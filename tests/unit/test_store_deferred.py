"""Writes queued without waiting (store.DeferredWrites on sqlite_worker.SqliteWorker.submit): kept
in order with every other call, read back by the next read, stored for another connection by a
flush, an error raised later naming the write, nothing lost or half-done by a close or a
cancelled caller."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio
import pytest

from totem_engine.sqlite_worker import SqliteWorker, WriteFailed
from totem_engine.store import MessageNotFound, PartNotFound, Store, new_id


@pytest.fixture
async def store(tmp_path: Path):
    async with Store(tmp_path / "totem.db") as store:
        yield store


def _rows(path: Path, query: str, *args: object) -> list[tuple]:
    """What another connection (another process's) reads from the database now."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


async def test_queued_writes_are_read_back_in_order_by_the_next_read(store: Store):
    session = await store.create_session(cwd="/repo", model="m")
    writes = store.deferred(session.id)
    first = await writes.add_message("user", turn_id="trn_1")
    await writes.add_part(first, "text", {"text": "hi"})
    second = await writes.add_message("assistant", turn_id="trn_1", step=1, model="m")
    part = await writes.add_part(second, "text", {"text": "he"}, part_id=new_id("prt"))
    await writes.update_part(part, data={"text": "hello"})
    await writes.update_part(part, status="done")

    messages = await store.messages(session.id)  # a plain read of the store sees them too

    assert [(m.id, m.role, m.seq, m.parent_id) for m in messages] == [
        (first, "user", 0, None), (second, "assistant", 1, first)
    ]
    assert [(p.data, p.status) for p in messages[1].parts] == [({"text": "hello"}, "done")]
    assert (await store.get_session(session.id)).head == second


async def test_data_is_stored_as_it_was_when_queued(store: Store):
    session = await store.create_session(cwd="/repo", model="m")
    writes = store.deferred(session.id)
    message = await writes.add_message("assistant", turn_id="trn_1")
    data = {"tool": "read", "output": "first"}
    part = await writes.add_part(message, "tool", data)
    data["output"] = "changed after the call"

    [stored] = (await writes.messages())[0].parts

    assert (stored.id, stored.data["output"]) == (part, "first")


async def test_another_connection_sees_the_writes_after_a_flush(store: Store):
    session = await store.create_session(cwd="/repo", model="m")
    writes = store.deferred(session.id)
    message = await writes.add_message("assistant", turn_id="trn_1")
    part = await writes.add_part(message, "text", {"text": "streamed"})
    assert _rows(store.path, "SELECT id FROM parts") == []  # queued: no round trip yet

    await writes.flush()

    assert _rows(store.path, "SELECT id, data FROM parts") == [(part, json.dumps({"text": "streamed"}, separators=(",", ":")))]
    assert _rows(store.path, "SELECT head FROM sessions") == [(message,)]


async def test_a_failed_write_is_raised_at_the_flush_naming_it_and_later_ones_are_skipped(store: Store):
    session = await store.create_session(cwd="/repo", model="m")
    writes = store.deferred(session.id)
    message = await writes.add_message("assistant", turn_id="trn_1")
    await writes.update_part("prt_missing", status="done")  # queued: no error yet
    await writes.add_part(message, "text", {"text": "after the failure"})

    with pytest.raises(WriteFailed) as caught:
        await writes.flush()

    assert caught.value.what == "update_part(prt_missing)"
    assert isinstance(caught.value.error, PartNotFound) and caught.value.__cause__ is caught.value.error
    assert "update_part(prt_missing)" in str(caught.value) and "1 later write" in str(caught.value)
    # What is stored is what was queued up to the failure; the error is raised once.
    assert [len(m.parts) for m in await writes.messages()] == [0]
    await writes.add_part(message, "text", {"text": "after the flush"})
    assert [p.data["text"] for p in (await writes.messages())[0].parts] == ["after the flush"]


async def test_a_failed_write_is_raised_by_the_next_messages_of_its_session(store: Store):
    session = await store.create_session(cwd="/repo", model="m")
    writes = store.deferred(session.id)
    await writes.add_part("msg_missing", "text", {"text": "x"})

    with pytest.raises(WriteFailed) as caught:
        await writes.messages()

    assert isinstance(caught.value.error, MessageNotFound)
    assert "msg_missing" in caught.value.what


async def test_a_failed_write_is_raised_to_its_own_session_not_another(store: Store):
    mine = await store.create_session(cwd="/repo", model="m")
    other = await store.create_session(cwd="/repo", model="m")
    await store.deferred(mine.id).add_part("msg_missing", "text", {"text": "x"})
    other_writes = store.deferred(other.id)
    await other_writes.add_message("user", turn_id="trn_2")

    await other_writes.flush()  # another session's turn goes on

    assert len(await other_writes.messages()) == 1
    with pytest.raises(WriteFailed):
        await store.deferred(mine.id).flush()


async def test_the_awaited_api_still_raises_at_once(store: Store):
    session = await store.create_session(cwd="/repo", model="m")
    await store.deferred(session.id).add_part("msg_missing", "text", {"text": "x"})

    with pytest.raises(PartNotFound):
        await store.update_part("prt_missing", status="done")
    with pytest.raises(ValueError):
        await store.deferred(session.id).add_part("msg_x", "nonsense", {})
    with pytest.raises(WriteFailed):  # the queued write's own error is still its session's to raise
        await store.deferred(session.id).flush()


async def test_close_stores_what_is_queued(tmp_path: Path):
    store = Store(tmp_path / "totem.db")
    session = await store.create_session(cwd="/repo", model="m")
    writes = store.deferred(session.id)
    message = await writes.add_message("user", turn_id="trn_1")
    await writes.add_part(message, "text", {"text": "kept"})

    await store.close()

    assert _rows(tmp_path / "totem.db", "SELECT message_id FROM parts") == [(message,)]
    with pytest.raises(RuntimeError):
        await writes.add_part(message, "text", {"text": "too late"})


async def test_close_raises_a_failure_no_flush_raised(tmp_path: Path):
    store = Store(tmp_path / "totem.db")
    session = await store.create_session(cwd="/repo", model="m")
    await store.deferred(session.id).update_part("prt_missing", status="done")

    with pytest.raises(WriteFailed, match="prt_missing"):
        await store.close()
    await store.close()  # closed, and the error was raised once


async def test_a_cancelled_caller_loses_no_queued_write_and_leaves_none_half_done(store: Store):
    session = await store.create_session(cwd="/repo", model="m")
    writes = store.deferred(session.id)
    messages = []
    with anyio.CancelScope() as scope:
        for n in range(20):
            messages.append(await writes.add_message("user", turn_id=f"trn_{n}"))
            await writes.add_part(messages[-1], "text", {"text": str(n)})
        scope.cancel()
        await writes.flush()  # cancelled before or after its thread ran: either way nothing is dropped
    with anyio.CancelScope() as scope:
        scope.cancel()
        await store.messages(session.id)

    stored = await store.messages(session.id)

    assert [m.id for m in stored] == messages
    assert [[p.data["text"] for p in m.parts] for m in stored] == [[str(n)] for n in range(20)]


async def test_a_waited_call_applies_only_the_writes_submitted_before_it(tmp_path: Path):
    worker = SqliteWorker(tmp_path / "w.db", schema="CREATE TABLE IF NOT EXISTS t (x)", version=1, closed_message="closed")
    seen: list[int] = []

    def count(conn: sqlite3.Connection) -> None:
        seen.append(conn.execute("SELECT COUNT(*) FROM t").fetchone()[0])

    async with anyio.create_task_group() as group:
        await worker.submit(lambda conn: conn.execute("INSERT INTO t VALUES (1)"), owner="a", what="first")
        group.start_soon(worker.run, count)
        await anyio.sleep(0)  # the run is called (and waits for its thread) after the first write, before the second
        await worker.submit(lambda conn: conn.execute("INSERT INTO t VALUES (2)"), owner="a", what="second")
    await worker.run(count)
    await worker.close()

    assert seen == [1, 2]


async def test_a_long_queue_is_stored_by_the_submitter_without_a_flush(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("totem_engine.sqlite_worker.DRAIN_AT", 3)
    async with Store(tmp_path / "totem.db") as store:
        session = await store.create_session(cwd="/repo", model="m")
        writes = store.deferred(session.id)
        message = await writes.add_message("assistant", turn_id="trn_1")
        part = await writes.add_part(message, "text", {"text": "a"})
        assert _rows(store.path, "SELECT id FROM parts") == []

        await writes.update_part(part, data={"text": "ab"})  # the third queued write

        assert _rows(store.path, "SELECT data FROM parts") == [('{"text":"ab"}',)]


async def test_commit_every_stores_the_queue_while_the_turn_waits(store: Store):
    session = await store.create_session(cwd="/repo", model="m")
    writes = store.deferred(session.id)
    message = await writes.add_message("assistant", turn_id="trn_1")
    await writes.add_part(message, "tool", {"tool": "bash"}, status="running")

    async with anyio.create_task_group() as group:
        group.start_soon(writes.commit_every, 0.01)
        with anyio.fail_after(10):
            while not _rows(store.path, "SELECT status FROM parts"):  # no flush: the committer stores it
                await anyio.sleep(0.01)
        group.cancel_scope.cancel()

    assert _rows(store.path, "SELECT status FROM parts") == [("running",)]
