"""aider's code-editing benchmark protocol on one Exercism exercise, shared by both agents' runs.

Standard library only: ``exercism.py`` imports it in Totem's venv, and ``exercism_aider.py``
imports it in aider's, so both agents get the same texts, the same copy and the same check.

The protocol follows aider's ``benchmark/benchmark.py`` and ``benchmark/prompts.py``
(github.com/Aider-AI/aider): the request is the exercise's introduction, instructions and
append, then a fixed request naming the files to change; after a failed check the test output,
cleaned of timings and of the copy's path, is sent back with a fixed request to fix the code;
two tries in all. The test files are restored before each check, so an agent that edits a test
gains nothing. The agent's copy holds the exercise's own files only: never ``.meta/`` (the
reference solution) nor ``.docs/``, ``.approaches/`` or ``.articles/`` (the last two discuss
solutions).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

TRIES = 2
TEST_TIMEOUT = 180.0  # aider's, seconds

INSTRUCTIONS_ADDENDUM = """
####

Use the above instructions to modify the supplied files: {file_list}
Don't change the names of existing functions or classes, as they may be referenced from other code like unit tests, etc.
Only use standard libraries, don't suggest installing any packages.
"""

TEST_FAILURES = """
####

See the testing errors above.
The tests are correct, don't try and change them.
Fix the code in {file_list} to resolve the errors.
"""


@dataclass(frozen=True)
class Exercise:
    """One exercise folder: ``solution`` are the files to change, ``tests`` the files a check
    restores (both relative paths, from the exercise's ``.meta/config.json``)."""

    root: Path
    solution: tuple[str, ...]
    tests: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def file_list(self) -> str:
        return " ".join(Path(f).name for f in self.solution)

    @classmethod
    def load(cls, root: Path) -> Exercise:
        files = json.loads((root / ".meta" / "config.json").read_text(encoding="utf-8"))["files"]
        return cls(root, tuple(files["solution"]), tuple(files["test"]))


@dataclass(frozen=True)
class Check:
    passed: bool
    output: str  # cleaned as aider cleans it; "Tests timed out!" on a timeout


def request(exercise: Exercise) -> str:
    """The first try's message: introduction, instructions, append, then the addendum."""
    docs = exercise.root / ".docs"
    parts = [docs / "introduction.md", docs / "instructions.md", docs / "instructions.append.md"]
    text = "".join(p.read_text(encoding="utf-8") for p in parts if p.exists())
    return text + INSTRUCTIONS_ADDENDUM.format(file_list=exercise.file_list)


def feedback(check: Check, exercise: Exercise) -> str:
    """The second try's message: the failed check's output, then the fixed request."""
    return check.output + TEST_FAILURES.format(file_list=exercise.file_list)


def fresh_copy(exercise: Exercise, dest: Path) -> Path:
    """The exercise's own files at ``dest``: every dot-folder (``.meta``, ``.docs``, ...) left out."""
    shutil.copytree(exercise.root, dest, ignore=lambda _d, names: [n for n in names if n.startswith(".") or n == "__pycache__"])
    return dest


def check(exercise: Exercise, copy: Path, test_command: list[str]) -> Check:
    """Restore the test files into ``copy`` and run ``test_command`` there (aider runs ``pytest``)."""
    for name in exercise.tests:
        shutil.copy2(exercise.root / name, copy / name)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    try:
        done = subprocess.run(
            test_command, check=False, cwd=copy, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, errors="replace", timeout=TEST_TIMEOUT,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return Check(False, "Tests timed out!")
    return Check(done.returncode == 0, clean_output(done.stdout, copy))


def clean_output(output: str, copy: Path) -> str:
    """aider's ``cleanup_test_output``: timings out (they would vary the request), the copy's
    path shortened to its folder name; and a NUL a test printed shown as ``\\x00`` (a command
    line cannot carry it, and Totem's message is one)."""
    return re.sub(r"\bin \d+\.\d+s\b", "", output).replace(str(copy), copy.name).replace("\x00", "\\x00")
