"""A streamed reply (text or reasoning) stuck repeating one span (seed 003): ``RepetitionDetector``,
fed by one step's stream (stream.py), which cuts the reply when it fires."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RepetitionDetector:
    """Fed a stream's text piece by piece; fires when the text ends in one span repeated over and over.

    The tail of the stream (``window`` characters) is checked every ``check_every`` characters:
    it fires when its last ``need(p)`` characters are periodic with a primitive period ``p``, where
    ``need(p) = max(min_span, repeats * p)`` and ``repeats`` is ``min_repeats`` (8) for periods
    under ``long_period`` and ``long_repeats`` (4) for longer ones. ``min_span`` (2000 characters)
    keeps normal text safe: a rule of 80 ``=``, a 9x9 matrix of zeros, an indented block, a list
    of imports or a table are far from it, while a model caught in a loop passes it in a few
    seconds. A short period (a run of one character, ``0,0,0`` in a minified line) is judged by
    the same span, never by its count of repeats.

    Cost: each check is a few ``rfind`` and slice comparisons over the bounded tail, at most
    ``max_candidates`` periods; amortised over ``check_every`` characters that is O(1) per
    character. Once fired it stays fired; ``period``, ``unit`` and ``start`` (the offset in the
    whole stream where the repetition begins, as far back as the tail shows) describe it.
    """

    window: int = 16_384
    check_every: int = 256
    min_span: int = 2_000
    min_repeats: int = 8
    long_period: int = 256
    long_repeats: int = 4
    max_candidates: int = 64
    probe: int = 16

    fired: bool = False
    period: int | None = None
    unit: str = ""
    start: int | None = None
    _tail: str = ""
    _pending: list[str] = field(default_factory=list)
    _pending_chars: int = 0
    _total: int = 0  # characters fed so far

    def need(self, period: int) -> int:
        repeats = self.min_repeats if period < self.long_period else self.long_repeats
        return max(self.min_span, repeats * period)

    def feed(self, text: str) -> bool:
        if self.fired:
            return True
        if not text:
            return False
        self._pending.append(text)
        self._pending_chars += len(text)
        self._total += len(text)
        if self._pending_chars >= self.check_every:
            self._check()
        return self.fired

    def finish(self) -> bool:
        """Check what is left at the end of the stream (optional: a loop is cut long before)."""
        if not self.fired and self._pending:
            self._check()
        return self.fired

    @property
    def reason(self) -> str:
        shown = self.unit if len(self.unit) <= 60 else self.unit[:57] + "..."
        return (
            f"The reply kept repeating the same {self.period}-character span ({shown!r}) over and over; "
            'it was cut and the run stopped. Say "continue" to go on.'
        )

    def keep(self, copies: int = 1) -> int | None:
        """How many characters of the stream to keep: up to ``copies`` units of the repetition."""
        if self.start is None or self.period is None:
            return None
        return self.start + copies * self.period

    def _check(self) -> None:
        tail = self._tail + "".join(self._pending)
        self._pending.clear()
        self._pending_chars = 0
        if len(tail) > self.window:
            tail = tail[-self.window :]
        self._tail = tail
        n = len(tail)
        if n < self.min_span:
            return
        width = self.probe
        needle = tail[n - width :]
        tried: set[int] = set()
        right = n - 1  # occurrences must start at or before right - width
        for _ in range(self.max_candidates):
            at = tail.rfind(needle, 0, right)
            if at < 0:
                return
            right = at + width - 1
            p = n - width - at  # distance to the earlier occurrence: a candidate period
            if self.need(p) > n:
                if p >= self.long_period:
                    return  # need() only grows from here on
                continue
            if tail[n - 2 * p : n - p] != tail[n - p :]:
                continue
            unit = tail[n - p :]
            q = (unit + unit).find(unit, 1)  # the unit's primitive period (divides p)
            if q in tried:
                continue
            tried.add(q)
            span = self.need(q)
            if span <= n and tail[n - span : n - q] == tail[n - span + q :]:
                self._fire(tail, q, span)
                return

    def _fire(self, tail: str, q: int, span: int) -> None:
        n = len(tail)
        begin = n - span
        while begin - q >= 0 and tail[begin - q : begin] == tail[begin : begin + q]:
            begin -= q
        while begin > 0 and tail[begin - 1] == tail[begin - 1 + q]:
            begin -= 1
        self.fired = True
        self.period = q
        self.unit = tail[begin : begin + q]
        self.start = self._total - n + begin


