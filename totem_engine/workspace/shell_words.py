"""Cutting a shell command into the simple commands it runs, for permission matching.

``cd src && npm test | tee log; echo "a && b"`` runs four commands: ``cd src``, ``npm test``,
``tee log`` and ``echo a && b``. Permission rules match each of them, so a rule that allows
``npm test`` does not also allow whatever is chained after it. The scan honours quotes,
backslashes, comments and here-documents, and also yields the commands inside ``$(...)``,
backquotes and ``<(...)``/``>(...)``: they run too. It is a reading of bash syntax good enough
for matching, not a full parser: control words (``if``, ``then``, ``do``...) are dropped from the
front of a command, other compound syntax (``for x in ...``, ``case``) comes out as odd commands
that match no allow rule, which errs on the side of asking.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

# Operators that end one simple command and start the next; longest first.
_SEPARATORS = ("&&", "||", "|&", ";;", "|", ";", "&", "(", ")")

# A redirection operator, with its optional file descriptor ("2>", "&>>", "<<-", ">&").
_REDIRECT = re.compile(r"(?:\d+|&)?(?:>>|>\||>&|>|<<<|<<-|<<|<>|<&|<)")

# Redirection targets that write no file: the null device, and after ">&" another descriptor ("2>&1").
_NULL_TARGET = re.compile(r"[ \t]*/dev/null(?=[\s;&|()]|$)")
_DESCRIPTOR_TARGET = re.compile(r"[ \t]*(?:\d+|-)(?=[\s;&|()]|$)")

# A here-document's delimiter word: 'EOF', "EOF", \EOF or EOF; quoted means the body is literal.
_HEREDOC_WORD = re.compile(r"""[ \t]*(?:'([^']*)'|"([^"]*)"|(\\?)([^\s;&|()<>'"]+))""")

# Words that introduce a command without being one; dropped from the front of a command.
_LEADING_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"})
# Words that close a compound command; a command made only of them is no command.
_CLOSING_KEYWORDS = frozenset({"fi", "done", "esac", "}"})


@dataclass(frozen=True)
class SimpleCommand:
    """One command of a compound command line: its words, and whether it redirects output into a file."""

    words: tuple[str, ...]
    writes: bool = False

    @property
    def text(self) -> str:
        """The words joined by one space: what permission rules match."""
        return " ".join(self.words)


def parse(command: str) -> list[SimpleCommand]:
    """The simple commands of ``command``: the top-level ones in order, then those nested in substitutions."""
    nested: list[SimpleCommand] = []
    top = _Scanner(command, nested).run()
    return top + nested


def words_of(text: str) -> tuple[str, ...]:
    """Shell words of one simple command, quotes removed, leading control words dropped."""
    try:
        words = shlex.split(text)
    except ValueError:  # an unclosed quote: fall back to plain whitespace
        words = text.split()
    while words and words[0] in _LEADING_KEYWORDS:
        words.pop(0)
    if all(word in _CLOSING_KEYWORDS for word in words):
        return ()
    return tuple(words)


@dataclass
class _Heredoc:
    delimiter: str
    strip_tabs: bool  # "<<-": leading tabs of body lines (and of the delimiter line) are ignored
    literal: bool  # quoted delimiter: no substitution runs inside the body


@dataclass
class _Scanner:
    """One left-to-right pass over a command line.

    ``buf`` collects the raw text of the current simple command; commands found inside
    substitutions go to the shared ``nested`` list, so they are matched like any other.
    """

    text: str
    nested: list[SimpleCommand]
    i: int = 0
    buf: list[str] = field(default_factory=list)
    writes: bool = False
    heredocs: list[_Heredoc] = field(default_factory=list)
    parts: list[SimpleCommand] = field(default_factory=list)

    def run(self) -> list[SimpleCommand]:
        while self.i < len(self.text):
            self._step()
        self._end_command()
        return self.parts

    def _step(self) -> None:
        text, i = self.text, self.i
        char = text[i]
        if char == "\\":
            if text.startswith("\\\n", i):  # a line continuation joins the lines
                self.i += 2
            else:
                self._copy_to(i + 2)
        elif char == "'":
            end = text.find("'", i + 1)
            self._copy_to(len(text) if end < 0 else end + 1)
        elif char == '"':
            self._double_quoted()
        elif char == "`":
            self._backquoted()
        elif text.startswith("$((", i):  # arithmetic, not a command
            self._copy_to(_closing_paren(text, i + 1) + 1)
        elif text.startswith(("$(", "<(", ">("), i):
            self._substitution(i + 2)
        elif char == "#" and self._at_word_start():
            end = text.find("\n", i)
            self.i = len(text) if end < 0 else end
        elif char == "\n":
            self._end_command()
            self.i += 1
            self._skip_heredoc_bodies()
        elif (redirect := self._redirect_at(i)) is not None:
            self._redirection(redirect)
        elif separator := next((s for s in _SEPARATORS if text.startswith(s, i)), None):
            self._end_command()
            self.i += len(separator)
        else:
            self._copy_to(i + 1)

    def _copy_to(self, end: int) -> None:
        self.buf.append(self.text[self.i : end])
        self.i = end

    def _at_word_start(self) -> bool:
        return not self.buf or self.buf[-1][-1:] in ("", " ", "\t")

    def _end_command(self) -> None:
        words = words_of("".join(self.buf))
        if words:
            self.parts.append(SimpleCommand(words, self.writes))
        self.buf, self.writes = [], False

    def _double_quoted(self) -> None:
        """``"..."``: literal but for escapes and the substitutions inside, which do run."""
        self._copy_to(self.i + 1)
        self._expand_until('"')
        self._copy_to(min(self.i + 1, len(self.text)))

    def _expand_until(self, stop: str | None) -> None:
        """Copy up to ``stop`` (None: the end), scanning the substitutions on the way."""
        while self.i < len(self.text) and self.text[self.i] != stop:
            if self.text[self.i] == "\\":
                self._copy_to(self.i + 2)
            elif self.text[self.i] == "`":
                self._backquoted()
            elif self.text.startswith("$((", self.i):
                self._copy_to(_closing_paren(self.text, self.i + 1) + 1)
            elif self.text.startswith("$(", self.i):
                self._substitution(self.i + 2)
            else:
                self._copy_to(self.i + 1)

    def _backquoted(self) -> None:
        end = self.i + 1
        while end < len(self.text) and self.text[end] != "`":
            end += 2 if self.text[end] == "\\" else 1
        self._scan_nested(self.text[self.i + 1 : end])
        self._copy_to(min(end + 1, len(self.text)))

    def _substitution(self, inner_start: int) -> None:
        """``$(...)``, ``<(...)`` or ``>(...)`` starting at ``self.i``; the inner text is scanned too."""
        end = _closing_paren(self.text, inner_start - 1)
        self._scan_nested(self.text[inner_start:end])
        self._copy_to(min(end + 1, len(self.text)))

    def _scan_nested(self, inner: str) -> None:
        self.nested.extend(_Scanner(inner, self.nested).run())

    def _redirect_at(self, i: int) -> str | None:
        """The redirection operator at ``i``, if any; a leading number counts only as a whole word."""
        char = self.text[i]
        if not (char in "<>" or (char == "&" and self.text.startswith("&>", i))
                or (char.isdigit() and self._at_word_start())):
            return None
        match = _REDIRECT.match(self.text, i)
        return match.group(0) if match else None

    def _redirection(self, operator: str) -> None:
        """Note an output redirection into a file, or read a here-document's delimiter."""
        self._copy_to(self.i + len(operator))
        kind = operator.lstrip("0123456789&")
        if kind in ("<<", "<<-"):
            self._heredoc_start(strip_tabs=kind == "<<-")
        elif ">" in kind and not self._harmless_target(operator):
            self.writes = True

    def _harmless_target(self, operator: str) -> bool:
        if _NULL_TARGET.match(self.text, self.i):
            return True
        return operator.endswith("&") and bool(_DESCRIPTOR_TARGET.match(self.text, self.i))

    def _heredoc_start(self, *, strip_tabs: bool) -> None:
        match = _HEREDOC_WORD.match(self.text, self.i)
        if match is None:
            return
        single, double, backslash, bare = match.groups()
        literal = single is not None or double is not None or bool(backslash)
        delimiter = next(g for g in (single, double, bare) if g is not None)
        self.heredocs.append(_Heredoc(delimiter, strip_tabs, literal))
        self._copy_to(match.end())

    def _skip_heredoc_bodies(self) -> None:
        """After a newline: the bodies of pending here-documents are data, not commands.

        An unquoted delimiter lets ``$(...)`` in the body run, so such a body is scanned for
        substitutions (and only for them).
        """
        for doc in self.heredocs:
            body_start = self.i
            while self.i < len(self.text):
                end = self.text.find("\n", self.i)
                end = len(self.text) if end < 0 else end
                line = self.text[self.i : end]
                self.i = min(end + 1, len(self.text))
                if (line.lstrip("\t") if doc.strip_tabs else line) == doc.delimiter:
                    body = self.text[body_start : self.i - len(line) - 1]
                    break
            else:
                body = self.text[body_start:]
            if not doc.literal:
                _Scanner(body, self.nested)._expand_until(None)
        self.heredocs = []


def _closing_paren(text: str, open_index: int) -> int:
    """Index of the ")" that closes the "(" at ``open_index`` (quotes honoured); len(text) if none."""
    depth, i = 0, open_index
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 1
        elif char == "'":
            close = text.find("'", i + 1)
            i = len(text) if close < 0 else close
        elif char == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text)
