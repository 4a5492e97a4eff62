"""``make install`` says what it installs and shows pip's progress on a terminal (issue 22): run
with a fake ``python`` whose venv's ``pip`` only records how it was called."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/bin/sh
# Only `-m venv DIR`: a venv whose pip writes its arguments to DIR/pip-args.
mkdir -p "$3/bin"
printf '#!/bin/sh\\necho "$@" > "%s/pip-args"\\n' "$3" > "$3/bin/pip"
chmod +x "$3/bin/pip"
"""


@pytest.fixture
def fake_python(tmp_path) -> Path:
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    path = tmp_path / "python"
    path.write_text(FAKE_PYTHON)
    path.chmod(0o755)
    return path


def make_install(tmp_path: Path, python: Path, *, terminal: bool) -> tuple[str, str]:
    """``make install`` into a venv under ``tmp_path``; (what it printed, pip's arguments)."""
    venv = tmp_path / ("tty" if terminal else "log") / ".venv"
    cmd = ["make", "--no-print-directory", "-C", str(ROOT), "install", f"VENV={venv}", f"PYTHON={python}"]
    if terminal:
        leader, follower = pty.openpty()
        proc = subprocess.Popen(cmd, stdout=follower, stderr=follower, stdin=subprocess.DEVNULL)
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:  # the pty closes when make and its children are done
                break
            if not data:
                break
            chunks.append(data)
        os.close(leader)
        assert proc.wait(timeout=30) == 0
        printed = b"".join(chunks).decode()
    else:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, check=False)
        assert done.returncode == 0, done.stderr
        printed = done.stdout
    return printed, (venv / "pip-args").read_text().strip()


def test_on_a_terminal_pip_shows_its_progress_and_the_install_says_what_it_brings(tmp_path, fake_python):
    printed, args = make_install(tmp_path, fake_python, terminal=True)
    assert "Installing Totem (this checkout, editable) into" in printed
    assert "pytest, ruff, Neovim" in printed
    assert args == "install -e .[dev]"  # no --quiet: pip's lines and progress bars show


def test_off_a_terminal_pip_stays_quiet(tmp_path, fake_python):
    printed, args = make_install(tmp_path, fake_python, terminal=False)
    assert "Installing Totem" in printed
    assert args == "install --quiet -e .[dev]"
