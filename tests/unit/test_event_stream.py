"""totem_lsp.stream.EventStream: deltas coalesced per session, and nothing kept after a turn."""

from __future__ import annotations

import asyncio

from totem_lsp.stream import INTERVAL, EventStream


def delta(session: str, text: str) -> dict:
    return {"kind": "textDelta", "sessionId": session, "partId": "p1", "text": text}


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
