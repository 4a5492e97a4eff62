"""A change claimed, announced or described and not made (seed 003): ``UnmadeChange``, with which
the small-model policy (small.py) asks once more; ``asks_for_a_change`` tells a request for a
change from a question."""

from __future__ import annotations

import re


# "I added ...", "I've updated ...", "... has been fixed": a report of a change made.
_CLAIM = re.compile(
    r"\b(?:I(?:'ve| have)?\s+(?:now\s+)?|(?:has|have) been\s+)"
    r"(?:added|changed|updated|modified|fixed|implemented|renamed|created|written|wrote|replaced|removed|corrected)\b",
    re.IGNORECASE,
)


# "we need to import ...", "To fix this, change ...", "the formula should be changed", "utils.py
# must be imported in main.py": a change
# announced, not made.
_INTENT = re.compile(
    r"\b(?:we|you|I)\s+(?:will\s+|would\s+)?(?:need|have)\s+to\s+"
    r"(?:add|change|modify|update|fix|replace|import|remove|rename|implement|adjust|correct)\b"
    r"|\bto (?:fix|add|implement) (?:this|it|the)\b"
    r"|\b(?:should|must|needs? to) be (?:changed|updated|fixed|replaced|imported|added|renamed|removed|corrected)\b",
    re.IGNORECASE,
)


# "Add …", "In calc.py, add …", "… find the bug and fix it", "Can you rename …": a request that
# only a change to a file answers. A question ("How do I add a flag?") is not one.
_CHANGE_ASKED = re.compile(
    r"(?:^|[.!?;:]\s+|,\s+|\band\s+|\bplease\s+|\b(?:can|could|would|will) you\s+)"
    r"(?:add|fix|implement|change|update|rename|remove|delete|refactor|make|create|write|replace|move|convert"
    r"|correct|modify|rewrite|extract|insert|append)\b",
    re.IGNORECASE,
)


def asks_for_a_change(request: str) -> bool:
    """Whether the user's ``request`` asks for a change to the project (``_CHANGE_ASKED``)."""
    return _CHANGE_ASKED.search(request.strip()) is not None


class UnmadeChange:
    """A turn that changed no file and ends with a reply that claims a change (``_CLAIM``), says
    what must change (``_INTENT``) or describes it in prose (capabilities.detect_prose_edit), or
    after a request for a change (``asks_for_a_change``): small models stop there, after saying
    what they would do, or after a read. ``nudge`` says whether to ask once more; ``limit`` times
    a turn. An answer to a question is none of these."""

    def __init__(self, limit: int = 1):
        self.left = limit

    def nudge(self, text: str, *, changed: bool, prose_edit: bool, requested: bool = False) -> bool:
        if changed or self.left <= 0 or not (requested or prose_edit or _CLAIM.search(text) or _INTENT.search(text)):
            return False
        self.left -= 1
        return True
