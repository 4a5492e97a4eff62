"""The history store: ordering, append-only updates, discard, export, fork, and durability
across processes (a live reader, a writer killed with SIGKILL)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import anyio
import pytest

from totem_engine.store import (
    MessageNotFound,
    PartNotFound,
    SessionNotFound,
    Store,
    new_id,
)


@pytest.fixture
async def store(tmp_path: Path):
    async with Store(tmp_path / "totem.db") as store:
        yield store


async def _session_with_turn(store: Store) -> tuple[str, str, str]:
    """A session holding one user message and one assistant message, each with a text part.

    Returns (session_id, user_message_id, assistant_message_id)."""
    session = await store.create_session(cwd="/repo", model="m1")
    user = await store.add_message(session.id, "user", turn_id="trn_1")
    await store.add_part(user, "text", {"text": "hello"})
    assistant = await store.add_message(session.id, "assistant", turn_id="trn_1", step=0)
    await store.add_part(assistant, "text", {"text": "hi"}, status="done")
    return session.id, user, assistant


def test_new_id_is_prefixed_unique_and_sorts_in_creation_order():
    ids = [new_id("prt") for _ in range(2000)]
    assert all(i.startswith("prt_") for i in ids)
    assert len(set(ids)) == len(ids)
    assert sorted(ids) == ids


async def test_default_path_is_under_xdg_data_home(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    async with Store() as store:
        await store.create_session(cwd="/repo", model="m1")
    db = tmp_path / "data" / "totem" / "totem.db"
    assert store.path == db
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 1


async def test_create_get_and_list_newest_updated_first(store: Store):
    first = await store.create_session(cwd="/a", model="m1")
    second = await store.create_session(cwd="/b", model="m2", mode="plan", title="Two")
    third = await store.create_session(cwd="/a", model="m1")

    got = await store.get_session(second.id)
    assert got == second
    assert (got.title, got.mode, got.cwd, got.meta) == ("Two", "plan", "/b", {})
    assert got.parent_id is None
    assert [s.id for s in await store.list_sessions()] == [third.id, second.id, first.id]
    assert [s.id for s in await store.list_sessions(cwd="/a")] == [third.id, first.id]

    # Activity moves a session to the front.
    await store.add_message(first.id, "user", turn_id="trn_1")
    assert [s.id for s in await store.list_sessions()] == [first.id, third.id, second.id]
    await store.update_session(second.id, title="renamed")
    assert [s.id for s in await store.list_sessions()][0] == second.id


async def test_update_session_sets_given_fields_only(store: Store):
    session = await store.create_session(cwd="/a", model="m1")
    await store.update_session(session.id, title="Fix the parser")
    await store.update_session(session.id, model="m2", meta={"tokens": 12})
    await store.update_session(session.id, meta={"cost": 0.5})

    got = await store.get_session(session.id)
    assert (got.title, got.model, got.mode) == ("Fix the parser", "m2", "build")
    assert got.meta == {"cost": 0.5}  # replaced whole, not merged
    assert got.updated_at > session.updated_at


async def test_missing_ids_raise_lookup_errors(store: Store):
    with pytest.raises(SessionNotFound) as caught:
        await store.get_session("ses_nope")
    assert isinstance(caught.value, LookupError) and caught.value.session_id == "ses_nope"
    with pytest.raises(SessionNotFound):
        await store.update_session("ses_nope", title="x")
    with pytest.raises(SessionNotFound):
        await store.add_message("ses_nope", "user", turn_id="trn_1")
    with pytest.raises(SessionNotFound):
        await store.messages("ses_nope")
    with pytest.raises(SessionNotFound):
        await store.export("ses_nope")
    with pytest.raises(MessageNotFound):
        await store.add_part("msg_nope", "text", {"text": ""})
    with pytest.raises(MessageNotFound):
        await store.discard_message_parts("msg_nope")
    with pytest.raises(PartNotFound):
        await store.update_part("prt_nope", status="done")


async def test_unknown_role_or_part_type_is_refused(store: Store):
    session = await store.create_session(cwd="/a", model="m1")
    with pytest.raises(ValueError):
        await store.add_message(session.id, "tool", turn_id="trn_1")
    message = await store.add_message(session.id, "assistant", turn_id="trn_1")
    with pytest.raises(ValueError):
        await store.add_part(message, "video", {})
    assert (await store.messages(session.id))[0].parts == []


async def test_messages_and_parts_come_back_in_append_order(store: Store):
    session = await store.create_session(cwd="/a", model="m1")
    user = await store.add_message(session.id, "user", turn_id="trn_1")
    await store.add_part(user, "text", {"text": "list files"})
    step0 = await store.add_message(session.id, "assistant", turn_id="trn_1", step=0, model="m1")
    reasoning = await store.add_part(step0, "reasoning", {"text": "think"})
    tool = await store.add_part(step0, "tool", {"tool": "ls", "input": {}}, status="running")
    step1 = await store.add_message(session.id, "assistant", turn_id="trn_1", step=1, model="m1")
    text = await store.add_part(step1, "text", {"text": "done"})

    messages = await store.messages(session.id)
    assert [(m.id, m.seq, m.role, m.step) for m in messages] == [
        (user, 0, "user", None),
        (step0, 1, "assistant", 0),
        (step1, 2, "assistant", 1),
    ]
    assert messages[1].model == "m1" and messages[1].turn_id == "trn_1"
    assert [(p.id, p.seq, p.type) for p in messages[1].parts] == [
        (reasoning, 0, "reasoning"),
        (tool, 1, "tool"),
    ]
    assert messages[1].parts[1].status == "running"
    assert messages[1].parts[1].data == {"tool": "ls", "input": {}}
    assert [p.id for p in messages[2].parts] == [text]


async def test_update_part_replaces_data_and_status_independently(store: Store):
    session = await store.create_session(cwd="/a", model="m1")
    message = await store.add_message(session.id, "assistant", turn_id="trn_1")
    part = await store.add_part(message, "text", {"text": "He"}, status="streaming")
    await store.update_part(part, data={"text": "Hello"})
    [stored] = (await store.messages(session.id))[0].parts
    assert (stored.data, stored.status) == ({"text": "Hello"}, "streaming")

    await store.update_part(part, status="done")
    [stored_again] = (await store.messages(session.id))[0].parts
    assert (stored_again.data, stored_again.status) == ({"text": "Hello"}, "done")
    assert stored_again.updated_at >= stored.updated_at >= stored.created_at
    assert stored_again.created_at == stored.created_at


async def test_discard_marks_parts_but_keeps_them(store: Store):
    session_id, _, failed = await _session_with_turn(store)
    await store.add_part(failed, "tool", {"tool": "ls"}, status="error")
    await store.discard_message_parts(failed)
    retry = await store.add_message(session_id, "assistant", turn_id="trn_1", step=0)
    await store.add_part(retry, "text", {"text": "second try"})
    empty = await store.add_message(session_id, "assistant", turn_id="trn_1", step=1)

    visible = await store.messages(session_id)
    # The retried step's message is gone from the default view; a message with no parts yet
    # (still streaming) is not.
    assert [m.id for m in visible if m.role == "assistant"] == [retry, empty]
    assert all(not p.discarded for m in visible for p in m.parts)

    everything = await store.messages(session_id, include_discarded=True)
    kept = next(m for m in everything if m.id == failed)
    assert [(p.type, p.discarded) for p in kept.parts] == [("text", True), ("tool", True)]
    assert kept.parts[1].status == "error"


async def test_export_is_json_with_camel_case_keys_and_discarded_parts(store: Store):
    session_id, user, assistant = await _session_with_turn(store)
    await store.discard_message_parts(assistant)

    exported = json.loads(json.dumps(await store.export(session_id)))
    assert exported["session"]["id"] == session_id
    assert {"parentId", "forkedFromMessage", "createdAt", "updatedAt", "meta"} <= set(
        exported["session"]
    )
    assert [m["id"] for m in exported["messages"]] == [user, assistant]
    assert exported["messages"][1]["turnId"] == "trn_1"
    [part] = exported["messages"][1]["parts"]
    assert part["discarded"] is True and part["data"] == {"text": "hi"}
    assert {"messageId", "createdAt", "updatedAt"} <= set(part)


async def test_a_fork_keeps_its_checkpoints_covering_its_own_copies(store: Store):
    session_id, user, assistant = await _session_with_turn(store)
    mark = await store.add_message(session_id, "assistant", turn_id="checkpoint")
    await store.add_part(mark, "checkpoint", {"text": "summary", "covers": assistant, "messages": 2})

    fork = await store.fork(session_id, mark)
    copied = await store.messages(fork.id)
    [part] = copied[-1].parts
    assert part.data == {"text": "summary", "covers": copied[1].id, "messages": 2}
    assert copied[1].id != assistant


async def test_fork_copies_history_up_to_the_message_with_new_ids(store: Store):
    session_id, user, assistant = await _session_with_turn(store)
    await store.update_session(session_id, title="Greeting", meta={"k": 1})
    later = await store.add_message(session_id, "user", turn_id="trn_2")
    await store.add_part(later, "text", {"text": "after the fork point"})
    await store.discard_message_parts(user)

    fork = await store.fork(session_id, assistant)
    assert (fork.parent_id, fork.forked_from_message) == (session_id, assistant)
    assert (fork.title, fork.model, fork.cwd, fork.meta) == ("Greeting", "m1", "/repo", {"k": 1})
    assert await store.get_session(fork.id) == fork

    original = await store.messages(session_id, include_discarded=True)
    copied = await store.messages(fork.id, include_discarded=True)
    assert len(copied) == 2
    for old, new in zip(original[:2], copied):
        assert new.id != old.id and new.session_id == fork.id
        assert (new.seq, new.role, new.turn_id, new.step, new.created_at) == (
            old.seq, old.role, old.turn_id, old.step, old.created_at
        )
        assert [(p.type, p.data, p.status, p.discarded) for p in new.parts] == [
            (p.type, p.data, p.status, p.discarded) for p in old.parts
        ]
        assert {p.id for p in new.parts}.isdisjoint(p.id for p in old.parts)

    # The fork grows on its own; the original is untouched.
    extra = await store.add_message(fork.id, "user", turn_id="trn_3")
    assert (await store.messages(fork.id))[-1].id == extra
    assert [m.id for m in await store.messages(session_id, include_discarded=True)] == [
        user, assistant, later
    ]


async def test_fork_refuses_a_message_of_another_session(store: Store):
    session_id, _, _ = await _session_with_turn(store)
    _, other_user, _ = await _session_with_turn(store)
    with pytest.raises(MessageNotFound):
        await store.fork(session_id, other_user)
    assert len(await store.list_sessions()) == 2


async def test_concurrent_calls_are_serialized_on_worker_threads(store: Store):
    session = await store.create_session(cwd="/a", model="m1")
    message = await store.add_message(session.id, "assistant", turn_id="trn_1")
    threads: set[int] = set()
    store._db._conn.set_trace_callback(lambda _statement: threads.add(threading.get_ident()))

    async with anyio.create_task_group() as tg:
        for i in range(30):
            tg.start_soon(store.add_part, message, "text", {"i": i})

    parts = (await store.messages(session.id))[0].parts
    assert [p.seq for p in parts] == list(range(30))
    assert sorted(p.data["i"] for p in parts) == list(range(30))
    assert threads and threading.get_ident() not in threads


async def test_closed_store_refuses_calls(tmp_path: Path):
    store = Store(tmp_path / "totem.db")
    await store.create_session(cwd="/a", model="m1")
    await store.close()
    await store.close()
    with pytest.raises(RuntimeError):
        await store.list_sessions()


async def test_database_from_a_newer_schema_is_refused(tmp_path: Path):
    db = tmp_path / "totem.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 99")
    async with Store(db) as store:
        with pytest.raises(RuntimeError, match="schema version 99"):
            await store.list_sessions()


async def test_second_store_and_writer_share_the_open_database(tmp_path: Path):
    db = tmp_path / "totem.db"
    async with Store(db) as writer:
        session_id, _, assistant = await _session_with_turn(writer)
        part = await writer.add_part(assistant, "text", {"text": "str"}, status="streaming")

        async with Store(db) as reader:
            seen = (await reader.messages(session_id))[1].parts[-1]
            assert (seen.id, seen.data) == (part, {"text": "str"})

            await writer.update_part(part, data={"text": "streamed"})
            assert (await reader.messages(session_id))[1].parts[-1].data == {"text": "streamed"}


async def test_writer_is_not_blocked_by_an_open_read_transaction(tmp_path: Path):
    db = tmp_path / "totem.db"
    async with Store(db) as writer:
        session_id, _, assistant = await _session_with_turn(writer)
        reader = sqlite3.connect(db, isolation_level=None)
        try:
            reader.execute("BEGIN")
            count = "SELECT COUNT(*) FROM parts"
            assert reader.execute(count).fetchone()[0] == 2
            # Without WAL this commit would wait for the reader and then fail as locked.
            with anyio.fail_after(5):
                await writer.add_part(assistant, "text", {"text": "more"})
            assert reader.execute(count).fetchone()[0] == 2  # the reader's snapshot
            reader.execute("COMMIT")
            assert reader.execute(count).fetchone()[0] == 3
        finally:
            reader.close()


_READER = textwrap.dedent(
    """
    import json, sqlite3, sys
    conn = sqlite3.connect(sys.argv[1])
    rows = conn.execute("SELECT data FROM parts WHERE session_id = ? ORDER BY message_id, seq",
                        (sys.argv[2],))
    print(json.dumps([json.loads(data) for (data,) in rows]))
    """
)


async def test_plain_sqlite3_process_reads_while_the_store_is_open(tmp_path: Path):
    db = tmp_path / "totem.db"
    async with Store(db) as store:
        session_id, _, assistant = await _session_with_turn(store)
        part = await store.add_part(assistant, "text", {"text": "partial"}, status="streaming")

        result = await anyio.run_process(
            [sys.executable, "-c", _READER, str(db), session_id], check=True
        )
        assert json.loads(result.stdout) == [{"text": "hello"}, {"text": "hi"}, {"text": "partial"}]

        # The reader left no lock behind.
        await store.update_part(part, data={"text": "partial and more"}, status="done")
        assert (await store.messages(session_id))[1].parts[-1].status == "done"


_KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import anyio
    from totem_engine.store import Store

    async def main():
        store = Store(Path(sys.argv[1]))
        session = await store.create_session(cwd="/repo", model="m1")
        print("session", session.id, flush=True)
        message = await store.add_message(session.id, "assistant", turn_id="trn_1")
        while True:  # streams until killed
            part = await store.add_part(message, "text", {"text": ""}, status="streaming")
            text = ""
            for _ in range(7):
                text += "chunk "
                await store.update_part(part, data={"text": text})
                # Printed only after the call returned, i.e. after the commit.
                print("part", part, len(text), flush=True)

    anyio.run(main)
    """
)


async def test_writer_killed_mid_stream_leaves_what_it_committed(tmp_path: Path):
    db = tmp_path / "totem.db"
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(db)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        with anyio.fail_after(30):
            while sum(line.startswith("part") for line in lines) < 50:
                line = await anyio.to_thread.run_sync(child.stdout.readline)
                assert line, "writer exited early"
                lines.append(line)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        lines += child.stdout.readlines()  # reports already in the pipe when it died
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL

    session_id = lines[0].split()[1]
    reported: dict[str, int] = {}
    for line in lines[1:]:
        if not line.endswith("\n"):
            continue  # killed in the middle of writing this report: it says nothing
        _, part_id, length = line.split()
        reported[part_id] = int(length)

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    async with Store(db) as store:
        [message] = await store.messages(session_id)
    stored = {p.id: p for p in message.parts}
    assert [p.seq for p in message.parts] == list(range(len(message.parts)))
    # Every committed update survived; at most one later update (after the last report) too.
    for part_id, length in reported.items():
        assert len(stored[part_id].data["text"]) >= length
    assert len(stored) - len(reported) <= 1


_FULL_DISK_WRITER = textwrap.dedent(
    """
    import asyncio, resource, signal, sys
    from pathlib import Path
    from totem_engine.store import Store

    async def main(db):
        store = Store(Path(db))
        session = await store.create_session(cwd="/tmp", model="p/m", mode="build")
        message = await store.add_message(session.id, "user", turn_id="t")
        await store.add_part(message, "text", {"text": "kept"})
        print(session.id, flush=True)
        # A full disk: writes past a few KB more fail with EFBIG instead of killing the process.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (Path(db).stat().st_size + 4096, resource.RLIM_INFINITY))
        try:
            await store.add_part(message, "text", {"text": "x" * 5_000_000})
        except Exception as exc:
            print(type(exc).__name__, exc, flush=True)

    asyncio.run(main(sys.argv[1]))
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
async def test_a_full_disk_reports_the_disk_error_and_the_session_stays_readable(tmp_path: Path):
    db = tmp_path / "totem.db"
    done = subprocess.run([sys.executable, "-c", _FULL_DISK_WRITER, str(db)], capture_output=True, text=True, timeout=60)
    session_id, error = done.stdout.splitlines()
    assert "no transaction is active" not in error
    assert error.startswith("OperationalError") and ("disk" in error or "full" in error), error
    async with Store(db) as store:
        [message] = await store.messages(session_id)
    assert [part.data["text"] for part in message.parts] == ["kept"]
