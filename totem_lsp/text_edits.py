"""The change from one text to another as minimal ``TextEdit``s: only the lines that differ.

An agent's edit sent as one edit of the whole document moves the user's cursor and marks and
shows in the editor's undo as a rewrite of the file; edits of the changed lines leave the rest
of the buffer untouched (as jedi-language-server does, with difflib). Lines end as LSP counts
them (``\\r\\n``, ``\\r`` or ``\\n``), and characters are counted in the client's units (UTF-16 code
units unless the client negotiated another ``positionEncoding``). Spec: LSP 3.17 ``TextEdit``
(edits refer to the original document and never overlap).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from difflib import SequenceMatcher

from lsprotocol import types

from totem_engine.api.checks import utf16_units

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lines_of(text: str) -> list[str]:
    """``text`` as its lines, each with its line ending (the last may have none)."""
    return _LINE.findall(text)


def text_edits(old: str, new: str, units: Callable[[str], int] = utf16_units) -> list[types.TextEdit]:
    """Edits that turn the document ``old`` into ``new``, one per run of changed lines, in
    document order; [] when the texts are equal. ``units(text)`` counts characters as the client
    does."""
    before, after = lines_of(old), lines_of(new)
    matcher = SequenceMatcher(None, before, after, autojunk=False)
    return [
        types.TextEdit(
            range=types.Range(start=_start_of(before, i1, units), end=_start_of(before, i2, units)),
            new_text="".join(after[j1:j2]),
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _start_of(lines: list[str], index: int, units: Callable[[str], int]) -> types.Position:
    """Where line ``index`` starts; past the last line, the end of the document."""
    if index < len(lines) or not lines or lines[-1].endswith(("\n", "\r")):
        return types.Position(line=index, character=0)
    return types.Position(line=len(lines) - 1, character=units(lines[-1]))
