"""The guards on progress (seed 003 "One prompt, guards on behaviour"), as pure state machines.

- ``Novelty``: each round's tool results against everything already seen in the turn; six rounds
  in a row that bring nothing new end the run.
- ``RepetitionDetector``: a streamed reply (text or reasoning) stuck repeating one span.
- ``ReasoningRetry``: a reply that is all reasoning, no text and no tool call, is asked again with
  the least reasoning the model allows, twice at most.
- ``RoundLimit``: the step limit, extended by up to three passes of ten steps while the run makes
  progress.
- ``UnmadeChange``: a small model that ends its turn saying it changed code while no file was
  changed (or showing the change in prose) is asked once to make it.

No I/O here: the loop feeds these and turns what they return into notices and stop reasons.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# ---------------------------------------------------------------------------------------------
# No new information
# ---------------------------------------------------------------------------------------------

NO_NEW_INFO_ROUNDS = 6

# Parts of an output that change from one identical run to the next and say nothing new:
# durations ("0.53s", "12 ms", "in 1.2 seconds"), clock times, long hex addresses.
_VOLATILE = re.compile(
    r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds)\b"
    r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"
    r"|\b0x[0-9a-fA-F]{6,}\b"
)

RoundResult = tuple[str, Any, str, bool]  # (tool, arguments, output, changed files)


def normalise_output(output: str) -> str:
    """The output with the parts that vary between identical runs masked."""
    return _VOLATILE.sub("#", output)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", errors="replace"), digest_size=16).digest()


def _call_identity(tool: str, arguments: Any) -> str:
    """(tool, key arguments): the tool and its canonical JSON arguments (a raw string as is)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return f"{tool}\x00{canonical}"


@dataclass
class Novelty:
    """What the model has seen in this turn, and how many rounds in a row brought nothing new.

    A result is new information when any of these holds:
    - its call changed a file (``changed``);
    - its output holds a line (stripped, non-empty, volatile parts masked) that no earlier result
      of the turn held: a file not read before, a search with unseen hits;
    - the same call (tool and arguments) gave a different output every time before: a run whose
      output changed, even to a subset of lines already seen.
    A round is progress when any of its results is new. ``record_round`` returns the reason to stop
    after ``limit`` rounds in a row without progress, else None.
    """

    limit: int = NO_NEW_INFO_ROUNDS
    stale_rounds: int = 0
    last_round_new: bool = True
    _lines: set[bytes] = field(default_factory=set)
    _outputs: dict[str, set[bytes]] = field(default_factory=dict)

    def is_new(self, tool: str, arguments: Any, output: str, changed: bool = False) -> bool:
        """Whether one result brings something new; it is remembered either way."""
        text = normalise_output(output)
        identity = _call_identity(tool, arguments)
        digest = _digest(text)
        outputs = self._outputs.setdefault(identity, set())
        new = changed or (bool(outputs) and digest not in outputs)
        outputs.add(digest)
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            key = _digest(line)
            if key not in self._lines:
                self._lines.add(key)
                new = True
        return new

    def record_round(self, results: Iterable[RoundResult]) -> str | None:
        new = False
        for tool, arguments, output, changed in results:
            # every result is remembered, so no short-circuit
            new = self.is_new(tool, arguments, output, changed) or new
        self.last_round_new = new
        if new:
            self.stale_rounds = 0
            return None
        self.stale_rounds += 1
        if self.stale_rounds >= self.limit:
            return (
                f"{self.stale_rounds} rounds in a row brought nothing new: every result was one the model "
                "had already seen, and no file changed; the run stopped. "
                'Say "continue" to go on, ideally with a hint.'
            )
        return None


# ---------------------------------------------------------------------------------------------
# A reply stuck repeating itself
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# A reply that is all reasoning
# ---------------------------------------------------------------------------------------------

MAX_REASONING_RETRIES = 2

# Provider kinds whose wire form can switch reasoning off for a request ("none"): Anthropic sends
# no thinking block, Gemini a zero budget or the lowest level a model allows (Pro cannot stop),
# Ollama ``think: false``. Others (OpenAI-compatible, LiteLLM) are asked for "low".
_CAN_SWITCH_OFF = frozenset({"anthropic", "gemini", "ollama"})


def provider_kind(provider: object) -> str:
    """The kind of a provider object, from its module (``totem_engine.providers.gemini`` -> gemini)."""
    if isinstance(provider, str):
        return provider
    return type(provider).__module__.rsplit(".", 1)[-1]


def least_reasoning(provider: object) -> str:
    """The least reasoning level the provider's models allow: "none" where it can be switched off."""
    return "none" if provider_kind(provider) in _CAN_SWITCH_OFF else "low"


def needs_reasoning_retry(text: str, reasoning: str, calls: Sequence[object], attempts: int) -> bool:
    """A reply that reasoned but produced no text and no tool call, with retries left."""
    return is_all_reasoning(text, reasoning, calls) and attempts < MAX_REASONING_RETRIES


def is_all_reasoning(text: str, reasoning: str, calls: Sequence[object]) -> bool:
    return bool(reasoning.strip()) and not text.strip() and not calls


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    level: str | None  # the reasoning level for the new request (retry only)
    notice: str  # the chat's notice (retry) or the run's stop reason (no retry)


@dataclass
class ReasoningRetry:
    """One step's guard: ``after_reply`` returns None for a reply with text or calls (or with no
    reasoning either), a retry with the least level while retries remain, then a stop."""

    least: str = "low"
    max_retries: int = MAX_REASONING_RETRIES
    attempts: int = 0

    def after_reply(self, text: str, reasoning: str, calls: Sequence[object]) -> RetryDecision | None:
        if not is_all_reasoning(text, reasoning, calls):
            return None
        if self.attempts >= self.max_retries:
            return RetryDecision(
                retry=False,
                level=None,
                notice=(
                    f"The model spent its whole reply reasoning {self.attempts + 1} times, even with reasoning "
                    f'set to "{self.least}", and gave no answer or tool call; the run stopped. '
                    'Say "continue" to try again.'
                ),
            )
        self.attempts += 1
        return RetryDecision(
            retry=True,
            level=self.least,
            notice=(
                "The model spent its whole reply reasoning and gave no answer or tool call; asking again "
                f'with reasoning set to "{self.least}" (retry {self.attempts} of {self.max_retries}).'
            ),
        )


# ---------------------------------------------------------------------------------------------
# The round limit
# ---------------------------------------------------------------------------------------------

EXTRA_PASSES = 3
PASS_STEPS = 10


@dataclass(frozen=True)
class Decision:
    action: Literal["continue", "stop"]
    notice: str
    limit: int  # the step limit from now on

    @property
    def stop(self) -> bool:
        return self.action == "stop"


@dataclass
class RoundLimit:
    """The step limit with automatic extensions.

    A run that reaches ``max_steps`` having changed a file in its last ``pass_steps`` steps goes on
    for another ``pass_steps`` steps, up to ``passes`` times, as long as each extension makes
    progress (a file changed or new information). ``max_steps`` 0 means no limit.
    ``record_step`` after each step's tools have run; ``reached(step)`` before the next step;
    then ``allow(step)``.
    """

    max_steps: int
    passes: int = EXTRA_PASSES
    pass_steps: int = PASS_STEPS
    extensions: int = 0
    limit: int = 0
    _recent: deque[tuple[bool, bool]] = field(default_factory=deque)

    def __post_init__(self) -> None:
        self.limit = max(self.max_steps, 0)
        self._recent = deque(maxlen=self.pass_steps)

    def record_step(self, *, changed: bool, new_information: bool = False) -> None:
        self._recent.append((changed, changed or new_information))

    def reached(self, step: int) -> bool:
        return bool(self.limit) and step >= self.limit

    def allow(self, step: int, progress_in_last_pass: bool | None = None) -> Decision:
        """At the limit: go on for another pass, or stop with the reason to show."""
        if not self.reached(step):
            return Decision("continue", "", self.limit)
        if progress_in_last_pass is None:
            if self.extensions == 0:
                progress_in_last_pass = any(changed for changed, _ in self._recent)
            else:
                progress_in_last_pass = any(progress for _, progress in self._recent)
        resume = 'Say "continue" to go on.'
        if not progress_in_last_pass:
            if self.extensions == 0:
                why = f"Reached the step limit ({self.max_steps} steps) with no file changed in the last {self.pass_steps} steps"
            else:
                why = (
                    f"Extension {self.extensions} of {self.passes} brought no change and no new information "
                    f"({step} steps in all)"
                )
            return Decision("stop", f"{why}; the run stopped. {resume}", self.limit)
        if self.extensions >= self.passes:
            return Decision(
                "stop",
                f"Reached the step limit ({self.max_steps} steps) and {self.passes} extensions of "
                f"{self.pass_steps} steps ({step} steps in all); the run stopped. {resume}",
                self.limit,
            )
        self.extensions += 1
        self.limit += self.pass_steps
        self._recent.clear()
        if self.extensions == 1:
            why = f"Reached the step limit ({step} steps) while still making changes"
        else:
            why = f"Still making progress after {step} steps"
        return Decision(
            "continue",
            f"{why}; going on for {self.pass_steps} more steps (extension {self.extensions} of {self.passes}).",
            self.limit,
        )


# ---------------------------------------------------------------------------------------------
# A change claimed, not made
# ---------------------------------------------------------------------------------------------

# "I added ...", "I've updated ...", "... has been fixed": a report of a change made.
_CLAIM = re.compile(
    r"\b(?:I(?:'ve| have)?\s+(?:now\s+)?|(?:has|have) been\s+)"
    r"(?:added|changed|updated|modified|fixed|implemented|renamed|created|written|wrote|replaced|removed|corrected)\b",
    re.IGNORECASE,
)


# "we need to import ...", "To fix this, change ...", "the formula should be changed", "utils.py
# must be imported in main.py": a change
# announced, not made.
_INTENT = re.compile(
    r"\b(?:we|you|I)\s+(?:will\s+|would\s+)?(?:need|have)\s+to\s+"
    r"(?:add|change|modify|update|fix|replace|import|remove|rename|implement|adjust|correct)\b"
    r"|\bto (?:fix|add|implement) (?:this|it|the)\b"
    r"|\b(?:should|must|needs? to) be (?:changed|updated|fixed|replaced|imported|added|renamed|removed|corrected)\b",
    re.IGNORECASE,
)


# "Add …", "In calc.py, add …", "… find the bug and fix it", "Can you rename …": a request that
# only a change to a file answers. A question ("How do I add a flag?") is not one.
_CHANGE_ASKED = re.compile(
    r"(?:^|[.!?;:]\s+|,\s+|\band\s+|\bplease\s+|\b(?:can|could|would|will) you\s+)"
    r"(?:add|fix|implement|change|update|rename|remove|delete|refactor|make|create|write|replace|move|convert"
    r"|correct|modify|rewrite|extract|insert|append)\b",
    re.IGNORECASE,
)


def asks_for_a_change(request: str) -> bool:
    """Whether the user's ``request`` asks for a change to the project (``_CHANGE_ASKED``)."""
    return _CHANGE_ASKED.search(request.strip()) is not None


class UnmadeChange:
    """A turn that changed no file and ends with a reply that claims a change (``_CLAIM``), says
    what must change (``_INTENT``) or describes it in prose (capabilities.detect_prose_edit), or
    after a request for a change (``asks_for_a_change``): small models stop there, after saying
    what they would do, or after a read. ``nudge`` says whether to ask once more; ``limit`` times
    a turn. An answer to a question is none of these."""

    def __init__(self, limit: int = 1):
        self.left = limit

    def nudge(self, text: str, *, changed: bool, prose_edit: bool, requested: bool = False) -> bool:
        if changed or self.left <= 0 or not (requested or prose_edit or _CLAIM.search(text) or _INTENT.search(text)):
            return False
        self.left -= 1
        return True
