"""The files the project's root AGENTS.md points to, loaded with it into the system prompt
(seed 000 "AGENTS.md and its pointers").

A pointer is a Markdown link's target (``[conventions](docs/CONVENTIONS.md)``) or a relative
path to a document (``.md``, ``.markdown``, ``.txt``, ``.rst``, ``.adoc``) written in the text or
in backticks (``see docs/CONVENTIONS.md``); a command in backticks (```npm test```) is none. Each
is followed once and one level deep (what a pointed file points to is not followed), inside the
project only: a path that leaves it (``..``, an absolute path elsewhere, a symlink out), a secret
file or one the permission rules would not let ``read`` open without asking, a URL (instructions
come from the project and from nowhere else, seed 001), a folder, a file that is not text and a
missing file are skipped, and the prompt says which and why. An AGENTS.md pointed to is left to
tools/instructions.py, which attaches it when the agent works in its folder. Each file is cut at
``PER_FILE`` characters and all of them together at ``TOTAL`` (a quarter of each for a small
model, whose window is small).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from totem_engine.permissions import is_secret
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.paths import BoundaryError, relative, resolve_in_project

PER_FILE = 12_000  # characters of one pointed file (about 3,000 tokens)
TOTAL = 24_000  # characters of all of them
SMALL_SHARE = 4  # a small model gets a quarter of each

INSTRUCTIONS_FILE = "AGENTS.md"
_DOCUMENT = r"(?:md|markdown|txt|rst|adoc)"
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s)>\]]+|\bmailto:[^\s)>\]]+", re.IGNORECASE)
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^\"'\n]*[\"'])?\s*\)")
_PATH = re.compile(
    rf"(?<![\w./~-])((?:\.{{1,2}}/|/)?(?:[\w.-]+/)*[\w.-]*\w\.{_DOCUMENT})(?![\w/-]|\.\w)", re.IGNORECASE
)
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


@dataclass(frozen=True)
class Loaded:
    path: str  # project-relative
    text: str
    size: int  # bytes of the whole file
    cut: bool


@dataclass
class Pointers:
    """What following the pointers found: the files loaded, in order, and each pointer skipped
    with its reason."""

    loaded: list[Loaded] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def pointers_in(text: str) -> list[str]:
    """The pointers of ``text`` in the order they appear, each once as written; a URL is kept
    (to be reported), a link to a place in the same file (``#usage``) is none."""
    found: list[tuple[int, str]] = []
    for match in _LINK.finditer(text):
        found.append((match.start(), match.group(1)))
    rest = _LINK.sub(lambda m: " " * len(m.group(0)), text)
    for match in _URL.finditer(rest):
        url = match.group(0).rstrip(".,;:!?'\"`")
        if re.search(rf"\.{_DOCUMENT}$", url, re.IGNORECASE):
            found.append((match.start(), url))
    rest = _URL.sub(lambda m: " " * len(m.group(0)), rest)
    found.extend((match.start(), match.group(1)) for match in _PATH.finditer(rest))
    seen: set[str] = set()
    ordered: list[str] = []
    for _, target in sorted(found):
        target = target if _SCHEME.match(target) else unquote(target.split("#", 1)[0].split("?", 1)[0])
        if target and target not in seen:
            seen.add(target)
            ordered.append(target)
    return ordered


def follow(
    root: Path, text: str, *, readable: Callable[[str], bool] | None = None, small: bool = False
) -> Pointers:
    """Follow the pointers of the root AGENTS.md's ``text`` (module docstring). ``readable(rel)``:
    whether ``read`` would open the file without asking (mentions.unasked_reads); None: only
    the secret-file rule applies."""
    per_file, left = (PER_FILE // SMALL_SHARE, TOTAL // SMALL_SHARE) if small else (PER_FILE, TOTAL)
    result = Pointers()
    taken: set[str] = {INSTRUCTIONS_FILE}
    for target in pointers_in(text):
        rel, reason = _place(root, target, readable)
        if rel in taken:
            continue
        if reason is None and left <= 0:
            reason = f"over the limit of {TOTAL // SMALL_SHARE if small else TOTAL} characters for all pointed files"
        if reason is None:
            room = min(per_file, left)
            loaded, reason = _read(root, rel, room)
            if loaded is not None:
                result.loaded.append(loaded)
                left -= room if loaded.cut else len(loaded.text)  # a cut file used up its room
        if rel is not None:
            taken.add(rel)
        if reason is not None:
            result.skipped.append((target, reason))
    return result


def _place(root: Path, target: str, readable: Callable[[str], bool] | None) -> tuple[str | None, str | None]:
    """The pointed file's project-relative path, and why it is not followed (None: it may be)."""
    if _SCHEME.match(target):
        return None, "a URL: instructions are read from the project only"
    try:
        real = resolve_in_project(root, target)
    except BoundaryError:
        return None, "outside the project"
    except ToolError:
        return None, "not a usable path"
    rel = relative(root, real)
    if is_secret(target) or is_secret(rel):
        return rel, "a secret file"
    if readable is not None and not readable(target):
        return rel, "the permission rules do not let it be read without asking"
    if real.name == INSTRUCTIONS_FILE:
        return rel, "an AGENTS.md: attached when the agent works in its folder"
    if not real.exists():
        return rel, "not found"
    if not real.is_file():
        return rel, "not a file"
    return rel, None


def _read(root: Path, rel: str, limit: int) -> tuple[Loaded | None, str | None]:
    path = root.resolve() / rel
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(limit * 4 + 4)  # UTF-8 takes at most four bytes a character
        text = head.decode("utf-8", errors="strict" if len(head) == size else "ignore")
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    except UnicodeDecodeError:
        return None, "not text"
    if "\x00" in text:
        return None, "not text"
    cut = len(text) > limit or len(head) < size
    if len(text) > limit:
        text = text[:limit]
        text = text[: text.rfind("\n") + 1] or text  # at a line's end when there is one
    return Loaded(path=rel, text=text.strip(), size=size, cut=cut), None
