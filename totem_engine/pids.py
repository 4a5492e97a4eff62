"""Whether a process id names a live process on this machine."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """True for a running process, ours or another user's (``kill(pid, 0)``); a zombie counts as
    alive until it is reaped."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
