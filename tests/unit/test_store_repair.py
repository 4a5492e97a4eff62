"""The store keeps a session usable whatever a model sent (issue 16, items 7 and 8).

A tool part stored with an integer ``callId`` (before ids were normalised at the wire) is
repaired on load, so the session's later turns can send it back; text with a lone surrogate is
stored with the bad code point replaced, never dropped with the turn.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from totem_engine.history import to_messages
from totem_engine.store import Store, storable
from totem_engine.vocab.tools import wire_call_id


@pytest.fixture
async def store(tmp_path: Path):
    async with Store(tmp_path / "totem.db") as store:
        yield store


async def _assistant(store: Store) -> tuple[str, str]:
    session = await store.create_session(cwd="/repo", model="m1")
    message = await store.add_message(session.id, "assistant", turn_id="trn_1", step=1)
    return session.id, message


@pytest.mark.parametrize("bad", [12345, 1.5, None, ["x"], {"a": 1}, True, ""])
async def test_a_tool_part_with_a_bad_call_id_is_repaired_on_load(store, bad):
    session, message = await _assistant(store)
    data = {"callId": bad, "tool": "read", "arguments": {"path": "a"}, "output": "x"}
    await store.add_part(message, "tool", data, status="ok")
    stored = await store.messages(session)
    calls = to_messages(stored)[0].tool_calls
    assert len(calls) == 1 and isinstance(calls[0].id, str) and calls[0].id
    assert isinstance(calls[0].arguments, str)
    if isinstance(bad, int | float) and not isinstance(bad, bool):
        assert calls[0].id == str(bad)
    # Loading twice gives the same id, so the call and its result stay paired.
    assert to_messages(await store.messages(session))[1].tool_call_id == calls[0].id


@settings(max_examples=200, deadline=None)
@given(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.lists(st.integers()))
def test_a_wire_id_is_always_text(raw):
    got = wire_call_id(raw)
    assert isinstance(got, str)
    if isinstance(raw, str):
        assert got == raw
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        assert got == str(raw)
    else:
        assert got == ""


async def test_text_with_a_lone_surrogate_is_stored_with_it_replaced(store):
    session, message = await _assistant(store)
    await store.add_part(message, "text", {"text": "A\udcffB"})
    await store.add_part(message, "tool", {"callId": "c1", "tool": "edit", "arguments": '{"x": "\ud800"}'})
    await store.update_session(session, title="t\udfff")
    parts = (await store.messages(session))[0].parts
    assert parts[0].data["text"] == "A\ufffdB"
    assert parts[1].data["arguments"] == '{"x": "\ufffd"}'
    assert (await store.get_session(session)).title == "t\ufffd"


@settings(max_examples=100, deadline=None)
@given(st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())))
def test_any_text_becomes_storable_and_keeps_its_length(text):
    stored = storable(text)
    stored.encode("utf-8")  # raises for anything SQLite could not take
    assert len(stored) == len(text)
    assert all(a == b or 0xD800 <= ord(a) <= 0xDFFF for a, b in zip(text, stored))
