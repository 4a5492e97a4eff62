"""The files a request names, shown to a small model with the request (docs/decisions.md).

A small model on a laptop pays seconds for every round and often skips reading a file before
changing it, so the turn's first request carries what it needs: the content of every file the
user's message names ("fix calc.py", "in src/app.py"), as aider's chat files and Claude Code's
@-mentions do. A name counts when it is a project file's relative path, or the base name of
exactly one project file. The files go in within ``budget`` characters, in the order they are
named; the rest are listed as too large to show, to be read with a tool. A file the ``read``
tool would ask about first (a secret file: ``.env``, ``*.key``; ``Policy.reads_unasked``) is
never shown, only named, whoever named it (the user, or a project's command).

On a session's first turn, in a small project (``SMALL_PROJECT`` files at most), other files
follow within ``others_budget``: those of the named files' kinds, so the module a named file
imports is in view, as the files a user adds to aider's chat are; or, when the message names
none ("where is the bulk discount set?"), those that share its rarer words (``relevant``), the
most first. Asked about a file it was not shown, a small model writes what it imagines the file
holds rather than reading it. The project's file list comes first, on the first turn: without
it, the model names its blocks after what they hold (median.py for a function added to calc.py)
and loses the path-and-block form.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from totem_engine.permissions import Policy
from totem_engine.textcalls import file_block
from totem_engine.tools.read import looks_binary
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.paths import project_path, resolve_in_project
from totem_engine.workspace.walk import walk_files

LISTED_FILES = 60  # the file list stops here, saying how many more there are
SMALL_PROJECT = 20
PROJECT_FILES_LIMIT = 5000
_NAME = re.compile(r"[\w./-]*\w\.\w+")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")  # BULK_MIN_UNITS, bulkDiscount: two or three words


@dataclass
class Mentions:
    """``text``: the block that follows the user's message; ``shown``: (path, bytes) of each file
    whose content is in it, for the read ledger (they count as read); ``named``: the files the
    message names."""

    text: str
    shown: list[tuple[str, bytes]] = field(default_factory=list)
    named: list[str] = field(default_factory=list)


def unasked_reads(policy: Policy, root: Path, extra_roots: Sequence[Path] = ()) -> Callable[[str], bool]:
    """``readable(rel)`` for ``mentions``: whether the project file ``rel`` may be read without
    asking, as the ``read`` tool decides it (``Policy.reads_unasked``), by the name it was given
    and the one it resolves to (a link named notes.txt to .env is the secret file). A path that
    leaves the project (every root of it: ``extra_roots`` too), or cannot be resolved, may not."""

    def readable(rel: str) -> bool:
        try:
            real = project_path(root, resolve_in_project(root, rel, extra_roots))
        except (ToolError, OSError, ValueError):
            return False
        return policy.reads_unasked(rel, real)

    return readable


def project_files(root: Path, limit: int = PROJECT_FILES_LIMIT) -> list[str]:
    """The project's files (ignore files respected), sorted, at most ``limit``."""
    found: list[str] = []
    for rel in walk_files(root, root, follow_links=False):
        found.append(rel)
        if len(found) >= limit:
            break
    return sorted(found)


def named_files(text: str, files: list[str]) -> list[str]:
    """The project files ``text`` names, in order of first mention."""
    by_base: dict[str, list[str]] = {}
    for rel in files:
        by_base.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
    known = set(files)
    named: list[str] = []
    for token in _NAME.findall(text):
        token = token.removeprefix("./").strip(".")
        rel = token if token in known else (by_base.get(token) or [None, None])
        if isinstance(rel, list):
            rel = rel[0] if len(rel) == 1 else None
        if rel and rel not in named:
            named.append(rel)
    return named


async def mentions(
    root: Path,
    text: str,
    *,
    budget: int,
    read: Callable[[Path], Awaitable[bytes]],
    files: list[str],
    first_turn: bool,
    readable: Callable[[str], bool],
    others_budget: int = 0,
) -> Mentions | None:
    """The block for a message: the files it names within ``budget`` characters; on the
    ``first_turn``, before them the file list, and after them, in a small project, the other
    files of their kinds or the ``relevant`` ones, within ``others_budget``. None when there is
    nothing to add. ``read`` reads a file as the editor sees it (unsaved buffers included);
    ``readable(rel)``: whether it may be read without asking (a secret file may not), else it is
    not read at all."""
    read = _read_once(read)  # the relevant files are read to score them, then to show them
    lines = []
    result = Mentions("", named=named_files(text, files))
    if first_turn and files:
        lines.append(f"Files in the project ({len(files)}): " + ", ".join(files[:LISTED_FILES]))
        if len(files) > LISTED_FILES:
            lines[0] += f", and {len(files) - LISTED_FILES} more"
    for rel in result.named:
        if not readable(rel):
            lines.append(f"{rel} is not shown here: the read tool asks the user before reading it.")
            continue
        shown = await _show(root, rel, read, budget)
        if shown is None:
            lines.append(f"{rel} is too large to show here; read it with the read tool.")
            continue
        budget -= len(shown[0])
        lines.append(shown[0])
        result.shown.append((rel, shown[1]))
    if first_turn and len(files) <= SMALL_PROJECT:
        unasked = [rel for rel in files if rel not in result.named and readable(rel)]
        if result.named:
            kinds = {_kind(rel) for rel in result.named}
            others = [rel for rel in unasked if _kind(rel) in kinds]
        else:
            others = await relevant(root, text, unasked, read)
        for rel in others:
            shown = await _show(root, rel, read, others_budget)
            if shown is not None:
                others_budget -= len(shown[0])
                lines.append(shown[0])
                result.shown.append((rel, shown[1]))
    if not lines:
        return None
    result.text = "\n\n".join(lines)
    return result


async def relevant(root: Path, text: str, files: list[str], read: Callable[[Path], Awaitable[bytes]]) -> list[str]:
    """The ``files`` that share words with ``text``, scored by the sum of the shared words' rarity
    among them (inverse document frequency: a word every file has counts for nothing), the best
    first; those scoring under half the best are left out, as noise a small model would follow."""
    asked = _words(text)
    contents: dict[str, set[str]] = {}
    for rel in files:
        try:
            data = await read(root / rel)
        except OSError:
            continue
        if not looks_binary(data):
            contents[rel] = _words(data.decode("utf-8")) & asked
    frequency: dict[str, int] = {}
    for words in contents.values():
        for word in words:
            frequency[word] = frequency.get(word, 0) + 1
    scores = {rel: sum(math.log(len(contents) / frequency[word]) for word in words) for rel, words in contents.items()}
    best = max(scores.values(), default=0.0)
    return sorted((rel for rel, score in scores.items() if score > 0 and score >= best / 2), key=lambda rel: -scores[rel])


def _read_once(read: Callable[[Path], Awaitable[bytes]]) -> Callable[[Path], Awaitable[bytes]]:
    """``read``, each path read at most once."""
    cache: dict[Path, bytes] = {}

    async def cached(path: Path) -> bytes:
        if path not in cache:
            cache[path] = await read(path)
        return cache[path]

    return cached


def _words(text: str) -> set[str]:
    """The words of ``text`` of three letters or more, in lower case; identifiers split into theirs."""
    return {word.lower() for word in _WORD.findall(text) if len(word) >= 3}


def _kind(rel: str) -> str:
    return rel.rsplit(".", 1)[-1] if "." in rel.rsplit("/", 1)[-1] else ""


async def _show(root: Path, rel: str, read: Callable[[Path], Awaitable[bytes]], budget: int) -> tuple[str, bytes] | None:
    """``rel`` as a path line and a fenced block, with its bytes; None when it cannot be read, is
    binary or is longer than ``budget`` characters."""
    try:
        data = await read(root / rel)
    except OSError:
        return None
    content = data.decode("utf-8", errors="replace")
    if looks_binary(data) or len(content) > budget:
        return None
    return file_block(rel, content), data
