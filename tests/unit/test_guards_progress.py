"""The guards on progress: no new information, a reply repeating itself, a reply that is all
reasoning, and the round limit's extensions. Each has a test that triggers it and one that shows
progress is not mistaken for a loop."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from totem_engine.providers.gemini import GeminiProvider
from totem_engine.turn.guards import (
    MAX_REASONING_RETRIES,
    NO_NEW_INFO_ROUNDS,
    Novelty,
    ReasoningRetry,
    RoundLimit,
    least_reasoning,
    normalise_output,
)
from totem_engine.turn.repetition import RepetitionDetector

ENGINE = Path(__file__).resolve().parents[2] / "totem_engine"


def read_result(path: str, body: str) -> tuple[str, dict, str, bool]:
    numbered = "\n".join(f"{n}\t{line}" for n, line in enumerate(body.splitlines(), 1))
    return ("read", {"path": path}, numbered, False)


def run_result(output: str, command: str = "pytest -q") -> tuple[str, dict, str, bool]:
    return ("bash", {"command": command}, output, False)


def edit_result(path: str = "app.py") -> tuple[str, dict, str, bool]:
    return ("edit", {"path": path, "old": "a", "new": "b"}, f"Edited {path}.", True)


# --- no new information ---------------------------------------------------------------------


def test_six_rounds_of_nothing_new_stop_the_run():
    novelty = Novelty()
    assert novelty.record_round([read_result("app.py", "import os\nprint(os.getcwd())\n")]) is None
    assert novelty.last_round_new
    reasons = [novelty.record_round([read_result("app.py", "import os\nprint(os.getcwd())\n")]) for _ in range(NO_NEW_INFO_ROUNDS)]
    assert reasons[:-1] == [None] * (NO_NEW_INFO_ROUNDS - 1)
    assert reasons[-1] is not None and "nothing new" in reasons[-1] and '"continue"' in reasons[-1]
    assert not novelty.last_round_new


def test_different_calls_that_bring_back_what_was_seen_are_not_new():
    """A search whose hits were all seen, a re-read of part of a file: different calls, same lines."""
    novelty = Novelty()
    novelty.record_round([("grep", {"pattern": "def main"}, "app.py:3: def main():", False)])
    stale = [
        ("grep", {"pattern": "main"}, "app.py:3: def main():", False),
        ("grep", {"pattern": "main("}, "app.py:3: def main():", False),
        ("grep", {"pattern": "def main", "path": "."}, "app.py:3: def main():", False),
        ("grep", {"pattern": "mai"}, "app.py:3: def main():", False),
        ("grep", {"pattern": "ma"}, "app.py:3: def main():", False),
    ]
    assert [novelty.record_round([result]) for result in stale] == [None] * 5
    assert novelty.record_round([("grep", {"pattern": "m"}, "app.py:3: def main():", False)]) is not None


def test_reading_six_different_files_is_progress():
    novelty = Novelty()
    for n in range(12):
        body = f"# module {n}\ndef f{n}():\n    return {n}\n"
        assert novelty.record_round([read_result(f"pkg/m{n}.py", body)]) is None
        assert novelty.last_round_new
    assert novelty.stale_rounds == 0


def test_edit_and_run_with_changing_output_is_progress():
    novelty = Novelty()
    for failing in range(10, 0, -1):
        assert novelty.record_round([edit_result()]) is None
        assert novelty.record_round([run_result(f"{failing} failed, {20 - failing} passed")]) is None
        assert novelty.last_round_new


def test_edits_that_land_are_progress_even_when_the_run_says_the_same():
    novelty = Novelty()
    for _ in range(10):
        assert novelty.record_round([edit_result()]) is None
        assert novelty.record_round([run_result("1 failed, 3 passed")]) is None


def test_a_run_whose_output_shrinks_to_lines_already_seen_is_new():
    novelty = Novelty()
    novelty.record_round([run_result("FAILED test_a\nFAILED test_b\n2 failed")])
    novelty.record_round([run_result("FAILED test_a\n2 failed")])  # a subset, but a changed output
    assert novelty.last_round_new


def test_a_flapping_run_brings_nothing_new():
    novelty = Novelty()
    outputs = ["FAILED test_a\n1 failed", "FAILED test_b\n1 failed"]
    novelty.record_round([run_result(outputs[0])])
    novelty.record_round([run_result(outputs[1])])
    reasons = [novelty.record_round([run_result(outputs[i % 2])]) for i in range(NO_NEW_INFO_ROUNDS)]
    assert reasons[-1] is not None


def test_durations_and_addresses_do_not_count_as_new():
    assert normalise_output("3 passed in 0.53s at 12:01:02, obj at 0x7f3a9c2b10") == normalise_output(
        "3 passed in 1.20s at 12:09:59, obj at 0x7f3a9c2d80"
    )
    novelty = Novelty()
    novelty.record_round([run_result("1 failed, 3 passed in 0.52s")])
    for n in range(NO_NEW_INFO_ROUNDS - 1):
        assert novelty.record_round([run_result(f"1 failed, 3 passed in 0.{60 + n}s")]) is None
    assert novelty.record_round([run_result("1 failed, 3 passed in 0.99s")]) is not None


def test_one_new_result_makes_the_round_progress_and_every_result_is_remembered():
    novelty = Novelty()
    novelty.record_round([read_result("a.py", "x = 1\n")])
    assert novelty.record_round([read_result("a.py", "x = 1\n"), read_result("b.py", "y = 2\n")]) is None
    assert novelty.last_round_new
    novelty.record_round([read_result("b.py", "y = 2\n"), read_result("a.py", "x = 1\n")])
    assert not novelty.last_round_new


def test_stale_rounds_reset_after_progress():
    novelty = Novelty()
    novelty.record_round([read_result("a.py", "x = 1\n")])
    for _ in range(NO_NEW_INFO_ROUNDS - 1):
        assert novelty.record_round([read_result("a.py", "x = 1\n")]) is None
    assert novelty.record_round([edit_result("a.py")]) is None
    assert novelty.stale_rounds == 0
    for _ in range(NO_NEW_INFO_ROUNDS - 1):
        assert novelty.record_round([read_result("a.py", "x = 1\n")]) is None


def test_arguments_as_a_json_string_and_as_a_dict_are_the_same_call():
    novelty = Novelty()
    assert novelty.is_new("bash", {"command": "ls"}, "a\nb")
    assert not novelty.is_new("bash", '{"command": "ls"}', "a\nb")


# --- a reply repeating itself ---------------------------------------------------------------


def feed_all(detector: RepetitionDetector, text: str, seed: int = 0) -> bool:
    """Feed text in chunks of random size, as a stream would; True when it fired."""
    rnd = random.Random(seed)
    i = 0
    while i < len(text):
        size = rnd.randint(1, 40)
        if detector.feed(text[i : i + size]):
            return True
        i += size
    return detector.finish()


def test_a_paragraph_repeated_over_and_over_fires():
    intro = "Let me look at the failing test first. "
    loop = "I will now read the file src/app.py to check the handler again.\n"
    detector = RepetitionDetector()
    assert feed_all(detector, intro + loop * 200)
    assert detector.period == len(loop)
    assert detector.unit in loop + loop
    assert detector.start == len(intro)
    assert detector.keep() == len(intro) + len(loop)
    assert "repeating" in detector.reason and '"continue"' in detector.reason


def test_it_fires_early_in_the_loop_not_at_the_end():
    loop = "The answer is to check the configuration again. "
    detector = RepetitionDetector()
    fed = 0
    for _ in range(10_000):
        fed += len(loop)
        if detector.feed(loop):
            break
    assert detector.fired
    assert fed <= detector.min_span + 2 * detector.check_every + len(loop)


def test_a_long_unit_fires_after_fewer_repeats():
    block = "".join(f"line {n}: nothing changes here, the same block again\n" for n in range(12))
    assert len(block) >= 256
    detector = RepetitionDetector()
    assert feed_all(detector, "start\n" + block * 6)
    assert detector.period == len(block)


def test_a_run_of_one_character_fires_only_when_long():
    assert not feed_all(RepetitionDetector(), "x = 1\n" + "=" * 1500 + "\nok\n")
    assert feed_all(RepetitionDetector(), "x = 1\n" + "\n" * 3000)


def test_a_three_character_pattern_in_a_minified_line():
    short = "var a=[" + "0,0" * 10 + "," + "0, " * 400 + "1];function f(){return a}\n"
    assert not feed_all(RepetitionDetector(), short)
    long = "var a=[" + "0, " * 2000
    detector = RepetitionDetector()
    assert feed_all(detector, long)
    assert detector.period == 3


def test_a_multiple_of_a_short_period_is_judged_as_the_short_period():
    """1,000 characters of "ab" contain 8 repeats of a 24-character span: still a short period."""
    detector = RepetitionDetector()
    assert not feed_all(detector, "x" + "ab" * 900 + "\nend\n")


NORMAL_SNIPPETS = [
    # a list of imports
    "".join(f"from package.module_{n} import handler_{n}\n" for n in range(60)),
    # a table
    "| name | kind | default |\n|------|------|---------|\n"
    + "".join(f"| option_{n} | int | {n} |\n" for n in range(80)),
    # indentation and similar lines
    "class A:\n" + "".join(f"    def m{n}(self):\n        return self.value + {n}\n\n" for n in range(80)),
    # a 9x9 board of zeros and rules of '='
    "board = [\n" + "    [0, 0, 0, 0, 0, 0, 0, 0, 0],\n" * 9 + "]\n" + "# " + "=" * 78 + "\n",
    # repeated test cases that differ in their data
    "".join(f'    assert parse("{n}") == {n}\n' for n in range(100)),
    # a minified line with short repeats
    "!function(){var e=[0,0,0,0,0,0,0,0,0,0,0,0];" + "e.push(0);" * 30 + "}();\n",
    # markdown separators
    "\n---\n\n".join(f"## Step {n}\n\nDo thing {n}." for n in range(40)),
]


@pytest.mark.parametrize("snippet", NORMAL_SNIPPETS)
def test_normal_code_with_repeated_similar_lines_does_not_fire(snippet):
    assert not feed_all(RepetitionDetector(), snippet)


def test_a_long_normal_code_answer_does_not_fire_and_is_cheap():
    """The engine's own source, streamed as one long answer, with the snippets in between."""
    text = "\n".join(path.read_text(encoding="utf-8") for path in sorted(ENGINE.rglob("*.py")))
    text += "\n".join(NORMAL_SNIPPETS)
    assert len(text) > 200_000
    detector = RepetitionDetector()
    started = time.perf_counter()
    for i in range(0, len(text), 7):
        assert not detector.feed(text[i : i + 7]), text[max(0, i - 200) : i + 7]
    assert not detector.finish()
    assert time.perf_counter() - started < 2.0


def test_a_fired_detector_stays_fired():
    detector = RepetitionDetector()
    assert feed_all(detector, "ha " * 1000)
    assert detector.feed("something else entirely")


# --- a reply that is all reasoning ----------------------------------------------------------


def test_all_reasoning_is_retried_twice_then_stops():
    guard = ReasoningRetry(least="none")
    first = guard.after_reply("", "Let me think...", [])
    second = guard.after_reply("  \n", "hmm", [])  # whitespace is no text
    third = guard.after_reply("", "hmm", [])
    assert first and first.retry and first.level == "none" and "retry 1 of 2" in first.notice
    assert second and second.retry and "retry 2 of 2" in second.notice
    assert third and not third.retry and third.level is None and "stopped" in third.notice
    assert guard.attempts == MAX_REASONING_RETRIES


def test_a_reply_with_text_or_a_call_is_not_retried():
    guard = ReasoningRetry(least="low")
    assert guard.after_reply("Done.", "long thoughts", []) is None
    assert guard.after_reply("", "long thoughts", [object()]) is None
    assert guard.after_reply("", "", []) is None  # an empty reply is not all reasoning
    assert guard.attempts == 0


def test_the_least_reasoning_level_by_provider():
    class FakeGemini:
        kind = GeminiProvider.kind  # a provider says its own kind

    assert GeminiProvider.kind == "gemini"
    assert least_reasoning(FakeGemini()) == "none"
    assert least_reasoning("anthropic") == "none"
    assert least_reasoning("ollama") == "none"
    assert least_reasoning("openai") == "low"
    assert least_reasoning("litellm") == "low"


# --- the round limit ------------------------------------------------------------------------


def run_steps(rounds: RoundLimit, steps: int, *, changed: bool = False, new: bool = False, start: int = 0) -> int:
    for _ in range(steps):
        rounds.record_step(changed=changed, new_information=new)
    return start + steps


def test_a_run_still_making_changes_is_extended_three_times_then_stops():
    rounds = RoundLimit(50)
    step = run_steps(rounds, 50, changed=True)
    assert rounds.reached(step)
    notices = []
    for extension in range(1, 4):
        decision = rounds.allow(step)
        assert decision.action == "continue" and decision.limit == 50 + 10 * extension
        assert f"extension {extension} of 3" in decision.notice
        notices.append(decision.notice)
        assert not rounds.reached(step)
        step = run_steps(rounds, 10, changed=True, start=step)
        assert rounds.reached(step)
    final = rounds.allow(step)
    assert final.stop and "80 steps" in final.notice and '"continue"' in final.notice
    assert "still making changes" in notices[0]


def test_a_run_that_stalls_at_the_limit_stops_with_how_to_continue():
    rounds = RoundLimit(50)
    step = run_steps(rounds, 40, changed=True)
    step = run_steps(rounds, 10, new=True, start=step)  # reading, but no change in the last pass
    decision = rounds.allow(step)
    assert decision.stop and "no file changed" in decision.notice and '"continue"' in decision.notice


def test_an_extension_that_brings_new_information_is_progress():
    rounds = RoundLimit(20)
    step = run_steps(rounds, 20, changed=True)
    assert rounds.allow(step).action == "continue"
    step = run_steps(rounds, 10, new=True, start=step)  # read six different files, no edit
    assert rounds.allow(step).action == "continue"
    step = run_steps(rounds, 10, start=step)  # nothing at all
    decision = rounds.allow(step)
    assert decision.stop and "Extension 2 of 3" in decision.notice


def test_the_caller_may_say_whether_the_pass_made_progress():
    rounds = RoundLimit(10)
    assert rounds.allow(10, progress_in_last_pass=True).action == "continue"
    assert rounds.allow(20, progress_in_last_pass=False).stop


def test_no_limit_and_below_the_limit():
    rounds = RoundLimit(0)
    assert not rounds.reached(10_000)
    rounds = RoundLimit(50)
    assert not rounds.reached(49)
    assert rounds.allow(49).action == "continue"
    assert rounds.limit == 50
