"""The derived history kept from step to step (totem_engine/compaction/derived.py) and the store's
cached reads it keys by: each stored message converted once, converted again when it changes."""

from __future__ import annotations

import json
from pathlib import Path

from totem_engine.compaction import CHECKPOINT_PART, DerivedHistory, build_ledger, fit
from totem_engine.history import to_messages
from totem_engine.store import Store
from tests.unit.test_compaction import FIRST, RESERVE, TODOS, TOOLS, WINDOW, FakeModel, Session, build, file_output


async def fitted_both_ways(session: Session, history: DerivedHistory, **kw):
    """The same fit with the kept history and with a fresh one (the code before the cache)."""
    stored = await session.stored()
    args = dict(build=build, window=WINDOW, output_reserve=RESERVE, tools=TOOLS, **kw)
    history.update(stored)
    kept = await fit(stored, ledger=history.ledger(TODOS), history=history, **args)
    fresh = await fit(stored, ledger=build_ledger(stored, TODOS), **args)
    return kept, fresh


def same(a, b) -> None:
    assert a.messages == b.messages
    assert a.request == b.request
    assert (a.estimate, a.raw_input, a.compacted, a.accounts, a.cut, a.over) == (
        b.estimate, b.raw_input, b.compacted, b.accounts, b.cut, b.over,
    )


async def test_each_stored_message_is_converted_once_across_steps(tmp_path):
    session = await Session.start(tmp_path)
    history = DerivedHistory()
    for index in range(1, 6):
        await session.read_step(index, lines=3)
        history.update(await session.stored())
    # One user message and five steps: six conversions, not 1 + 2 + ... + 6.
    assert history.converted == 6
    stored = await session.stored()
    assert history.messages_from(0) == to_messages(stored)


async def test_the_store_gives_an_unchanged_message_back_as_the_same_object(tmp_path):
    session = await Session.start(tmp_path)
    await session.read_step(1, lines=3)
    first = await session.stored()
    message = await session.store.add_message(session.id, "assistant", turn_id="t1")
    part = await session.store.add_part(message, "text", {"text": "Reading"})
    second = await session.stored()
    assert second[0] is first[0] and second[1] is first[1]
    await session.store.update_part(part, data={"text": "Reading more"})
    third = await session.stored()
    assert third[1] is first[1] and third[2] is not second[2]
    assert third[2].parts[0].data == {"text": "Reading more"}
    # What the cache gives back is what a fresh read of the database gives.
    fresh = await Store(tmp_path / "totem.db").messages(session.id)
    assert [m.to_dict() for m in fresh] == [m.to_dict() for m in third]


async def test_a_discarded_step_is_converted_again_and_left_out(tmp_path):
    session = await Session.start(tmp_path)
    history = DerivedHistory()
    await session.read_step(1, lines=3)
    history.update(await session.stored())
    message = await session.store.add_message(session.id, "assistant", turn_id="t1")
    await session.store.add_part(message, "text", {"text": "An answer that is asked again."})
    history.update(await session.stored())
    assert history.messages_from(0)[-1].text == "An answer that is asked again."
    await session.store.discard_message_parts(message)
    stored = await session.stored()
    history.update(stored)
    assert history.messages_from(0) == to_messages(stored)
    assert all(m.text != "An answer that is asked again." for m in history.messages_from(0))


async def test_a_change_to_an_earlier_message_converts_from_there(tmp_path):
    """A fresh attempt discards the attempt's messages; a context part joins the user's message."""
    session = await Session.start(tmp_path)
    history = DerivedHistory()
    for index in range(1, 4):
        await session.read_step(index, lines=3)
    stored = await session.stored()
    history.update(stored)
    assert history.converted == 4
    await session.store.add_part(stored[0].id, "context", {"text": "The files shown: src/mod_01.py"})
    for message in stored[2:]:
        await session.store.discard_message_parts(message.id)
    stored = await session.stored()
    history.update(stored)
    assert history.converted == 4 + 2  # the user's message and the step kept, again; nothing else
    assert history.messages_from(0) == to_messages(stored)
    assert history.messages_from(0)[0].text.startswith("The files shown")


async def test_a_write_by_another_connection_is_seen(tmp_path):
    session = await Session.start(tmp_path)
    await session.read_step(1, lines=3)
    before = await session.stored()
    other = Store(tmp_path / "totem.db")
    await other.discard_message_parts(before[1].id)
    await other.close()
    after = await session.stored()
    assert [m.id for m in after] == [before[0].id]
    history = DerivedHistory()
    history.update(before)
    history.update(after)
    assert history.messages_from(0) == to_messages(after)


async def test_a_checkpoint_is_replayed_and_what_it_covers_left_out(tmp_path):
    session = await Session.start(tmp_path)
    history = DerivedHistory()
    for index in range(1, 4):
        await session.read_step(index, lines=3)
    stored = await session.stored()
    history.update(stored)
    assert history.checkpoint() == (None, 0)
    message = await session.store.add_message(session.id, "assistant", turn_id="t1")
    await session.store.add_part(message, CHECKPOINT_PART, {"text": "Read modules 1 and 2.", "covers": stored[2].id, "messages": 3})
    await session.read_step(4, lines=3)
    kept, fresh = await fitted_both_ways(session, history)
    same(kept, fresh)
    checkpoint, start = history.checkpoint()
    assert checkpoint is not None and checkpoint.text == "Read modules 1 and 2."
    assert kept.compacted and "Read modules 1 and 2." in kept.messages[0].text
    assert [m.text for m in kept.messages[1:]] == [m.text for m in history.messages_from(start)]
    assert file_output(1, 3) not in "".join(m.text for m in kept.messages)


async def test_fits_with_the_kept_history_equal_fits_from_scratch_through_compaction(tmp_path):
    """Forty large reads: accounts, then a checkpoint written and replayed, step after step."""
    session = await Session.start(tmp_path)
    history = DerivedHistory()
    model = FakeModel()
    written = 0
    for index in range(1, 41):
        await session.read_step(index)
        stored = await session.stored()
        history.update(stored)
        kept = await fit(
            stored, build=build, window=WINDOW, output_reserve=RESERVE, tools=TOOLS, ledger=history.ledger(TODOS),
            history=history, complete=model, store=session.store, session_id=session.id,
        )
        # The fresh fit writes nothing (no store), so both see the same session.
        fresh = await fit(
            stored, build=build, window=WINDOW, output_reserve=RESERVE, tools=TOOLS, ledger=build_ledger(stored, TODOS),
            complete=model,
        )
        same(kept, fresh)
        written += kept.checkpoint_written
    assert written >= 1
    assert history.ledger(TODOS) == build_ledger(await session.stored(), TODOS)
    assert FIRST == history.ledger().first_request


async def test_the_ledger_keeps_each_agents_block_once(tmp_path):
    session = await Session.start(tmp_path)
    block = '<instructions from="src/AGENTS.md">\nNo os.\n</instructions>'
    await session.step("", [("read", {"path": "src/a.py"}, "a\n" + block), ("read", {"path": "src/b.py"}, "b\n" + block)])
    await session.step("", [("read", {"path": "src/c.py"}, "c\n" + block + "\n" + block)])
    stored = await session.stored()
    history = DerivedHistory()
    history.update(stored)
    assert history.ledger(TODOS) == build_ledger(stored, TODOS)
    assert history.call_ids == {"call_1", "call_2", "call_3"}
    assert json.loads(stored[1].parts[0].data["arguments"]) == {"path": "src/a.py"}


async def test_the_store_keeps_at_most_a_few_sessions_in_memory(tmp_path: Path):
    from totem_engine.store import CACHED_SESSIONS

    store = Store(tmp_path / "totem.db")
    ids = [(await store.create_session(cwd="/", model="m")).id for _ in range(CACHED_SESSIONS + 3)]
    for session_id in ids:
        message = await store.add_message(session_id, "user", turn_id="t")
        await store.add_part(message, "text", {"text": session_id})
    assert len(store._cache.messages) == CACHED_SESSIONS
    # A session no longer cached is read from the database, whole.
    assert [p.data["text"] for m in await store.messages(ids[0]) for p in m.parts] == [ids[0]]
    await store.close()
