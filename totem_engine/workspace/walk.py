"""The project's files as glob and grep see them: .gitignore honoured, hidden and outside skipped.

``walk_files`` yields project-relative paths under a start folder. Skipped: hidden files and
folders (``.git`` among them), whatever a ``.gitignore`` ignores (the root's and every nested
one; the deepest file with a matching pattern decides, so a nested ``!pattern`` re-includes),
and symlinks whose real path leaves the project. ``glob_matcher`` is the one glob dialect both
tools use for their patterns.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from totem_engine.workspace.paths import relative


@dataclass(frozen=True)
class IgnoreFile:
    """One parsed .gitignore: ``base`` is the project-relative folder holding it ('' for the root)."""

    base: str
    spec: GitIgnoreSpec


def load_ignore(folder: Path, base: str) -> list[IgnoreFile]:
    """``[IgnoreFile]`` for ``folder/.gitignore``, or ``[]`` when it has none (or it cannot be read)."""
    try:
        text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [IgnoreFile(base, GitIgnoreSpec.from_lines(text.splitlines()))]


def is_ignored(rules: list[IgnoreFile], rel: str, is_dir: bool) -> bool:
    """Whether ``rel`` (project-relative) is ignored: the deepest .gitignore with an opinion decides."""
    for rule in reversed(rules):
        sub = rel[len(rule.base) + 1 :] if rule.base else rel
        # A trailing slash lets folder-only patterns ("build/") match the folder itself.
        decision = rule.spec.check_file(sub + "/" if is_dir else sub).include
        if decision is not None:
            return decision
    return False


def start_rules(root: Path, start: Path) -> tuple[list[IgnoreFile], bool]:
    """The .gitignore files in force at ``start``, and whether ``start`` lies in an ignored folder.

    A folder named explicitly is searched even when ignored; then only the .gitignore files
    from it downwards apply (the ones above would hide all of it).
    """
    rules = load_ignore(root, "")
    rel = relative(root, start)
    if rel == ".":
        return rules, False
    parts = rel.split("/")
    for depth in range(1, len(parts) + 1):
        prefix = "/".join(parts[:depth])
        if is_ignored(rules, prefix, True):
            return load_ignore(start, rel), True
        rules = rules + load_ignore(root / prefix, prefix)
    return rules, False


def walk_files(root: Path, start: Path, *, follow_links: bool) -> Iterator[str]:
    """Project-relative paths (``a/b.py``) of the files under ``start``, in a stable order.

    ``start`` is a real path inside ``root``; a file yields itself. With ``follow_links`` a
    symlink is followed only when its real path is inside the project, and a linked folder only
    when its real path is outside ``start`` (each real folder is entered once, so links cannot
    loop); without it symlinks are skipped.
    """
    real_root = root.resolve()
    start_rel = relative(real_root, start)
    if not start.is_dir():
        yield start_rel
        return
    rules, _ = start_rules(real_root, start)
    real_start = start.resolve()
    seen = {str(real_start)}
    stack = [(start, "" if start_rel == "." else start_rel, rules)]
    while stack:
        folder, folder_rel, folder_rules = stack.pop()
        children = []
        for entry in _entries(folder):
            rel = f"{folder_rel}/{entry.name}" if folder_rel else entry.name
            kind = _kind(entry, real_root, follow_links)
            if kind is None or is_ignored(folder_rules, rel, kind == "dir"):
                continue
            if kind == "file":
                yield rel
                continue
            real = os.path.realpath(entry.path)
            # A linked folder the walk reaches under its own name anyway would come out twice.
            if real not in seen and not (entry.is_symlink() and Path(real).is_relative_to(real_start)):
                seen.add(real)
                children.append((Path(entry.path), rel, folder_rules + load_ignore(Path(entry.path), rel)))
        stack.extend(reversed(children))


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    """The visible entries of ``folder`` by name; an unreadable folder has none."""
    try:
        with os.scandir(folder) as it:
            return sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError:
        return []


def _kind(entry: os.DirEntry[str], real_root: Path, follow_links: bool) -> str | None:
    """'file', 'dir', or None for what the walk skips (links leaving the project, sockets, ...)."""
    try:
        if entry.is_symlink():
            if not follow_links:
                return None
            real = Path(os.path.realpath(entry.path))
            if real != real_root and real_root not in real.parents:
                return None
        if entry.is_dir():
            return "dir"
        return "file" if entry.is_file() else None
    except OSError:
        return None


def printable(rel: str) -> str:
    """``rel`` safe to print: a file name that is not UTF-8 shows U+FFFD where its bad bytes were."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# --- globs ----------------------------------------------------------------------------------


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A test for relative paths (``src/a.py``) against a glob.

    ``*`` and ``?`` stay within a name, ``**`` spans folders, ``[abc]``/``[!abc]`` are sets and
    ``{a,b}`` are alternatives. A pattern without ``/`` matches the file name at any depth
    (``*.py``); one with ``/`` matches the whole relative path (``src/**/*.py``).
    """
    regex = re.compile("|".join(f"(?:{_glob_regex(p)})" for p in expand_braces(pattern)))
    return lambda path: regex.fullmatch(path) is not None


def expand_braces(pattern: str) -> list[str]:
    """``'*.{ts,tsx}'`` -> ``['*.ts', '*.tsx']``; nested groups expand too; ``{x}`` stays literal."""
    group = _first_group(pattern)
    if group is None:
        return [pattern]
    head, body, tail = group
    options = _split_top(body)
    if len(options) > 1:
        middles = [m for option in options for m in expand_braces(option)]
    else:
        middles = ["{" + m + "}" for m in expand_braces(body)]
    return [head + m + t for m in middles for t in expand_braces(tail)]


def _first_group(pattern: str) -> tuple[str, str, str] | None:
    """(before, inside, after) of the first balanced ``{...}``, or None."""
    depth = 0
    for i, char in enumerate(pattern):
        if char == "{":
            if depth == 0:
                start = i
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                return pattern[:start], pattern[start + 1 : i], pattern[i + 1 :]
    return None


def _split_top(body: str) -> list[str]:
    """``body`` cut at the commas that are not inside a nested ``{...}``."""
    parts, depth, current = [], 0, ""
    for char in body:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        current += char
    return [*parts, current]


def _glob_regex(pattern: str) -> str:
    out = "" if "/" in pattern else "(?:.*/)?"
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif char == "*":
            out += "[^/]*"
            i += 1
        elif char == "?":
            out += "[^/]"
            i += 1
        elif char == "[" and (end := _set_end(pattern, i)) is not None:
            out += _set_regex(pattern[i + 1 : end])
            i = end + 1
        elif char == "\\" and i + 1 < len(pattern):
            out += re.escape(pattern[i + 1])
            i += 2
        else:
            out += re.escape(char)
            i += 1
    return out


def _set_end(pattern: str, start: int) -> int | None:
    """Index of the ``]`` closing the set opened at ``start`` (a ``]`` first in the set is literal)."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    end = pattern.find("]", i)
    return end if end != -1 else None


def _set_regex(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    escaped = body.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]").replace("^", "\\^")
    # A set never matches the folder separator, as in git and ripgrep.
    return f"[^/{escaped}]" if negate else f"(?!/)[{escaped}]"
