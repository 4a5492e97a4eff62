"""verify.test_command and passed: which command runs a project's tests, and what passing means."""

from __future__ import annotations

import os

import pytest

from totem_engine.verify import find_test_command, is_test_file, passed


def fake_python(folder, *, has_pytest: bool):
    folder.mkdir(exist_ok=True)
    script = folder / "python3"
    script.write_text(f"#!/bin/sh\nexit {0 if has_pytest else 1}\n")
    script.chmod(0o755)
    return folder


async def test_the_configured_command_wins_and_an_empty_one_means_never():
    assert await find_test_command("make check", []) == "make check"
    assert await find_test_command("", ["test_a.py"]) is None


async def test_pytest_runs_a_project_with_python_tests_when_python3_can_import_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(fake_python(tmp_path / "with", has_pytest=True)))
    assert await find_test_command(None, ["calc.py", "tests/test_calc.py"]) == "python3 -m pytest -q -x --no-header -p no:cacheprovider --disable-warnings"
    assert await find_test_command(None, ["calc.py", "pkg/calc_test.py"]) is not None
    assert await find_test_command(None, ["calc.py", "testing.py"]) is None  # no test file
    monkeypatch.setenv("PATH", str(fake_python(tmp_path / "without", has_pytest=False)))
    assert await find_test_command(None, ["test_calc.py"]) is None
    monkeypatch.setenv("PATH", str(tmp_path / "nothing") + os.pathsep)
    assert await find_test_command(None, ["test_calc.py"]) is None


def test_passing_is_exit_0_or_pytest_collecting_nothing():
    assert passed("python3 -m pytest -q", 0) and passed("python3 -m pytest -q", 5)
    assert not passed("python3 -m pytest -q", 1) and not passed("make check", 5) and not passed("make check", None)


@pytest.mark.parametrize("rel", ["test_calc.py", "pkg/calc_test.go", "src/app.test.ts", "ui/button.spec.js", "tests/helpers.py"])
def test_test_files_by_their_conventions(rel):
    assert is_test_file(rel)


@pytest.mark.parametrize("rel", ["calc.py", "testing.py", "src/contest.ts", "latest/app.py", "attest_x.py"])
def test_other_files_are_not_tests(rel):
    assert not is_test_file(rel)
