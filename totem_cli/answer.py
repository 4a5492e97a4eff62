"""The answer as ``totem run`` writes it on stdout: a small model's file blocks as one line each.

A small model writes a file as a line naming it and a fenced block (prompts/small_tools.txt);
the engine takes the block out of the text and runs it as a ``write`` call, so the text alone
reads "Here's the updated code:" and a bare path line. Here that path line becomes what the
call did: ``(report.py: 26 lines written)``. The line is known to be a file block only when the
step's ``write`` of that path starts (after ``stepEnd``), so text from a line that may name a
file on is held until the step's calls are done or the next step starts; text before it streams
as it comes. With ``hold`` (stdout is not a terminal) a step's text is held from the start, so a
discarded step leaves nothing behind.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

# A line that only names a file, as the small model's file blocks start: "report.py",
# "`src/a.py`:", "**a.py**", "### a.py"; and the start of one while it streams.
_DECOR = " \t#*`:"
_PATH = re.compile(r"[\w.][\w./-]*\.\w+")
_MAY_BECOME_PATH = re.compile(r"[ \t#*`:]*[\w./-]*[ \t#*`:]*")
_WRITTEN = re.compile(r"(wrote|created) (\d+ lines?)(.*)")


def named_path(line: str) -> str | None:
    """The path a line names when it is nothing but a path (decorated or not), else None."""
    stripped = line.strip(_DECOR)
    return stripped.removeprefix("./") if _PATH.fullmatch(stripped) else None


def summary_line(path: str, status: str, summary: str) -> str:
    """``(report.py: 26 lines written)``: what the ``write`` of a file block did, in one line."""
    if status == "ok":
        written = _WRITTEN.fullmatch(summary)
        if written:
            verb, lines, rest = written.groups()
            summary = f"{lines} written{rest}" if verb == "wrote" else f"created, {lines}{rest}"
        return f"({path}: {summary})"
    return f"({path}: not written, {summary})"


class AnswerText:
    """The answer's text on ``out``, fed by the front end from the events in order."""

    def __init__(self, out: TextIO, *, hold: bool):
        self.out = out
        self.hold = hold
        self.open = False  # the last line written has no newline yet
        self.step_done = False  # stepEnd came: only the step's calls may follow before a flush
        self._pending = ""  # text not written yet
        self._holding = hold  # everything from here on waits for the step's calls
        self._line_started = False  # part of the current line is written: it names no file
        self._writes: dict[str, str] = {}  # call id -> path, for the step's write calls

    def text(self, delta: str) -> None:
        self._pending += delta
        self._release()

    def step_end(self) -> None:
        """The step's text is whole: what is held now waits only for its calls."""
        self.step_done = True
        if self.hold:
            self._holding = False
        self._release(whole=True)
        if self.hold and not self._pending and self.open:
            self._emit("\n")  # a held step is written as whole lines

    def tool_start(self, call_id: str, tool: str, arguments: dict[str, Any]) -> None:
        path = arguments.get("path")
        if self.step_done and tool == "write" and isinstance(path, str):
            self._writes[call_id] = path.removeprefix("./")

    def tool_end(self, call_id: str, status: str, summary: str) -> None:
        """A write of the step done: its path line, if the held text has one, becomes its summary;
        the text up to there is written."""
        path = self._writes.pop(call_id, None)
        if path is None:
            return
        lines = self._pending.split("\n")
        for i, line in enumerate(lines):
            if named_path(line) == path:
                lines[i] = summary_line(path, status, summary)
                if lines[i + 1 : i + 3] == ["", ""]:
                    del lines[i + 1]  # the line end the block's closing fence left behind
                self._emit("\n".join(lines[: i + 1]) + ("\n" if i + 1 < len(lines) else ""))
                self._pending = "\n".join(lines[i + 1 :])
                self._line_started = False
                self._holding = False
                self._release(whole=True)
                return

    def discard(self) -> None:
        """The step is retried: what it held is dropped."""
        self._reset()

    def flush(self) -> None:
        """The step and its calls are over: everything held is written as it is."""
        if self._pending:
            self._emit(self._pending)
            if self.hold and not self._pending.endswith("\n"):
                self._emit("\n")
        self._reset()

    def _reset(self) -> None:
        self._pending = ""
        self._holding = self.hold
        self._line_started = False
        self.step_done = False
        self._writes.clear()

    def _release(self, *, whole: bool = False) -> None:
        """Write the pending text up to the first line that may name a file block. ``whole``: the
        step's text is complete, so a last line without a newline is a whole line too."""
        while self._pending and not self._holding:
            line, newline, rest = self._pending.partition("\n")
            if not self._line_started and (newline or whole) and named_path(line):
                self._holding = True
            elif not newline and not whole and not self._line_started and _MAY_BECOME_PATH.fullmatch(line):
                return  # may still become a path line
            else:
                self._emit(line + newline)
                self._line_started = not newline
                self._pending = rest

    def _emit(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self.open = not text.endswith("\n")
