"""What the user attached to a message: context blocks in front of what they typed.

One way context reaches the model: the place in the editor a message is about (``totem/chat``'s
``context``) and the mentions in its text (``@path``, ``@path#L10-20``, ``#buffer``,
``#selection``, ``#diagnostics``; ``find_mentions``) all become ``Attachment``s, each rendered as a
``<context file="…">`` block before the text the model receives (``with_attachments``), the way
the editor's ``context`` always was. Resolving a mention needs the editor (its buffers, its
selection, its diagnostics): that is the front end's (totem_lsp/attach.py); what a block looks
like, how long it may be and what the session remembers of it is here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from totem_engine.vocab.accounts import cut_lines

MentionKind = Literal["file", "buffer", "selection", "diagnostics"]
AttachmentKind = Literal["context", "file", "buffer", "selection", "diagnostics"]

# A path after "@": letters, digits, "_", ".", "-", "/" (no spaces), not inside a word or an
# address ("me@example.com"), optionally "#L10" or "#L10-20" (or "#L10-L20").
_FILE = re.compile(r"(?<![\w@/.])@(?P<path>[\w./-]*\w)(?:#L(?P<first>\d+)(?:-L?(?P<last>\d+))?)?")
_EDITOR = re.compile(r"(?<![\w#/])#(?P<what>buffer|selection|diagnostics)\b")
EDITOR_MENTIONS = ("buffer", "selection", "diagnostics")

MAX_CHARS = 20_000  # one attachment's text at most (whole lines), so a mention cannot fill the window


@dataclass(frozen=True)
class Mention:
    """One mention in a message: ``token`` as typed, at ``start`` (a character offset); a file's
    ``path`` as written and its 1-based inclusive ``first``/``last`` lines when given."""

    token: str
    kind: MentionKind
    start: int
    path: str | None = None
    first: int | None = None
    last: int | None = None


def find_mentions(text: str) -> list[Mention]:
    """The mentions in ``text``, in order of appearance."""
    found = []
    for match in _FILE.finditer(text):
        first = int(match["first"]) if match["first"] else None
        last = int(match["last"]) if match["last"] else first
        found.append(Mention(match[0], "file", match.start(), path=match["path"], first=first, last=last))
    for match in _EDITOR.finditer(text):
        found.append(Mention(match[0], cast(MentionKind, match["what"]), match.start()))
    return sorted(found, key=lambda m: m.start)


@dataclass(frozen=True)
class Attachment:
    """One block of context: ``path`` (project-relative) and its ``body`` (None: the file named,
    nothing shown); ``lines`` the 1-based inclusive range shown; ``findings`` how many
    diagnostics the body lists; ``mention`` the token that asked for it (None: the chat's
    ``context``); ``seen``: the file's whole bytes, when the body is the whole file (the agent
    has then seen it, freshness.py)."""

    kind: AttachmentKind
    path: str
    body: str | None = None
    lines: tuple[int, int] | None = None
    findings: int | None = None
    mention: str | None = None
    seen: bytes | None = None

    def render(self) -> str:
        attributes = f'file="{self.path}"'
        if self.lines is not None:
            attributes += f' lines="{self.lines[0]}-{self.lines[1]}"'
        if self.findings is not None:
            attributes += f' diagnostics="{self.findings}"'
        if self.body is None:
            return f"<context {attributes}/>"
        return f"<context {attributes}>\n{self.body}\n</context>"

    def wire(self) -> dict[str, Any]:
        """As the user part stores it (``attachments``), for the chat's chips."""
        out: dict[str, Any] = {"kind": self.kind, "path": self.path}
        if self.lines is not None:
            out["lines"] = list(self.lines)
        if self.findings is not None:
            out["diagnostics"] = self.findings
        if self.mention is not None:
            out["mention"] = self.mention
        return out


def withheld_secrets(attachments: list[Attachment], readable: Callable[[str], bool]) -> list[Attachment]:
    """``attachments`` with the content of each file the ``read`` tool would ask about first (a
    secret file; ``readable``: mentions.py ``unasked_reads``) left out: named, not shown."""
    return [
        replace(a, body=None, lines=None, seen=None) if a.body is not None and a.kind != "diagnostics" and not readable(a.path) else a
        for a in attachments
    ]


def with_attachments(text: str, attachments: list[Attachment]) -> str:
    """``text`` preceded by each attachment's block (a block given twice, once), blank lines between."""
    blocks = list(dict.fromkeys(a.render() for a in attachments))
    return "\n\n".join([*blocks, text])


def excerpt(text: str, first: int | None, last: int | None, path: str) -> tuple[str, tuple[int, int] | None]:
    """Lines ``first`` to ``last`` (1-based, inclusive, clamped to the file) of ``text``, or all of
    it, cut to ``MAX_CHARS``; and the range shown (None: the whole text)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    shown: tuple[int, int] | None = None
    if first is not None:
        low = max(1, first)
        high = min(len(lines), max(low, last or low))
        lines, shown = lines[low - 1 : high], (low, high)
    body = "\n".join(lines)
    note = f"[Cut to fit: read {path} for the rest.]"
    return cut_lines(body, MAX_CHARS, lambda kept: note), shown
