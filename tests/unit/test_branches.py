"""The conversation as a tree (store/, branches.py): a rewind moves the head and marks what it
sets aside, reads follow the path, nothing is deleted; a database of schema 1 is migrated."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from totem_engine.branches import NotInConversation, Tree
from totem_engine.compaction.derived import DerivedHistory
from totem_engine.history import to_messages
from totem_engine.store import MessageNotFound, Store

# The schema Totem wrote before the conversation became a tree (version 1), as a database of
# that time holds it.
SCHEMA_1 = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT, model TEXT NOT NULL, mode TEXT NOT NULL,
    cwd TEXT NOT NULL, parent_id TEXT, forked_from_message TEXT, meta TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT NULL,
    role TEXT NOT NULL, turn_id TEXT NOT NULL, step INTEGER, model TEXT, created_at REAL NOT NULL,
    UNIQUE (session_id, seq));
CREATE TABLE parts (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
    seq INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, status TEXT,
    discarded INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, updated_at REAL NOT NULL,
    UNIQUE (message_id, seq));
PRAGMA user_version = 1;
"""


@pytest.fixture
async def store(tmp_path: Path):
    async with Store(tmp_path / "totem.db") as store:
        yield store


async def say(store: Store, session_id: str, role: str, text: str, turn: str) -> str:
    message = await store.add_message(session_id, role, turn_id=turn)
    await store.add_part(message, "text", {"text": text})
    return message


async def texts(store: Store, session_id: str) -> list[str]:
    return [p.data["text"] for m in await store.messages(session_id) for p in m.parts]


async def conversation(store: Store) -> tuple[str, list[str]]:
    session = await store.create_session(cwd="/p", model="m")
    ids = [
        await say(store, session.id, "user", "q1", "t1"),
        await say(store, session.id, "assistant", "a1", "t1"),
        await say(store, session.id, "user", "q2", "t2"),
        await say(store, session.id, "assistant", "a2", "t2"),
    ]
    return session.id, ids


async def test_each_message_follows_the_head_and_a_moved_head_sets_the_rest_aside(store):
    session_id, ids = await conversation(store)
    messages, head = await store.tree(session_id)
    assert head == ids[-1] and [m.parent_id for m in messages] == [None, *ids[:-1]]

    await store.move_head(session_id, ids[1], rewound=ids[2:])

    assert await texts(store, session_id) == ["q1", "a1"]
    await say(store, session_id, "user", "q3", "t3")
    assert await texts(store, session_id) == ["q1", "a1", "q3"]
    messages, head = await store.tree(session_id)
    assert [m.rewound for m in messages] == [False, False, True, True, False]
    assert messages[-1].parent_id == ids[1]
    exported = await store.export(session_id)
    assert [(m["rewound"], m["active"]) for m in exported["messages"]] == [
        (False, True), (False, True), (True, False), (True, False), (False, True),
    ]


async def test_another_store_reads_the_same_path(store, tmp_path):
    session_id, ids = await conversation(store)
    await store.move_head(session_id, ids[1], rewound=ids[2:])
    async with Store(tmp_path / "totem.db") as other:
        assert await texts(other, session_id) == ["q1", "a1"]


async def test_a_head_of_another_session_is_refused(store):
    session_id, _ = await conversation(store)
    _, other_ids = await conversation(store)
    with pytest.raises(MessageNotFound):
        await store.move_head(session_id, other_ids[0])
    assert await texts(store, session_id) == ["q1", "a1", "q2", "a2"]


async def test_the_derived_history_keeps_the_prefix_and_drops_what_was_set_aside(store):
    session_id, ids = await conversation(store)
    history = DerivedHistory()
    history.update(await store.messages(session_id))
    converted = history.converted

    await store.move_head(session_id, ids[1], rewound=ids[2:])
    after = await store.messages(session_id)
    history.update(after)

    assert history.converted == converted  # the kept messages are the same objects: nothing converted again
    assert [m.text for m in history.messages_from(0)] == [m.text for m in to_messages(after)] == ["q1", "a1"]


async def test_a_fork_from_a_message_of_another_branch_copies_its_own_ancestry(store):
    session_id, ids = await conversation(store)
    await store.move_head(session_id, ids[1], rewound=ids[2:])
    await say(store, session_id, "user", "q3", "t3")

    fork = await store.fork(session_id, ids[3])  # a2, set aside by the rewind

    assert await texts(store, fork.id) == ["q1", "a1", "q2", "a2"]
    assert await texts(store, session_id) == ["q1", "a1", "q3"]


async def test_the_tree_knows_requests_variants_and_where_a_branch_continues(store):
    session_id, ids = await conversation(store)
    await store.move_head(session_id, ids[0])  # answer q1 again: a second variant
    again = await say(store, session_id, "assistant", "a1 again", "t9")
    tree = Tree(*await store.tree(session_id))

    assert tree.request_of(tree.get(again)).id == ids[0]
    assert [v.id for v in tree.variants(tree.get(ids[0]))] == [ids[1], again]
    assert tree.chosen(tree.get(ids[0])) == 1
    assert tree.newest_in(tree.get(ids[1])).id == ids[3]  # the first variant continues where it was left
    assert tree.starts_turn(tree.get(again)) and not tree.starts_turn(tree.get(ids[1]))
    with pytest.raises(NotInConversation):
        tree.active(ids[3])


async def test_a_database_of_schema_1_becomes_one_line_per_session(tmp_path):
    db = tmp_path / "totem.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(SCHEMA_1)
        conn.execute("INSERT INTO sessions VALUES ('s', NULL, 'm', 'build', '/p', NULL, NULL, '{}', 0, 0)")
        for seq in range(3):
            conn.execute("INSERT INTO messages VALUES (?, 's', ?, 'user', 't', NULL, NULL, 0)", (f"m{seq}", seq))
            conn.execute("INSERT INTO parts VALUES (?, ?, 's', 0, 'text', ?, NULL, 0, 0, 0)", (f"p{seq}", f"m{seq}", f'{{"text": "{seq}"}}'))
    async with Store(db) as store:
        messages, head = await store.tree("s")
        assert head == "m2" and [m.parent_id for m in messages] == [None, "m0", "m1"]
        assert await texts(store, "s") == ["0", "1", "2"]
        await say(store, "s", "user", "3", "t")
        assert await texts(store, "s") == ["0", "1", "2", "3"]


async def test_a_failed_turn_is_cut_after_its_last_completed_step(store):
    session = await store.create_session(cwd="/p", model="m")
    request = await say(store, session.id, "user", "q", "t1")
    done = await store.add_message(session.id, "assistant", turn_id="t1", step=1)
    await store.add_part(done, "step", {"step": 1})
    failed = await store.add_message(session.id, "assistant", turn_id="t1", step=2)
    await store.add_part(failed, "text", {"text": "half an answ"})
    error = await store.add_message(session.id, "assistant", turn_id="t1")
    await store.add_part(error, "error", {"stopReason": "error", "text": "refused", "retry": 2})
    tree = Tree(*await store.tree(session.id))

    found_request, cut, retried = tree.failed_turn()

    assert (found_request.id, cut.id, retried) == (request, failed, 2)
    assert tree.set_aside(cut) == [failed, error]


async def test_a_turn_that_ended_well_is_no_failure(store):
    session_id, _ = await conversation(store)
    assert Tree(*await store.tree(session_id)).failed_turn() is None
