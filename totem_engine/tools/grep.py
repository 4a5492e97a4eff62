"""grep: lines matching a regular expression in the project's files.

Two engines give the same answer: ripgrep (``rg --count``, then ``rg --json`` on the few files
whose lines are shown) when it is on PATH and can honour the same ignore rules, a Python search
over ``walk_files`` otherwise. Patterns are held to the subset both regex dialects read alike,
so a pattern never means one thing in one engine and another thing in the other. Files that
``read`` would ask about (keys, passwords) are never searched, hidden ones neither.
"""

from __future__ import annotations

import base64
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import anyio.from_thread
from pydantic import Field

from totem_engine.permissions import is_secret
from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.vocab.accounts import first_line, short
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import unsaved_note
from totem_engine.workspace.paths import folder_glob, project_path, relative, resolve_in_project, root_of
from totem_engine.workspace.ripgrep import FLAGS, missing_note, read_ripgrep, ripgrep_for, run_ripgrep
from totem_engine.workspace.walk import expand_braces, glob_matcher, printable, walk_files

MAX_MATCHES = 200
MAX_LINE = 300  # characters of a matching line shown
NOTE_ROOM = 400  # characters of the output budget kept for the notes


class GrepInput(ToolInput):
    pattern: str = Field(min_length=1, description="Regular expression to search for, e.g. `def \\w+_test`, `TODO|FIXME`.")
    path: str | None = Field(None, description="File or folder to search, relative to the project root (default: the root).")
    include: str | None = Field(None, description="Only files whose name matches this glob, e.g. `*.py`, `*.{ts,tsx}`.")


# --- the pattern subset ---------------------------------------------------------------------

_QUANTIFIER = re.compile(r"\{\d+(,\d*)?\}")
_FLAG_GROUP = re.compile(r"([a-zA-Z]*)(?:-([a-zA-Z]*))?[:)]")
_SUBSET = "Use the common regex subset: no lookaround, no backreferences, no possessive or atomic groups."


def check_regex(pattern: str) -> re.Pattern[str]:
    """The compiled pattern, or a ToolError when it is outside what Python and ripgrep share."""
    problem = _portability_problem(pattern)
    if problem:
        raise ToolError(f"Unsupported pattern: {problem}. {_SUBSET}")
    with warnings.catch_warnings():
        # Python warns (FutureWarning) on [[, &&, --, ~~, ||: ripgrep reads those as set syntax.
        warnings.simplefilter("error", FutureWarning)
        try:
            return re.compile(pattern)
        except (re.error, FutureWarning) as exc:
            raise ToolError(f"Invalid regular expression {pattern!r}: {exc}.") from None


def _portability_problem(pattern: str) -> str | None:
    """What in ``pattern`` one engine would read differently from the other, or None."""
    if "\n" in pattern:
        return "a newline can never match: grep searches one line at a time"
    i, after_quantifier = 0, False
    while i < len(pattern):
        char = pattern[i]
        quantifier = False
        if char == "\\":
            problem = _escape_problem(pattern[i + 1 : i + 2], in_set=False)
            i += 2
        elif char == "[":
            i, problem = _scan_set(pattern, i)
        elif char == "(" and pattern.startswith("?", i + 1):
            problem = _group_problem(pattern[i + 2 :])
            i += 2
        elif char == "{":
            match = _QUANTIFIER.match(pattern, i)
            problem = None if match else "a literal { must be escaped as \\{ (unescaped, it starts a repetition like {2} or {1,3})"
            i = match.end() if match else i
            quantifier = True
        elif char in "*+?":
            problem = "possessive quantifiers (*+, ++, ?+, {n}+) are not supported" if after_quantifier and char == "+" else None
            quantifier = char != "?" or not after_quantifier  # a ? after a quantifier makes it lazy
            i += 1
        else:
            problem = None
            i += 1
        if problem:
            return problem
        after_quantifier = quantifier
    return None


def _escape_problem(char: str, *, in_set: bool) -> str | None:
    if char.isdigit():
        return "backreferences (\\1) and octal escapes are not supported"
    if char == "Z":
        return "\\Z is not supported; use $"
    if char in ("<", ">"):
        return "\\< and \\> are word boundaries in ripgrep but literal in Python; use \\b, or < and > unescaped"
    if char == "n":
        return "\\n can never match: grep searches one line at a time"
    if char == "N":
        return "\\N{...} named characters are not supported; write the character itself"
    if in_set and char == "b":
        return "\\b inside [...] is not supported"
    if char and not char.isascii():
        return "a backslash before a non-ASCII character is not supported; write the character alone"
    return None


def _scan_set(pattern: str, start: int) -> tuple[int, str | None]:
    """(index after the set opened at ``start``, problem or None)."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):
        i += 1
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            problem = _escape_problem(pattern[i + 1 : i + 2], in_set=True)
            if problem:
                return i, problem
            i += 2
        elif char == "[":
            return i, "nested sets and classes like [[:alpha:]] are not supported; use \\w, \\d, \\s or a plain [a-z] set"
        elif pattern.startswith(("&&", "--", "~~"), i):
            return i, "set operations (&&, --, ~~) inside [...] are not supported"
        elif char == "]":
            return i + 1, None
        else:
            i += 1
    return i, None  # unterminated: re.compile says so


def _group_problem(rest: str) -> str | None:
    """The problem with a group opened by ``(?`` followed by ``rest``, or None."""
    if rest.startswith(("=", "!", "<=", "<!")):
        return "lookahead and lookbehind ((?=, (?!, (?<=, (?<!) are not supported"
    if rest.startswith("P="):
        return "backreferences ((?P=name)) are not supported"
    if rest.startswith((":", "P<")):
        return None
    if rest.startswith(">"):
        return "atomic groups (?>...) are not supported"
    if rest.startswith("("):
        return "conditional groups (?(...)...) are not supported"
    if rest.startswith("#"):
        return "comments (?#...) are not supported"
    if rest.startswith("<"):
        return "write a named group as (?P<name>...)"
    flags = _FLAG_GROUP.match(rest)
    if flags is None:
        return f"unknown group syntax (?{rest[:1]}"
    unsupported = sorted(set(flags[1] + (flags[2] or "")) - set("ims"))
    return f"the flag(s) {''.join(unsupported)} are not supported (only i, m, s)" if unsupported else None


def check_include(include: str) -> list[str]:
    """The globs an include expands to (``*.{ts,tsx}`` -> ``*.ts``, ``*.tsx``); ToolError if unusable."""
    if "/" in include:
        raise ToolError("include filters file names only (e.g. *.py); give the folder as `path`.")
    globs = expand_braces(include)
    # ripgrep's type definitions split at ',' and ':' and read leftover braces as alternatives.
    if any(char in glob for glob in globs for char in ",:{}"):
        raise ToolError("include cannot hold ',', ':' or braces other than one {a,b} list of alternatives.")
    return globs


# --- matches --------------------------------------------------------------------------------


class Hit(NamedTuple):
    path: str
    line: int
    text: str  # cut to MAX_LINE characters
    cut: bool


@dataclass
class Matches:
    """The matches of one search, whichever engine found them.

    ``wanted`` is asked once per file (hidden, secret, include); ``count`` adds a file's matching
    lines to the totals; ``add`` offers one match for showing. Only the MAX_MATCHES first by
    (path, line) are shown, so ``add`` keeps at most twice that, and ``may_show`` tells an engine
    when a file can no longer hold one of them (its path sorts after the MAX_MATCHES-th kept),
    so it need not decode that file's matches at all.
    """

    include: str | None = None
    explicit: str = ""  # a file named as the search path: searched even if hidden
    total: int = 0
    files: set[str] = field(default_factory=set)
    kept: list[Hit] = field(default_factory=list)
    _bound: str | None = None  # the path of the MAX_MATCHES-th hit at the last trim

    def __post_init__(self) -> None:
        self._included = glob_matcher(self.include) if self.include else None

    def wanted(self, path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        if (name.startswith(".") and path != self.explicit) or is_secret(path):
            return False
        return self._included is None or self._included(path)

    def may_show(self, path: str) -> bool:
        return self._bound is None or printable(path) <= self._bound

    def count(self, path: str, lines: int) -> None:
        if lines:
            self.total += lines
            self.files.add(path)

    def add(self, path: str, line: int, text: str) -> None:
        text = text.removesuffix("\r")
        self.kept.append(Hit(printable(path), line, text[:MAX_LINE], len(text) > MAX_LINE))
        if len(self.kept) >= 2 * MAX_MATCHES:
            self.kept.sort()
            del self.kept[MAX_MATCHES:]
            self._bound = self.kept[-1].path

    def first(self) -> list[Hit]:
        return sorted(self.kept)[:MAX_MATCHES]


def render(matches: Matches, budget: int, prefix: str = "") -> ToolResult:
    """``path:line: text`` per hit, then notes on what was cut. ``prefix``: before each path (an
    extra root's, whose files are named by their absolute paths)."""
    summary = f"{matches.total} matches in {len(matches.files)} files"
    if not matches.total:
        return ToolResult(output="No matches found", summary=summary)
    lines: list[str] = []
    size = 0
    any_cut = False
    shown = matches.first()
    for hit in shown:
        entry = f"{prefix}{hit.path}:{hit.line}: {hit.text}" + ("…" if hit.cut else "")
        if size + len(entry) + 1 > budget - NOTE_ROOM:
            break
        lines.append(entry)
        size += len(entry) + 1
        any_cut = any_cut or hit.cut
    if len(lines) < matches.total:
        why = "the output budget" if len(lines) < len(shown) else f"at most {MAX_MATCHES} are shown"
        lines.append(
            f"[{matches.total} matches in {len(matches.files)} files; showing the first {len(lines)} by path and line "
            f"({why}). Narrow the pattern, path or include to see the rest.]"
        )
    if any_cut:
        lines.append(f"[Lines longer than {MAX_LINE} characters are cut (…); read the file to see them whole.]")
    return ToolResult(output="\n".join(lines), summary=summary)


# --- the Python engine ----------------------------------------------------------------------


def file_text(data: bytes) -> str | None:
    """The text of a file as ripgrep reads it, or None for a binary file (one with a NUL byte)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # ripgrep transcodes UTF-16 with a BOM
        return data.decode("utf-16", "replace")
    if b"\x00" in data:
        return None
    return data.decode("utf-8", "replace").removeprefix("\ufeff")


def python_search(root: Path, start: Path, regex: re.Pattern[str], matches: Matches) -> None:
    """Search every file ``walk_files`` yields; run in a worker thread (checks for cancellation)."""
    for rel in walk_files(root, start, follow_links=False):
        anyio.from_thread.check_cancelled()
        if not matches.wanted(rel):
            continue
        try:
            data = (root / rel).read_bytes()
        except OSError:
            continue
        text = file_text(data)
        if text is None:
            continue
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        found = [(number, line) for number, line in enumerate(lines, start=1) if regex.search(line)]
        matches.count(rel, len(found))
        if matches.may_show(rel):
            for number, line in found[:MAX_MATCHES]:
                matches.add(rel, number, line)


# --- the ripgrep engine ---------------------------------------------------------------------


def ripgrep_args(rg: str, output: list[str], pattern: str, globs: list[str], paths: list[str]) -> list[str]:
    """rg's command line: ``output``'s flags, the project's ignore rules (``ripgrep.FLAGS``), the
    include as a type, the pattern, the paths to search."""
    args = [rg, *output, *FLAGS]
    # A type, unlike --glob, does not override .gitignore (hidden files Matches.wanted drops).
    for glob in globs:
        args += ["--type-add", f"totem:{glob}"]
    if globs:
        args += ["--type", "totem"]
    return [*args, "-e", pattern, "--", *paths]


# Each matching file as ``path NUL lines``; --stats ends the output, so rg that searched always
# writes something (an exit code 2 with output means only that some files could not be read).
COUNT_OUTPUT = ["--count", "--with-filename", "--null", "--stats"]


async def ripgrep_search(rg: str, root: Path, start_rel: str, pattern: str, globs: list[str], matches: Matches) -> None:
    """Search with rg in two runs: the matching lines of every file (``--count``), then the lines
    themselves (``--json``) of only the files that hold the MAX_MATCHES shown.

    rg's JSON for a common word is megabytes (each match with its whole line and submatches),
    and the totals needed all of it read; its counts are one short line a matching file.
    """
    code, output, errors = await read_ripgrep(ripgrep_args(rg, COUNT_OUTPUT, pattern, globs, [start_rel]), root)
    if code == 2 and not output:
        raise ToolError(f"ripgrep failed: {errors}")
    counts: dict[str, int] = {}
    for given, lines in _counted(output):
        rel = given.removeprefix("./")
        if matches.wanted(rel):
            matches.count(rel, lines)
            counts[given] = lines
    shown = _holding_the_first(counts)
    if not shown:
        return
    reader = _LinesReader(matches, {given: min(counts[given], MAX_MATCHES) for given in shown})
    # Named files escape no rule: the first run found each under the project's rules. No file
    # gives more lines than can be shown; one thread, as a few files are all it searches.
    lines_output = ["--json", "--max-count", str(MAX_MATCHES), "--threads", "1"]
    code, errors = await run_ripgrep(ripgrep_args(rg, lines_output, pattern, [], shown), root, reader.feed)
    if code == 2 and not reader.searched:
        raise ToolError(f"ripgrep failed: {errors}")


def _counted(output: bytes) -> list[tuple[str, int]]:
    """(path as rg printed it, matching lines) from ``--count --null`` output.

    A record is ``path NUL digits LF``; a path may hold a newline but never a NUL, so each piece
    after a NUL is ``digits LF next-path`` (after the last count: the stats).
    """
    pieces = output.split(b"\0")
    counted = []
    path = pieces[0]
    for piece in pieces[1:]:
        lines, _, after = piece.partition(b"\n")
        counted.append((path.decode("utf-8", "surrogateescape"), int(lines)))
        path = after
    return counted


def _holding_the_first(counts: dict[str, int]) -> list[str]:
    """The files that hold the MAX_MATCHES first matches by (path, line): those in path order up
    to the one that brings the count to MAX_MATCHES, and any that print the same as it."""
    ordered = sorted(counts, key=lambda given: printable(given.removeprefix("./")))
    held, lines, bound = [], 0, None
    for given in ordered:
        path = printable(given.removeprefix("./"))
        if bound is not None and path != bound:
            break
        held.append(given)
        lines += counts[given]
        if lines >= MAX_MATCHES:
            bound = path
    return held


class _LinesReader:
    """rg's ``--json`` lines of the files ``_holding_the_first`` chose, into ``Matches``.

    A file gives at most the lines the count found in it: it may have changed since (grown, or
    become binary: rg searches a file named on its command line past a NUL byte).
    """

    _MATCH = b'{"type":"match"'
    _BEGIN = b'{"type":"begin"'
    _SUMMARY = b'{"type":"summary"'

    def __init__(self, matches: Matches, wanted: dict[str, int]):
        self.matches = matches
        self.searched = False
        self._wanted = wanted  # path as rg prints it -> lines to take from it
        self._path = ""
        self._left = 0

    def feed(self, raw: bytes) -> None:
        if raw.startswith(self._MATCH):
            if self._left > 0:
                self._left -= 1
                data = json.loads(raw)["data"]
                self.matches.add(self._path, data["line_number"], _json_text(data["lines"]).removesuffix("\n"))
        elif raw.startswith(self._BEGIN):
            given = _json_path(json.loads(raw)["data"]["path"])
            self._path, self._left = given.removeprefix("./"), self._wanted.get(given, 0)
        elif raw.startswith(self._SUMMARY):
            self.searched = True


def _json_text(value: dict[str, str]) -> str:
    """rg's ``{"text": ...}``, or ``{"bytes": base64}`` for what is not UTF-8."""
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", "replace")


def _json_path(value: dict[str, str]) -> str:
    """A path in rg's JSON as the count run's output decodes it (bad bytes kept as surrogates)."""
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", "surrogateescape")


# --- the tool -------------------------------------------------------------------------------


@dataclass
class GrepAction(Action):
    target: Path | None = None
    args: GrepInput | None = None
    regex: re.Pattern[str] | None = None
    globs: list[str] = field(default_factory=list)

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.target is not None and self.args is not None and self.regex is not None
        root = root_of(ctx.root, self.target, ctx.extra_roots)  # an extra root's files: searched from it
        rel = relative(root, self.target)
        stat = await ctx.workspace.stat(self.target)
        if stat is None:
            raise ToolError(f"{rel} does not exist.")
        if not stat.is_dir and is_secret(rel):
            raise ToolError(f"{rel} may hold keys or passwords; grep does not search it (read asks first).")
        matches = Matches(include=self.args.include, explicit="" if stat.is_dir else rel)
        rg = await anyio.to_thread.run_sync(ripgrep_for, root, self.target)
        if rg:
            await ripgrep_search(rg, root, rel, self.args.pattern, self.globs, matches)
        else:
            await anyio.to_thread.run_sync(python_search, root, self.target, self.regex, matches)
        result = render(matches, ctx.output_budget, _prefix(ctx.root, root))
        result.metadata["engine"] = "ripgrep" if rg else "python"
        note = await unsaved_note(ctx.workspace, root, self.target)
        if note:
            result.output += f"\n[{note}]"
        if not rg and (slower := missing_note()):
            result.output += f"\n{slower}"
        return result


def _prefix(project_root: Path, root: Path) -> str:
    """What names a searched root's files as tools name them (workspace/paths.project_path)."""
    return "" if root == project_root.resolve() else f"{root.as_posix()}/"


_TOTAL = re.compile(r"^\[(\d+) matches in (\d+) files", re.MULTILINE)  # ``render``'s count line
_HIT = re.compile(r"^[^\n:]+:\d+: ", re.MULTILINE)


class GrepTool(Tool):
    name = "grep"
    hook_name = "Grep"
    surface = "minimal"
    read_only = True
    Input = GrepInput

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        """"12 matches for 'foo' in src"."""
        pattern = short(args.get("pattern", "?"), 60)
        where = f" in {args['path']}" if args.get("path") else ""
        if is_error:
            return f"grep for '{pattern}'{where}: {short(first_line(output), 120)}"
        if output.startswith("No matches found"):
            count = 0
        else:
            total = _TOTAL.search(output)
            count = int(total.group(1)) if total else len(_HIT.findall(output))
        return f"{count} matches for '{pattern}'{where}"

    def cut_note(self, args: dict[str, Any], kept: str, total_chars: int) -> str:
        return f"[Cut to fit the context window: {len(kept)} of {total_chars} characters shown. Narrow the pattern, path or include.]"

    async def prepare(self, args: GrepInput, ctx: ToolContext) -> Action:
        regex = check_regex(args.pattern)
        globs = check_include(args.include) if args.include else []
        target = await anyio.to_thread.run_sync(resolve_in_project, ctx.root, args.path or ".", ctx.extra_roots)
        rel = project_path(ctx.root, target)
        return GrepAction(
            title=f"Search {args.pattern!r} in {rel}",
            permission="read",
            patterns=[rel],
            always_pattern=folder_glob(rel),
            target=target,
            args=args,
            regex=regex,
            globs=globs,
        )
