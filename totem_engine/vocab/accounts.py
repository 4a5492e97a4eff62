"""A tool result told short: a call's one-line account and a result cut to fit the window.

The plain forms every tool falls back on (``Tool.account`` and ``Tool.cut`` start from them) and
that compaction uses for a result of a tool the run does not have (one of an earlier run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def short(text: object, limit: int = 80) -> str:
    """``text`` on one line (whitespace runs as one space), cut to ``limit`` characters with "…"."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def first_line(text: str) -> str:
    """The first line of ``text`` that is not blank, stripped; "" when there is none."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def plain_account(name: str, args: dict[str, Any], output: str, summary: str = "") -> str:
    """The account of a call of any tool, also of one no tool of the run knows (a tool of an
    earlier run): ``name(first three arguments): summary``, or the output's first line."""
    shown = ", ".join(f"{k}={short(v, 40)}" for k, v in list(args.items())[:3])
    return f"{name}({shown}): {short(summary or first_line(output), 100)}"


def plain_cut_note(kept: str, total_chars: int) -> str:
    return f"[Cut to fit the context window: {len(kept)} of {total_chars} characters shown. Ask for a smaller part to see the rest.]"


def cut_lines(output: str, chars: int, note: Callable[[str], str]) -> str:
    """``output`` cut to whole lines from its start so that with ``note(kept)`` it takes about
    ``chars`` characters; ``output`` when it is no longer than ``chars``."""
    if len(output) <= chars:
        return output
    room = max(0, chars - len(note(output[:0])) - 16)
    return with_note(whole_lines_head(output, room), note)


def whole_lines_head(text: str, room: int) -> str:
    """The start of ``text`` in at most ``room`` characters, ending at a line end when it can."""
    head = text[:room]
    if len(head) < len(text) and "\n" in head:
        head = head[: head.rindex("\n")]
    return head


def with_note(kept: str, note: Callable[[str], str]) -> str:
    return f"{kept}\n{note(kept)}" if kept else note(kept)
