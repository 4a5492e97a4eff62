"""totem_lsp.stream.EventStream: deltas coalesced per session, and nothing kept after a turn."""

from __future__ import annotations

import asyncio

from totem_engine.api import events as ev
from totem_lsp.stream import INTERVAL, EventStream


def delta(session: str, text: str, part: str = "p1") -> ev.TextDelta:
    return ev.TextDelta(session_id=session, part_id=part, text=text)


async def test_a_session_whose_turn_ended_leaves_nothing_behind():
    sent: list[dict] = []
    stream = EventStream(sent.append)
    for n in range(50):
        session = f"ses_{n}"
        stream.publish(delta(session, "a"))  # sent at once
        stream.publish(delta(session, "b"))  # within the interval: held
        stream.end(session)
    assert [e["text"] for e in sent] == ["a", "b"] * 50
    # A server that lives for thousands of sessions must not keep one entry per session.
    assert (stream._pending, stream._last, stream._timers) == ({}, {}, {})


async def test_deltas_within_the_interval_are_joined_and_flushed_by_the_timer():
    sent: list[dict] = []
    stream = EventStream(sent.append)
    stream.publish(delta("s", "a"))
    stream.publish(delta("s", "b"))
    stream.publish(delta("s", "c"))
    assert [e["text"] for e in sent] == ["a"]
    await asyncio.sleep(INTERVAL * 3)
    assert [e["text"] for e in sent] == ["a", "bc"]


async def test_other_events_flush_what_waits_first_and_parts_are_not_merged():
    sent: list[dict] = []
    stream = EventStream(sent.append)
    stream.publish(delta("s", "a"))
    stream.publish(delta("s", "b"))
    stream.publish(delta("s", "c", part="p2"))
    stream.publish(ev.ReasoningDelta(session_id="s", part_id="p2", text="r"))
    stream.publish(delta("s", "d", part="p2"))
    stream.publish(ev.TurnEnd(session_id="s", turn_id="t", stop_reason="finished", text="abcd", model="m"))
    assert [(e["kind"], e.get("partId"), e.get("text")) for e in sent] == [
        ("textDelta", "p1", "a"), ("textDelta", "p1", "b"), ("textDelta", "p2", "c"),
        ("reasoningDelta", "p2", "r"), ("textDelta", "p2", "d"), ("turnEnd", None, "abcd"),
    ]
    assert "parentCallId" not in sent[0]  # the wire form of the conversation's own events
