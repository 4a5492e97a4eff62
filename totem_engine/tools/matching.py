"""The edit-matching engine: where a piece of old text sits in a file, and the file with it replaced.

Pure functions over decoded text; no I/O. ``edit`` and ``patch`` both use it.

Line endings. Matching happens in a normalized view of the file in which every CRLF is one "\\n"
(``FileText.norm``); old and new texts are normalized the same way. A position in the view maps
back to the original text so that a CRLF is never split: the view's "\\n" of a CRLF maps to its
"\\r". The original text outside a replaced region is copied unchanged, byte for byte, and the new
text's "\\n" is written with the ending of the lines it replaces (``_ending_for``).

Strategies, in order; the first that finds anything decides:

1. exact: ``old`` occurs as is (line endings aside);
2. trailing whitespace ignored, line by line;
3. indentation ignored: lines compared by their stripped content; the new text is re-indented so
   the file keeps its own indentation (``Found.fit``);
4. Unicode folded: dashes, curly quotes and unusual spaces read as their ASCII forms, stripped.

The tolerant strategies (2-4) match whole lines only and need a non-blank line in ``old``.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cached_property

from totem_engine.vocab.tools import ToolError

EXACT = "exact"
TRAILING_WHITESPACE = "trailing whitespace ignored"
INDENTATION = "indentation ignored"
UNICODE = "Unicode punctuation and spaces folded"

CLOSEST_CUTOFF = 0.4  # below this similarity a window is not worth showing as "closest"
CLOSEST_MAX_LINES = 40
MAX_LINES_NAMED = 10  # an ambiguity error names at most this many lines
CLOSEST_CANDIDATES = 25  # windows difflib compares, in a long file
CLOSEST_BY_CHARACTERS = 2000  # longest old text compared character by character

_FOLD = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
        **dict.fromkeys("\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                        "\u202f\u205f\u3000", " "),
        **dict.fromkeys("\u200b\ufeff", ""),
        "\u2026": "...",
    }
)


class MatchError(ToolError):
    """The old text could not be placed in the file."""


class NoMatch(MatchError):
    """No strategy found the old text. ``closest``: the most similar lines, numbered, or None."""

    def __init__(self, closest: str | None):
        self.closest = closest
        super().__init__("no match")


class AmbiguousMatch(MatchError):
    """The old text matched more than one place; ``lines`` are where (1-based, in file order)."""

    def __init__(self, lines: list[int], strategy: str):
        self.lines = lines
        self.strategy = strategy
        distinct = sorted(set(lines))
        if len(distinct) > MAX_LINES_NAMED:
            shown = f"{', '.join(map(str, distinct[:MAX_LINES_NAMED]))} and {len(distinct) - MAX_LINES_NAMED} more"
        else:
            shown = join_numbers(distinct)
        super().__init__(f"{len(lines)} matches, at lines {shown}")


def join_numbers(numbers: list[int]) -> str:
    """[2] -> "2"; [2, 3] -> "2 and 3"; [1, 2, 3] -> "1, 2 and 3"."""
    words = [str(n) for n in numbers]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def to_lf(text: str) -> str:
    # "\r+\n" rather than "\r\n": a stray "\r" left before a "\n" would become "\r\r\n" once the
    # "\n" is written back as CRLF.
    return re.sub(r"\r+\n", "\n", text)


@dataclass(frozen=True)
class FileText:
    """A file's decoded text (BOM removed) and its CRLF-normalized view.

    ``crlf`` holds, in order, the view index of each "\\n" that stands for a "\\r\\n".
    """

    original: str
    norm: str
    crlf: tuple[int, ...]

    @classmethod
    def of(cls, original: str) -> "FileText":
        crlf = tuple(m.start() - k for k, m in enumerate(re.finditer("\r\n", original)))
        return cls(original, original.replace("\r\n", "\n"), crlf)

    def to_original(self, index: int) -> int:
        """The original offset of view offset ``index`` (a CRLF's "\\n" maps to its "\\r")."""
        return index + bisect_left(self.crlf, index)

    @cached_property
    def lines(self) -> list[tuple[int, int]]:
        """(start, end) of each line's content in the view; ``end`` is its "\\n" or the text's end."""
        spans, start = [], 0
        for m in re.finditer("\n", self.norm):
            spans.append((start, m.start()))
            start = m.end()
        if start < len(self.norm):
            spans.append((start, len(self.norm)))
        return spans

    @cached_property
    def line_texts(self) -> list[str]:
        return [self.norm[s:e] for s, e in self.lines]


@dataclass(frozen=True)
class Found:
    """One place the old text matched: ``start``..``end`` in the view, at 1-based ``line``.

    ``indents``: (old line's indentation, matched file line's) for each non-blank line, base first;
    ``drop_final_newline``: the old text ended with a newline the file's last line lacks.
    """

    start: int
    end: int
    line: int
    strategy: str
    indents: tuple[tuple[str, str], ...] = ()
    drop_final_newline: bool = False

    def fit(self, new: str) -> str:
        """``new`` (LF endings) as it must be written here: re-indented, final newline dropped."""
        if any(old != file for old, file in self.indents):
            levels = _levels(self.indents)
            new = "\n".join(_reindent(line, levels, self.indents[0]) for line in new.split("\n"))
        if self.drop_final_newline and new.endswith("\n"):
            new = new[:-1]
        return new


@dataclass(frozen=True)
class Replaced:
    """The whole new text, the strategy that matched, and the line of each replacement."""

    text: str
    strategy: str
    lines: list[int]


def replace(content: str, old: str, new: str, replace_all: bool = False) -> Replaced:
    """``content`` with ``old`` replaced by ``new``; ``old`` must match one place unless ``replace_all``.

    Raises NoMatch or AmbiguousMatch. ``old`` must not be empty.
    """
    text = FileText.of(content)
    found = locate(text, old)
    if not found:
        raise NoMatch(closest(text, old))
    if not replace_all and len(found) > 1:
        raise AmbiguousMatch([f.line for f in found], found[0].strategy)
    chosen = disjoint(found)
    return Replaced(splice(text, [(f, new) for f in chosen]), chosen[0].strategy, [f.line for f in chosen])


def locate(text: FileText, old: str, whole_lines: bool = False) -> list[Found]:
    """Every place ``old`` (non-empty) matches, overlaps included, by the first strategy that finds any.

    ``whole_lines``: an exact match must also start at a line's start and end at a line's end (as
    a diff hunk's text does); the tolerant strategies match whole lines anyway.
    """
    old = to_lf(old)
    found = [f for f in _exact(text, old) if not whole_lines or _on_line_bounds(text.norm, f)]
    for strategy, key in _TOLERANT:
        if found:
            break
        found = _by_lines(text, old, strategy, key)
    return found


def disjoint(found: list[Found]) -> list[Found]:
    """The matches left after dropping each one that overlaps an earlier one (as str.replace does)."""
    kept: list[Found] = []
    for f in sorted(found, key=lambda f: f.start):
        if not kept or f.start >= kept[-1].end:
            kept.append(f)
    return kept


def splice(text: FileText, edits: list[tuple[Found, str]]) -> str:
    """The original text with each found region replaced by its new text (disjoint regions).

    Text outside the regions is copied unchanged; each new text is fitted to its place and its
    "\\n" written as the ending of the region it replaces.
    """
    out, pos = [], 0
    for found, new in sorted(edits, key=lambda e: e[0].start):
        start, end = text.to_original(found.start), text.to_original(found.end)
        assert start >= pos, "splice needs disjoint regions"
        piece = found.fit(to_lf(new))
        out += [text.original[pos:start], piece.replace("\n", _ending_for(text.original, start, end))]
        pos = end
    out.append(text.original[pos:])
    return "".join(out)


def closest(text: FileText, old: str) -> str | None:
    """The lines of the file most like ``old`` ("N\\tline", as read shows them), or None.

    Windows of as many lines as ``old`` are compared with difflib; None when the file is empty or
    nothing reaches CLOSEST_CUTOFF. difflib is slow (milliseconds a window), so in a long file
    only the CLOSEST_CANDIDATES windows that cheaper scores rank best are.
    """
    wanted = _old_lines(to_lf(old))[0]
    lines = text.line_texts
    if not lines:
        return None
    size = max(1, len(wanted))
    starts = _candidate_windows(lines, wanted, size)
    # Characters see typos; for a long old text (difflib is quadratic) whole lines must do.
    by_chars = sum(map(len, wanted)) <= CLOSEST_BY_CHARACTERS
    window = (lambda i: "\n".join(lines[i : i + size])) if by_chars else (lambda i: lines[i : i + size])
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(wanted) if by_chars else wanted)  # seq2 is the side difflib indexes once
    best, best_at = CLOSEST_CUTOFF, None
    for i in starts:
        matcher.set_seq1(window(i))
        # The quick ratios are upper bounds: skip the costly ratio() when they cannot win.
        if matcher.real_quick_ratio() < best or matcher.quick_ratio() < best:
            continue
        ratio = matcher.ratio()
        if ratio > best or best_at is None and ratio >= best:
            best, best_at = ratio, i
    if best_at is None:
        return None
    shown = lines[best_at : best_at + min(size, CLOSEST_MAX_LINES)]
    numbered = [f"{best_at + 1 + k}\t{line}" for k, line in enumerate(shown)]
    if size > CLOSEST_MAX_LINES:
        numbered.append(f"... ({size - CLOSEST_MAX_LINES} more lines)")
    return "\n".join(numbered)


def _candidate_windows(lines: list[str], wanted: list[str], size: int) -> list[int]:
    """First lines (0-based, ascending) of the windows worth comparing with difflib.

    Half are the windows with the most anchor votes, the rest those with the best trigram score.
    """
    count = max(1, len(lines) - size + 1)
    if count <= CLOSEST_CANDIDATES:
        return list(range(count))
    votes = _anchor_votes(lines, wanted, count)
    voted = [i for i in heapq.nlargest(CLOSEST_CANDIDATES // 2, range(count), key=votes.__getitem__) if votes[i]]
    scores = _trigram_scores(lines, wanted, size, count)
    return sorted({*voted, *heapq.nlargest(CLOSEST_CANDIDATES - len(voted), range(count), key=scores.__getitem__)})


def _anchor_votes(lines: list[str], wanted: list[str], count: int) -> list[int]:
    """Per window: how many of ``wanted``'s lines it holds, as is (stripped), in their place.

    Most lines of a near miss are exact copies; each one found points at one window.
    """
    where: dict[str, list[int]] = {}
    for j, line in enumerate(wanted):
        if line.strip():
            where.setdefault(line.strip(), []).append(j)
    votes = [0] * count
    for i, line in enumerate(lines):
        for j in where.get(line.strip(), ()):
            if 0 <= i - j < count:
                votes[i - j] += 1
    return votes


def _trigram_scores(lines: list[str], wanted: list[str], size: int, count: int) -> list[float]:
    """Per window: the Dice share of character trigrams it has in common with ``wanted``.

    Summed line by line and slid over the file, so one pass; trigrams rather than words, so a
    line with a typo in an identifier still mostly matches.
    """
    old_grams = set().union(*(_trigrams(line) for line in wanted))
    grams = [_trigrams(line) for line in lines]
    shared = [len(g & old_grams) for g in grams]
    total = [len(g) for g in grams]
    common, own = sum(shared[:size]), sum(total[:size])
    scores = []
    for i in range(count):
        if i:
            common += shared[i + size - 1] - shared[i - 1]
            own += total[i + size - 1] - total[i - 1]
        scores.append(2 * common / ((own + len(old_grams)) or 1))
    return scores


def _trigrams(line: str) -> set[str]:
    line = line.strip()
    return {line[k : k + 3] for k in range(len(line) - 2)}


# --- strategies ---------------------------------------------------------------------------


def _exact(text: FileText, old: str) -> list[Found]:
    found, at = [], text.norm.find(old)
    line, counted = 1, 0  # lines are counted on from the previous match, not from the start
    while at != -1:
        line += text.norm.count("\n", counted, at)
        counted = at
        found.append(Found(at, at + len(old), line, EXACT))
        at = text.norm.find(old, at + 1)
    return found


def _on_line_bounds(norm: str, found: Found) -> bool:
    starts = found.start == 0 or norm[found.start - 1] == "\n"
    ends = found.end == len(norm) or norm[found.end - 1] == "\n"
    return starts and ends


def _fold(line: str) -> str:
    return line.translate(_FOLD).strip()


_TOLERANT: tuple[tuple[str, Callable[[str], str]], ...] = (
    (TRAILING_WHITESPACE, str.rstrip),
    (INDENTATION, str.strip),
    (UNICODE, _fold),
)


def _old_lines(old: str) -> tuple[list[str], bool]:
    """``old`` cut into lines, and whether it ends with a newline ("a\\nb\\n" -> ["a", "b"], True)."""
    lines = old.split("\n")
    ends_with_newline = len(lines) > 1 and lines[-1] == ""
    if ends_with_newline:
        lines.pop()
    return lines, ends_with_newline


def _by_lines(text: FileText, old: str, strategy: str, key: Callable[[str], str]) -> list[Found]:
    """Whole-line matches of ``old`` where every line's ``key`` equals the file line's."""
    old_lines, ends_with_newline = _old_lines(old)
    wanted = [key(line) for line in old_lines]
    if not any(wanted):  # blank lines alone would match every blank stretch of the file
        return []
    lines = text.line_texts
    keys = [key(line) for line in lines]
    size, found = len(wanted), []
    for i in range(len(lines) - size + 1):
        if keys[i] != wanted[0] or keys[i : i + size] != wanted:
            continue
        last_end = text.lines[i + size - 1][1]
        # A newline at the end of old takes the last line's newline too, if the file has one.
        end = last_end + 1 if ends_with_newline and last_end < len(text.norm) else last_end
        found.append(
            Found(
                start=text.lines[i][0],
                end=end,
                line=i + 1,
                strategy=strategy,
                indents=tuple((_indent(o), _indent(f)) for o, f in zip(old_lines, lines[i : i + size]) if o.strip()),
                drop_final_newline=ends_with_newline and last_end == len(text.norm),
            )
        )
    return found


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _levels(indents: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Each indentation the old text used -> the file's for it, where the file was consistent."""
    levels: dict[str, str | None] = {}
    for old, file in indents:
        levels[old] = file if levels.get(old, file) == file else None  # None: two different ones
    return {old: file for old, file in levels.items() if file is not None}


def _reindent(line: str, levels: dict[str, str], base: tuple[str, str]) -> str:
    """``line`` of the new text with the file's indentation (blank lines are kept).

    An indentation the old text used takes the file's for it (so 2-space old text written into a
    4-space file follows the file at every level it showed); any other is shifted like ``base``,
    (old text's, file's) indentation of the first non-blank line.
    """
    if not line.strip():
        return line
    own = _indent(line)
    if own in levels:
        return levels[own] + line[len(own) :]
    old_base, new_base = base
    if line.startswith(old_base):
        return new_base + line[len(old_base) :]
    # Less indented than the base: shift it by the same amount, where the two bases allow it.
    if new_base.startswith(old_base):
        return new_base[len(old_base) :] + line
    if old_base.startswith(new_base):
        return line[min(len(_indent(line)), len(old_base) - len(new_base)) :]
    return line


def _ending_for(original: str, start: int, end: int) -> str:
    """The line ending new text replacing ``original[start:end]`` is written with.

    The one most of the region's line breaks use; failing that (none, or a tie), the ending of the
    line the region ends on; failing that (the last line has none), the file's dominant one.
    """
    crlf = original.count("\r\n", start, end)
    lf = original.count("\n", start, end) - crlf
    if crlf != lf:
        return "\r\n" if crlf > lf else "\n"
    newline = original.find("\n", end)
    if newline != -1:
        return "\r\n" if original[newline - 1 : newline] == "\r" else "\n"
    crlf = original.count("\r\n")
    return "\r\n" if crlf > original.count("\n") - crlf else "\n"
