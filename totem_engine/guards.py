"""Rules that end a run that is going nowhere, judged on what the model does (seed 003).

Each ``record_*`` method returns the reason to stop, or None to go on. The reasons are shown to
the user as the turn's end, never swallowed.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass, field

MAX_REJECTIONS = 3
REPEAT_COUNT = 3
REPEAT_WINDOW = 6
MAX_FAILED_EDITS = 4


def call_key(tool: str, arguments: object, output: str) -> str:
    """Identity of a call and its result: name, canonical JSON arguments, hash of what came back."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(output.encode("utf-8", errors="replace")).hexdigest()
    return f"{tool}\x00{canonical}\x00{digest}"


@dataclass
class Guards:
    rejections: int = 0
    failed_edits: int = 0
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=REPEAT_WINDOW))

    def record_permission(self, allowed: bool) -> str | None:
        if allowed:
            self.rejections = 0
            return None
        self.rejections += 1
        if self.rejections >= MAX_REJECTIONS:
            return f"{MAX_REJECTIONS} actions in a row were rejected or denied; the run stopped so it does not keep trying."
        return None

    def record_call(self, key: str, *, changed_files: bool) -> str | None:
        """A call that changed a file is progress: the repeat window starts again after it."""
        if changed_files:
            self.recent.clear()
            return None
        self.recent.append(key)
        if sum(1 for k in self.recent if k == key) >= REPEAT_COUNT:
            tool = key.split("\x00", 1)[0]
            return (
                f"The same {tool} call brought back the same result {REPEAT_COUNT} times "
                f"within {REPEAT_WINDOW} calls, with no file changed; the run stopped."
            )
        return None

    def record_edit(self, landed: bool) -> str | None:
        if landed:
            self.failed_edits = 0
            return None
        self.failed_edits += 1
        if self.failed_edits >= MAX_FAILED_EDITS:
            return f"{MAX_FAILED_EDITS} edits in a row failed; the run stopped."
        return None
