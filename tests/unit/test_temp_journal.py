"""The journal of atomic writes' temporary files, and the sweep of what a killed writer left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from totem_engine.workspace import temp_journal
from totem_engine.workspace.files import write_atomically


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _journal(*lines: str) -> None:
    path = temp_journal.journal_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))


def test_a_finished_write_leaves_no_temporary_file_and_its_line_goes_at_the_sweep(tmp_path: Path):
    write_atomically(tmp_path / "a.txt", b"one")
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]
    (line,) = temp_journal.journal_path().read_text().splitlines()
    assert line.endswith(".totem-tmp") and str(tmp_path.resolve()) in line
    assert temp_journal.sweep(tmp_path) == []
    assert temp_journal.journal_path().read_text() == ""


def test_the_sweep_removes_only_a_dead_writers_files_under_the_project(tmp_path: Path):
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "src").mkdir(parents=True)
    elsewhere.mkdir()
    dead, alive = _dead_pid(), str(os.getpid())
    left = project / "src" / ".app.py.1a2b3c4d.totem-tmp"
    writing = project / ".b.txt.00000000.totem-tmp"
    other = elsewhere / ".c.txt.11111111.totem-tmp"
    for path in (left, writing, other):
        path.write_bytes(b"partial")
    _journal(f"{dead}\t{left}", f"{alive}\t{writing}", f"{dead}\t{other}", f"{dead}\t{project / 'gone.totem-tmp'}", "12")

    assert temp_journal.sweep(project) == ["src/.app.py.1a2b3c4d.totem-tmp"]
    assert not left.exists() and writing.exists() and other.exists()
    # The live writer's line and the other project's stay; the swept, the missing and the cut one go.
    assert temp_journal.journal_path().read_text().splitlines() == [f"{alive}\t{writing}", f"{dead}\t{other}"]
    assert temp_journal.sweep(elsewhere) == [".c.txt.11111111.totem-tmp"]


def test_no_journal_is_no_leftover(tmp_path: Path):
    assert not temp_journal.journal_path().exists()
    assert temp_journal.sweep(tmp_path) == []
