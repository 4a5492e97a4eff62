"""``totem/complete``: completion of mentions and slash commands in a chat input (docs/protocol.md).

The word before the cursor decides: ``@…`` completes project files (open buffers first, then the
project's files as ``mentions.project_files`` lists them, ignore files respected), ``#…`` the
editor mentions (attach.py), ``/…`` at the start of the input the slash commands and built-in
actions. ``position`` counts UTF-16 code units, as LSP positions do.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from totem_engine.api.attachments import EDITOR_MENTIONS, project_files
from totem_engine.api.engine import Engine
from totem_engine.api.workspace import relative
from totem_lsp.uris import path_of

MAX_ITEMS = 50

_EDITOR_DETAIL = {
    "buffer": "the current buffer's text, unsaved changes included",
    "selection": "the lines selected in the current buffer",
    "diagnostics": "the current buffer's diagnostics",
}


def utf16_index(text: str, position: int) -> int:
    """The index into ``text`` of UTF-16 offset ``position`` (clamped; inside a surrogate pair: before it)."""
    units = 0
    for index, char in enumerate(text):
        width = 2 if ord(char) > 0xFFFF else 1
        if units + width > position:
            return index
        units += width
    return len(text)


def utf16_length(text: str) -> int:
    return sum(2 if ord(char) > 0xFFFF else 1 for char in text)


async def complete(text: str, position: int, engine: Engine, open_paths: list[Path]) -> dict[str, Any]:
    """``{start, end, items}``: the items for the word before ``position``; ``start``..``end`` (UTF-16
    offsets) is the text an item's ``insertText`` replaces."""
    end = utf16_index(text, position)
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:end]
    items: list[dict[str, Any]] = []
    if word.startswith("@") and "#" not in word:
        items = await _files(word[1:], engine.root, open_paths)
    elif word.startswith("#"):
        items = [
            {"label": f"#{name}", "kind": "buffer", "insertText": f"#{name}", "detail": _EDITOR_DETAIL[name]}
            for name in EDITOR_MENTIONS if name.startswith(word[1:].lower())
        ]
    elif word.startswith("/") and not text[:start].strip():
        items = _commands(word[1:], engine)
    return {"start": utf16_length(text[:start]), "end": utf16_length(text[:end]), "items": items[:MAX_ITEMS]}


async def _files(query: str, root: Path, open_paths: list[Path]) -> list[dict[str, Any]]:
    opened = []
    for path in open_paths:
        try:
            opened.append(relative(root, path))
        except ValueError:
            continue
    listed = await asyncio.to_thread(project_files, root)
    wanted = query.lower()
    ranked = []
    for order, rel in enumerate(dict.fromkeys([*sorted(opened), *listed])):
        low = rel.lower()
        base = low.rsplit("/", 1)[-1]
        rank = 0 if low.startswith(wanted) else 1 if base.startswith(wanted) else 2 if wanted in low else None
        if rank is not None:
            ranked.append((rank, order >= len(opened), len(rel), rel))
    return [
        {"label": rel, "kind": "file", "insertText": f"@{rel}", **({"detail": "open"} if not later else {})}
        for _, later, _, rel in sorted(ranked)
    ]


def _commands(query: str, engine: Engine) -> list[dict[str, Any]]:
    return [
        {"label": f"/{c.name}", "kind": "command", "insertText": f"/{c.name} ", "detail": c.description}
        for c in engine.commands() if c.name.startswith(query)
    ]


def open_documents(uris: list[str]) -> list[Path]:
    return [path for uri in uris if (path := path_of(uri)) is not None]
