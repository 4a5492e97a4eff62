"""The ``totem`` command's exit codes (README "The command line"), in one place: a turn's by how
it ended, an engine refusal's by its ``EngineError.kind``.

0 finished, 1 error, 2 usage or config error or a session another process runs, 3 ended by the
step limit or a guard, 130 aborted (Ctrl-C, SIGTERM, SIGHUP).
"""

from __future__ import annotations

import sys

# Not `from typing import TYPE_CHECKING`: typing costs about 3 ms of every start (main.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from totem_engine.api.errors import EngineError

EXIT_ERROR = 1
EXIT_USAGE = 2
BY_STOP_REASON = {"finished": 0, "error": EXIT_ERROR, "step_limit": 3, "guard": 3, "aborted": 130}
BY_KIND = {"config": EXIT_USAGE, "not_found": EXIT_USAGE, "invalid": EXIT_USAGE, "busy": EXIT_USAGE, "unavailable": EXIT_ERROR}


def refused(error: EngineError) -> int:
    """Say what the engine refused, as ``totem: <message>`` on stderr; its exit code."""
    print(f"totem: {error}", file=sys.stderr)
    return BY_KIND.get(error.kind, EXIT_ERROR)


def usage(message: str) -> int:
    """A usage error the command itself finds: said the same way, exit 2."""
    print(f"totem: {message}", file=sys.stderr)
    return EXIT_USAGE
