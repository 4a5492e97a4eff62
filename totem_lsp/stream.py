"""Engine events to the editor as ``totem/event`` notifications, text deltas coalesced.

The first text (or reasoning) delta of a burst goes out at once; later ones are merged and sent
at most every ``INTERVAL`` seconds per session, so a fast model cannot flood the editor. Any other
event first flushes what is waiting, so nothing is dropped or reordered. Events are turned into
their wire form (``Event.to_wire``) only when sent: a merged delta once, not once per delta.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from totem_engine.api import events as ev

INTERVAL = 0.03  # seconds


class EventStream:
    def __init__(self, send: Callable[[dict[str, Any]], None]):
        self._send = send
        # Per session, the deltas waiting, each with the texts merged into it: joined once when
        # sent (adding to one string copied it whole at every delta, quadratic in a burst).
        self._pending: dict[str, list[tuple[ev.TextDelta | ev.ReasoningDelta, list[str]]]] = {}
        self._last: dict[str, float] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def publish(self, event: ev.Event) -> None:
        session = event.session_id
        if not isinstance(event, (ev.TextDelta, ev.ReasoningDelta)):
            self.flush(session)
            self._send(event.to_wire())
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        pending = self._pending.setdefault(session, [])
        if not pending and now - self._last.get(session, float("-inf")) >= INTERVAL:
            self._send(event.to_wire())
            self._last[session] = now
            return
        last = pending[-1][0] if pending else None
        if last is not None and last.kind == event.kind and last.part_id == event.part_id:
            pending[-1][1].append(event.text)
        else:
            pending.append((event, [event.text]))
        if session not in self._timers:
            delay = max(0.0, self._last.get(session, now) + INTERVAL - now)
            self._timers[session] = loop.call_later(delay, self.flush, session)

    def flush(self, session: str) -> None:
        timer = self._timers.pop(session, None)
        if timer is not None:
            timer.cancel()
        pending = self._pending.pop(session, [])
        for event, texts in pending:
            wire = event.to_wire()
            wire["text"] = "".join(texts)
            self._send(wire)
        if pending:
            self._last[session] = asyncio.get_running_loop().time()

    def end(self, session: str) -> None:
        """The session's turn ended: what is pending goes out, and nothing is kept for it (a
        long-lived server sees many sessions)."""
        self.flush(session)
        self._last.pop(session, None)
