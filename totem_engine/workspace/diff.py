"""Unified diffs of prepared changes, in git's form (``a/``/``b/`` prefixes, ``/dev/null``)."""

from __future__ import annotations

import difflib
import re


def unified_diff(path: str, old: str | None, new: str | None, *, context: int = 3) -> str:
    """The unified diff turning ``old`` into ``new`` (None: the file does not exist), with
    ``context`` unchanged lines around each change."""
    # Lines end at "\n" only, as git counts them; str.splitlines would also break at \f, \x1c,
    # \u2028 and others, which corrupts the hunks of a file holding such a character.
    before = _lines(old or "")
    after = _lines(new or "")
    lines = difflib.unified_diff(
        before,
        after,
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile="/dev/null" if new is None else f"b/{path}",
        n=context,
    )
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


def _lines(text: str) -> list[str]:
    """``text`` cut after each "\\n" (each piece keeps its "\\n"; the last may have none)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)
