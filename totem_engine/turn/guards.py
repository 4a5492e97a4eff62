"""Rules that end or rescue a run going nowhere, judged on what the model does (seed 003 "One
prompt, guards on behaviour"), as pure state machines: no I/O here; the loop and the tool round
feed them and turn what they return into notices and stop reasons, shown to the user as the
turn's end, never swallowed.

- ``Guards``: calls rejected or denied, the same call bringing the same result, edits failing,
  each so many times in a row.
- ``Novelty``: each round's results against everything already seen in the turn; six rounds in
  a row that bring nothing new end the run.
- ``ReasoningRetry``: a reply that is all reasoning, no text and no tool call, is asked again with
  the least reasoning the model allows, twice at most.
- ``RoundLimit``: the step limit, extended by up to three passes of ten steps while the run makes
  progress.

A reply stuck repeating itself is repetition.py's; a change claimed and not made, unmade.py's.
One notion of a call's identity serves them all: ``call_identity``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from totem_engine.vocab.tools import arguments_object

MAX_REJECTIONS = 3
REPEAT_COUNT = 3
REPEAT_WINDOW = 6
MAX_FAILED_EDITS = 4


def call_identity(tool: str, arguments: Any) -> str:
    """A call's identity: the tool and its canonical JSON arguments. Raw arguments are read with
    ``arguments_object``; text that is not a JSON object stands for itself."""
    if isinstance(arguments, str):
        parsed = arguments_object(arguments)
        arguments = parsed if parsed is not None else arguments
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return f"{tool}\x00{canonical}"


def call_key(tool: str, arguments: Any, output: str) -> str:
    """The identity of a call and its result: ``call_identity`` and a hash of what came back."""
    digest = hashlib.sha256(output.encode("utf-8", errors="replace")).hexdigest()
    return f"{call_identity(tool, arguments)}\x00{digest}"


@dataclass
class Guards:
    """Each ``record_*`` method returns the reason to stop, or None to go on."""

    rejections: int = 0
    failed_edits: int = 0
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=REPEAT_WINDOW))

    def record_permission(self, allowed: bool) -> str | None:
        if allowed:
            self.rejections = 0
            return None
        self.rejections += 1
        if self.rejections >= MAX_REJECTIONS:
            return f"{MAX_REJECTIONS} actions in a row were rejected or denied; the run stopped so it does not keep trying."
        return None

    def record_call(self, key: str, *, changed_files: bool) -> str | None:
        """``key``: ``call_key``. A call that changed a file is progress: the repeat window starts
        again after it."""
        if changed_files:
            self.recent.clear()
            return None
        self.recent.append(key)
        if sum(1 for k in self.recent if k == key) >= REPEAT_COUNT:
            tool = key.split("\x00", 1)[0]
            return (
                f"The same {tool} call brought back the same result {REPEAT_COUNT} times "
                f"within {REPEAT_WINDOW} calls, with no file changed; the run stopped."
            )
        return None

    def record_edit(self, landed: bool) -> str | None:
        if landed:
            self.failed_edits = 0
            return None
        self.failed_edits += 1
        if self.failed_edits >= MAX_FAILED_EDITS:
            return f"{MAX_FAILED_EDITS} edits in a row failed; the run stopped."
        return None


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
        identity = call_identity(tool, arguments)
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
# A reply that is all reasoning
# ---------------------------------------------------------------------------------------------

MAX_REASONING_RETRIES = 2

# Provider kinds whose wire form can switch reasoning off for a request ("none"): Anthropic sends
# no thinking block, Gemini a zero budget or the lowest level a model allows (Pro cannot stop),
# Ollama ``think: false``. Others (OpenAI-compatible, LiteLLM) are asked for "low".
_CAN_SWITCH_OFF = frozenset({"anthropic", "gemini", "ollama"})


def least_reasoning(provider: object) -> str:
    """The least reasoning level a provider's models allow: "none" where it can be switched off.
    ``provider``: a provider (its ``kind``) or a kind."""
    kind = provider if isinstance(provider, str) else provider.kind
    return "none" if kind in _CAN_SWITCH_OFF else "low"


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
    progress (a file changed or new information). ``max_steps`` 0 means no limit; ``basis``:
    why it is that number when the user did not choose it (terms.round_budget), said with it.
    ``record_step`` after each step's tools have run; ``reached(step)`` before the next step;
    then ``allow(step)``.
    """

    max_steps: int
    basis: str = ""
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

    def _steps(self) -> str:
        return f"{self.max_steps} steps, {self.basis}" if self.basis else f"{self.max_steps} steps"

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
                why = f"Reached the step limit ({self._steps()}) with no file changed in the last {self.pass_steps} steps"
            else:
                why = (
                    f"Extension {self.extensions} of {self.passes} brought no change and no new information "
                    f"({step} steps in all)"
                )
            return Decision("stop", f"{why}; the run stopped. {resume}", self.limit)
        if self.extensions >= self.passes:
            return Decision(
                "stop",
                f"Reached the step limit ({self._steps()}) and {self.passes} extensions of "
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


