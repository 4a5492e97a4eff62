"""Totem's temporary folders (scratch.py): named by their process, and those of a process that
is gone (killed, so it could not remove them) removed when the next process makes its first."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio

from totem_engine import scratch


def test_a_killed_process_s_folders_go_when_another_makes_its_first(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # what gettempdir() answers
    # A process that made a sandbox folder (with an overlay's mode-000 work folder) and a script's,
    # then was killed: they stay behind.
    made = subprocess.run(
        [sys.executable, "-c", (
            "import anyio, os, signal\n"
            "from totem_engine import scratch\n"
            "async def main():\n"
            "    box = await scratch.make('sandbox')\n"
            "    (box / 'overlay1' / 'work' / 'work').mkdir(parents=True)\n"
            "    (box / 'overlay1' / 'upper').mkdir()\n"
            "    (box / 'overlay1' / 'upper' / 'calc.py').write_text('staged')\n"
            "    (box / 'overlay1' / 'work' / 'work').chmod(0)\n"
            "    (box / 'overlay1' / 'work').chmod(0)\n"
            "    async with scratch.folder('script'):\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n"
            "anyio.run(main)\n"
        )],
        env={**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert made.returncode == -9
    left = sorted(p.name.rsplit("-", 1)[0] for p in tmp_path.iterdir())
    assert left == [f"totem-sandbox-{_pid(tmp_path)}", f"totem-script-{_pid(tmp_path)}"]
    # Folders that are not Totem's, and one of a process that still runs (this one), are kept.
    (tmp_path / "totem-notes-1-x").mkdir()
    (tmp_path / "other").mkdir()
    live = tmp_path / f"totem-script-{os.getppid()}-keep"
    live.mkdir()
    monkeypatch.setattr(scratch, "_swept", False)

    async def main() -> Path:
        async with scratch.folder("script") as folder:
            assert folder.name.startswith(f"totem-script-{os.getpid()}-") and folder.is_dir()
            return folder

    ours = anyio.run(main)
    assert not ours.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["totem-notes-1-x", "other", live.name])


def _pid(folder: Path) -> str:
    return next(p.name for p in folder.iterdir()).split("-")[2]
