"""The project's tests, run after a small model's change so their failures go back to it.

A small model rarely runs the tests itself, and often stops after a change that does not work.
When it has answered with a clean change (turn/small.py), Totem runs the tests as the model would, a
``bash`` call asked and shown like any other, at most ``MAX_RUNS`` times a turn; a failure goes
back to the model as that call's result. The command is ``test_command`` from the config
(``""``: never), else pytest when the project has Python test files (``test_*.py``,
``*_test.py``) and the ``python3`` on PATH can import pytest (docs/decisions.md).
"""

from __future__ import annotations

import shutil
import subprocess

import anyio

MAX_RUNS = 2
TEST_RUN = "testrun"  # the id prefix of the bash calls Totem makes to run the tests (store.new_id)
PYTEST = "{python} -m pytest -q -x --no-header -p no:cacheprovider --disable-warnings"
PYTEST_NO_TESTS = 5  # pytest's exit code when it collected nothing


def is_test_file(rel: str) -> bool:
    """A test file by the common conventions: ``test_x.py``, ``x_test.go``, ``x.test.ts``,
    ``x.spec.js``, or anything under a ``test/`` or ``tests/`` folder."""
    *folders, name = rel.split("/")
    stem = name.rsplit(".", 1)[0]
    return (
        stem.startswith("test_")
        or stem.endswith(("_test", ".test", ".spec"))
        or any(folder in ("test", "tests") for folder in folders)
    )


def _is_python_test(rel: str) -> bool:
    return rel.endswith(".py") and is_test_file(rel)


async def find_test_command(configured: str | None, files: list[str]) -> str | None:
    """The command that runs the project's tests, or None (see the module docstring)."""
    if configured is not None:
        return configured or None
    python = shutil.which("python3") or shutil.which("python")
    if python is None or not any(_is_python_test(rel) for rel in files):
        return None
    try:
        found = await anyio.run_process([python, "-c", "import pytest"], check=False, stderr=subprocess.DEVNULL)
    except OSError:
        return None
    return PYTEST.format(python="python3" if python.endswith("python3") else "python") if found.returncode == 0 else None


def passed(command: str, exit_code: int | None) -> bool:
    """Whether a test run's exit code means nothing failed (for pytest, 5: no test collected)."""
    return exit_code == 0 or ("pytest" in command and exit_code == PYTEST_NO_TESTS)
