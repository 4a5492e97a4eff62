"""The project's formatter ([format]): runs on a saved file, reports a rewrite, never raises; an
untrusted project's [format] and [checks] never reach it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from totem_engine.checks.formatter import FormatResult, format_file, formatter_for
from totem_engine.config import Config, load_config
from totem_engine.trust import apply_trust, restrict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def config(table: dict[str, str]) -> Config:
    return Config.model_validate({"format": table})


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x=1\n")
    return tmp_path


async def test_a_rewrite_is_reported_with_the_new_bytes(root: Path):
    result = await format_file(root, "src/a.py", config({"*.py": "sed -i 's/x=1/x = 1/' {file}"}))
    assert result == FormatResult(True, b"x = 1\n", None)
    assert (root / "src" / "a.py").read_bytes() == b"x = 1\n"


def test_what_the_model_is_told():
    assert FormatResult(False, None, None).for_model("a.py") is None
    assert "a.py was rewritten" in FormatResult(True, b"x", None).for_model("a.py")
    told = FormatResult(True, b"x", "formatter exited with 1").for_model("a.py")
    assert "a.py was rewritten" in told and told.endswith("formatter exited with 1")
    assert FormatResult(False, None, "timed out").for_model("a.py") == "timed out"


async def test_no_matching_glob_runs_nothing(root: Path):
    result = await format_file(root, "src/a.py", config({"*.js": "touch ran"}))
    assert result == FormatResult(False, None, None)
    assert not (root / "ran").exists()


async def test_an_unchanged_file_is_not_changed(root: Path):
    assert await format_file(root, "src/a.py", config({"*.py": "true {file}"})) == FormatResult(False, None, None)


def test_first_matching_glob_wins_and_globs_match_path_or_name():
    table = {"src/*.py": "first", "*.py": "second"}
    assert formatter_for("src/a.py", config(table)) == ("src/*.py", "first")
    assert formatter_for("lib/deep/b.py", config(table)) == ("*.py", "second")
    assert formatter_for("b.txt", config(table)) is None


async def test_the_file_name_is_quoted_for_the_shell(tmp_path: Path):
    (tmp_path / "a b.py").write_text("old\n")
    result = await format_file(tmp_path, "a b.py", config({"*.py": "printf 'new\\n' > {file}"}))
    assert result.changed and result.new_bytes == b"new\n"
    assert not (tmp_path / "a").exists()


async def test_a_failing_formatter_is_a_note_and_the_file_stays(root: Path):
    result = await format_file(root, "src/a.py", config({"*.py": "echo 'error: cannot parse' >&2; exit 3"}))
    assert result.changed is False and result.new_bytes is None
    assert result.note is not None and "exited with 3" in result.note and "cannot parse" in result.note
    assert (root / "src" / "a.py").read_text() == "x=1\n"


async def test_a_failing_formatter_that_wrote_still_reports_the_rewrite(root: Path):
    result = await format_file(root, "src/a.py", config({"*.py": "echo half > {file}; exit 1"}))
    assert result.changed is True and result.new_bytes == b"half\n"
    assert result.note is not None and "exited with 1" in result.note


async def test_a_formatter_that_cannot_start_is_a_note(root: Path):
    result = await format_file(root, "src/a.py", config({"*.py": "no-such-formatter-xyz {file}"}))
    assert result.changed is False and result.note is not None and "exited with 127" in result.note


async def test_a_missing_file_is_a_note(root: Path):
    result = await format_file(root, "src/gone.py", config({"*.py": "touch ran"}))
    assert result.changed is False and result.note is not None and "could not be read" in result.note
    assert not (root / "ran").exists()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


async def test_a_formatter_that_hangs_times_out_and_its_group_is_killed(root: Path):
    started = time.monotonic()
    result = await format_file(
        root, "src/a.py", config({"*.py": "sleep 30 & echo $! > child.pid; wait"}), timeout=0.5
    )
    assert time.monotonic() - started < 10
    assert result.changed is False and result.note is not None and "timed out" in result.note
    pid = int((root / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)




async def test_ruff_format_from_the_fixture_projects_config(tmp_path: Path, ruff_on_path):
    root = tmp_path / "python_ruff"
    shutil.copytree(FIXTURES / "python_ruff", root)
    (root / "app" / "ugly.py").write_text("def f( a,b ):\n  return {'a':a,'b':b}\n")
    loaded = load_config(root)
    result = await format_file(root, "app/ugly.py", loaded.config)
    assert result.note is None
    assert result.changed
    assert result.new_bytes == b'def f(a, b):\n    return {"a": a, "b": b}\n'
    assert (root / "app" / "ugly.py").read_bytes() == result.new_bytes


# Trust: a project's own [format] and [checks] run commands, so an untrusted project loses them.


def test_restrict_drops_format_and_checks():
    kept, dropped = restrict(
        {"format": {"*.py": "ruff format {file}"}, "checks": {"r": {"command": "ruff"}}, "totaljs": "never"}
    )
    assert kept == {"totaljs": "never"}
    assert "[format]" in dropped and "[checks]" in dropped


async def test_an_untrusted_projects_formatter_does_not_run(tmp_path: Path):
    root = tmp_path / "python_ruff"
    shutil.copytree(FIXTURES / "python_ruff", root)
    loaded = load_config(root)
    assert loaded.config.format  # the project declares one
    restricted, notice = await apply_trust(root, loaded, None)
    assert restricted.config.format == {} and restricted.config.checks == {}
    assert notice is not None and "[format]" in notice
    (root / "app" / "ugly.py").write_text("x=1\n")
    assert await format_file(root, "app/ugly.py", restricted.config) == FormatResult(False, None, None)
    assert (root / "app" / "ugly.py").read_text() == "x=1\n"
