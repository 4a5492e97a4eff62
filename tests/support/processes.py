"""The process table, read from /proc: what a run left behind."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path


def proc_entries() -> Iterator[Path]:
    """The process table's /proc/PID folders (a process may be gone by the time one is read)."""
    return (entry for entry in Path("/proc").iterdir() if entry.name.isdigit())


def running_in(folder: Path) -> list[str]:
    """The process table's live processes (not zombies) working in ``folder``, as their command lines."""
    found = []
    for entry in proc_entries():
        try:
            if Path(os.readlink(entry / "cwd")) != folder.resolve():
                continue
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


def none_left(folder: Path) -> list[str]:
    """What still runs in ``folder`` after a moment (init reaps orphans asynchronously)."""
    for _ in range(60):
        left = running_in(folder)
        if not left:
            return []
        time.sleep(0.05)
    return left


def processes_with(marker: str) -> list[int]:
    """The pids of the processes whose command line holds ``marker`` (pytest's own left out)."""
    found = []
    for entry in proc_entries():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline and "pytest" not in cmdline:
            found.append(int(entry.name))
    return found
