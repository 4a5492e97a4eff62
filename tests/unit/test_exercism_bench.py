"""bench/exercism.py's protocol and accounting, on a made-up exercise and a made-up server log:
what the agent is shown, that an edited test gains nothing, and how a run is counted and classed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import exercism
import exercism_protocol as protocol

TEST = "from leap import leap_year\n\ndef test_leap():\n    assert leap_year(2000)\n    assert not leap_year(1900)\n"
SOLVED = "def leap_year(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n"


def make_exercise(root: Path) -> protocol.Exercise:
    for rel, text in {
        ".meta/config.json": json.dumps({"files": {"solution": ["leap.py"], "test": ["leap_test.py"], "example": [".meta/example.py"]}}),
        ".meta/example.py": SOLVED,
        ".docs/introduction.md": "Leap years.\n",
        ".docs/instructions.md": "Say whether a year is a leap year.\n",
        ".approaches/one/content.md": SOLVED,
        "leap.py": "def leap_year(year):\n    pass\n",
        "leap_test.py": TEST,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return protocol.Exercise.load(root)


@pytest.fixture
def exercise(tmp_path: Path) -> protocol.Exercise:
    return make_exercise(tmp_path / "exercises" / "leap")


def test_a_subset_is_picked_by_its_seed_from_the_exercise_folders(tmp_path: Path) -> None:
    for name in ("leap", "bob", "two-fer"):
        make_exercise(tmp_path / name)
    assert [e.name for e in exercism.choose(tmp_path, None, 1)] == ["bob", "leap", "two-fer"]
    picked = [e.name for e in exercism.choose(tmp_path, 2, 7)]
    assert len(picked) == 2 and picked == sorted(picked) and picked == [e.name for e in exercism.choose(tmp_path, 2, 7)]


def test_the_request_is_the_docs_then_aiders_addendum(exercise: protocol.Exercise) -> None:
    text = protocol.request(exercise)
    assert text.startswith("Leap years.\nSay whether a year is a leap year.\n")
    assert "modify the supplied files: leap.py\nDon't change the names" in text


def test_the_copy_holds_no_dot_folder(exercise: protocol.Exercise, tmp_path: Path) -> None:
    copy = protocol.fresh_copy(exercise, tmp_path / "copy")
    assert sorted(p.name for p in copy.iterdir()) == ["leap.py", "leap_test.py"]


def test_an_edited_test_is_restored_before_the_check(exercise: protocol.Exercise, tmp_path: Path) -> None:
    copy = protocol.fresh_copy(exercise, tmp_path / "copy")
    (copy / "leap_test.py").write_text("def test_nothing():\n    pass\n")
    failed = protocol.check(exercise, copy, exercism.TEST_COMMAND)
    assert not failed.passed
    assert str(copy) not in failed.output and "rootdir: copy\n" in failed.output
    assert "in 0." not in failed.output  # timings cleaned, as aider cleans them
    assert (copy / "leap_test.py").read_text() == TEST
    (copy / "leap.py").write_text(SOLVED)
    assert protocol.check(exercise, copy, exercism.TEST_COMMAND).passed


def test_the_feedback_is_the_output_then_the_fixed_request(exercise: protocol.Exercise) -> None:
    text = protocol.feedback(protocol.Check(False, "E   assert False\n"), exercise)
    assert text.startswith("E   assert False\n\n####\n\nSee the testing errors above.")
    assert text.endswith("Fix the code in leap.py to resolve the errors.\n")


def test_the_server_log_counts_requests_and_evaluated_tokens(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("slot print_timing: id  0 | task 1 | prompt eval time =  10.00 ms /   900 tokens (...)\n")
    reader = exercism.ServerLog(log)
    with log.open("a") as f:
        f.write(
            "slot print_timing: id  0 | task 2 | prompt eval time =  4736.36 ms /   438 tokens (   10.81 ms per token)\n"
            "slot print_timing: id  0 | task 2 |        eval time =  9777.69 ms /   225 tokens (   43.65 ms per token)\n"
            "slot print_timing: id  0 | task 2 |       total time = 14514.06 ms /   663 tokens\n"
            "slot print_timing: id  0 | task 3 | prompt eval time =    42.34 ms /     1 tokens (   42.34 ms per token)\n"
            "slot print_timing: id  0 | task 3 |        eval time = 10363.73 ms /   273 tokens (   38.10 ms per token)\n"
        )
    assert reader.take() == exercism.Usage(requests=2, prompt_tokens=439, generated_tokens=498)
    assert reader.take() == exercism.Usage()


@pytest.mark.parametrize(
    ("stops", "solution", "output", "expected"),
    [
        (["timeout"], SOLVED, "", "out of steps or time"),
        (["finished", "step_limit"], SOLVED, "", "out of steps or time"),
        (["guard"], SOLVED, "", "a guard stopped it"),
        (["finished"], None, "E   assert None", "never wrote the file"),
        (["finished"], "def leap_year(:\n", "E   SyntaxError: invalid syntax", "syntax error"),
        (["finished"], "def is_leap(year):\n    pass\n", "ImportError: cannot import name 'leap_year'", "broke the interface"),
        (["finished"], "def leap_year(year):\n    return True\n", "E   assert not True", "wrote it wrong"),
    ],
)
def test_a_failure_is_classed(exercise: protocol.Exercise, tmp_path: Path, stops: list[str], solution: str | None, output: str, expected: str) -> None:
    copy = protocol.fresh_copy(exercise, tmp_path / "copy")
    if solution is not None:
        (copy / "leap.py").write_text(solution)
    outcome = exercism.Outcome("leap", "totem", [False, False], 10.0, exercism.Usage(), stops)
    assert exercism.failure_class(outcome, exercise, copy, output) == expected
