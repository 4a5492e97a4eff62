"""The whole-file format of a small model: a path line and a fenced block, read and written.

With ``file_blocks`` (the small-model mode, prompts/small_tools.txt) a fenced block that names a
relative path is the whole new content of that file, a ``write`` call, as aider's "whole" edit
format asks of weak models (https://aider.chat/docs/more/edit-formats.html)::

      calc.py
      ```python
      def add(a, b):
          return a + b
      ```

The path may also be in a sentence ending with a colon that quotes only it ("Here is the
updated `calc.py`:"), alone in a fence of its own just before, in the info string
(```` ```python calc.py ````) or in a comment alone on the block's first line (``# calc.py``,
which is not written). A fence that names no path stays text, unless ``default_path`` is given
and its info string is empty or that file's language. A block that holds a diff (``@@`` hunks)
is a ``patch`` of its file instead.

With ``scripts`` (code mode, prompts/code_mode.txt) a Python fence that names no file is a
``run_script`` call of its content: the model that cannot call tools writes one script per answer
against ``import totem`` (seed 003, "Code mode").

Written back, the history is replayed as the model wrote it (``as_written``): its calls as its
own text, their results as user messages. Replayed as native ``tool_calls``, its earlier answers
reach it through the server's chat template as JSON (Qwen's ``<tool_call>{"name": "write",
"arguments": {"content": "..."}}``), and it copies that JSON, escaped newlines and all, into the
files it writes next. Replayed as the text it wrote, every example it sees of its own answers is
the form it was taught. Results become user messages, since ``tool`` messages without the
matching ``tool_calls`` are refused by strict servers. The test runs Totem made itself
(verify.py) are shown as what they are, not as the model's calls: shown as its own, the model
took to running the tests again instead of fixing the code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable

from totem_engine.verify import TEST_RUN
from totem_engine.vocab.messages import Image, Message
from totem_engine.vocab.tools import ToolCall, arguments_object

from .buffer import ScanBuffer
from .formats import FENCE, parse_fence_json

# A line naming a file before a fenced block: "calc.py", "`src/a.py`:", "**a.py**", "### a.py".
_PATH_LINE = re.compile(r"[\w.][\w./-]*\.[\w]+")
_PATH_DECOR = " \t#*`:"
_QUOTED_PATH = re.compile(r"`([\w.][\w./-]*\.\w+)`")
_COMMENTS = ("//", "#", "--", "/*")
_MAX_PATH_WAIT = 200  # characters of a fence's first lines held while a path may still be in them
_FILE_BLOCK_CALLS = frozenset({"write"})  # what a file block is read back as
_SCRIPT_CALL = "run_script"  # what a script block is read as
_SCRIPT_INFO = frozenset({"", "python", "py", "python3"})
_IMPORTS_TOTEM = re.compile(r"^\s*(?:import totem\b|from totem import)", re.MULTILINE)
_EMPTY_FENCE = re.compile(r"^```[^\n`]*\n```[ \t]*$", re.MULTILINE)  # left when its path line goes

# -- reading -------------------------------------------------------------------------------------


def _path_line(line: str) -> str | None:
    """The relative path a line names on its own, without its Markdown decoration, or None.
    A sentence that introduces the block and quotes one path ("Here is the updated `a.py`
    file:") names it too: small models write that more often than a bare path."""
    quoted = _QUOTED_PATH.findall(line)
    if line.rstrip().endswith(":") and len(set(quoted)) == 1:
        line = quoted[0]
    candidate = line.strip()
    for label in ("File:", "file:", "Filename:", "filename:"):
        candidate = candidate.removeprefix(label)
    candidate = candidate.strip(_PATH_DECOR)
    return candidate if _PATH_LINE.fullmatch(candidate) and ".." not in candidate.split("/") else None


def _info_path(info: str) -> str | None:
    """A path in a fence's info string ("```python calc.py", "```calc.py")."""
    return next((path for word in info.split() if (path := _path_line(word))), None)


# A block that names no file is taken for the one file of the request when its info string is
# empty or that file's language (a shell command or program output is not the file).
_LANGUAGES = {
    "py": {"python", "py", "python3"},
    "js": {"javascript", "js", "node"},
    "ts": {"typescript", "ts"},
    "md": {"markdown", "md"},
}
_DIFF_MARKS = frozenset({"", " ", "+", "-", "@", "\\"})


def _fits(info: str, path: str) -> bool:
    words = info.strip().lower().split()
    extension = path.rsplit(".", 1)[-1].lower()
    return not words or words[0] in _LANGUAGES.get(extension, {extension}) or words[0] == "diff"


def _comment_path(line: str) -> str | None:
    """A path that a comment alone on the first line of a block names ("# calc.py")."""
    text = line.strip()
    for marker in _COMMENTS:
        if text.startswith(marker):
            return _path_line(text[len(marker):].removesuffix("*/"))
    return None

def _introduced_path(tail: str) -> str | None:
    """The path named just before a fence, from ``tail`` (the end of the text given out): on its
    last line (over one blank line), or alone in a fence of its own right before ("```\ncalc.py\n```")."""
    if not tail.endswith("\n"):
        return None
    lines = tail[:-1].split("\n")[-4:]
    if len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    if len(lines) >= 3 and lines[-1].strip() == FENCE and lines[-3].strip().startswith(FENCE):
        return _path_line(lines[-2])
    return _path_line(lines[-1])


def _file_call(body: str, path: str) -> tuple[str, dict]:
    """A block's content as a ``write`` of the whole file, or a ``patch`` when it is a diff
    (``@@`` hunks; the ``---``/``+++`` header is added when the model left it out)."""
    lines = body.splitlines()
    if any(line.startswith("@@") for line in lines) and all(line[:1] in _DIFF_MARKS for line in lines):
        if not body.startswith("--- "):
            body = f"--- a/{path}\n+++ b/{path}\n{body}"
        return "patch", {"patch": body + "\n"}
    return "write", {"path": path, "content": body + "\n" if body else ""}


class FileBlock:
    """The scanner's reader of file blocks: a fence that names a file, read into a ``write`` of
    its whole content (a ``patch`` for a diff; a call in a ``json`` fence stays that call), and,
    with ``scripts``, of script blocks: a Python fence naming no file, read into a ``run_script``.

    ``default_path``: the file a block naming none is taken for; ``path_for``: the file a block
    naming a path is written to (see ``text_tool_calls``). ``path`` and ``start`` are the open
    block's file and where its content starts; ``unnamed``: its path is ``default_path``;
    ``script``: it is a script block; ``content``: where the fence's content starts, a first
    line naming a file included (``# calc.py`` atop a script that imports totem is a comment).
    ``writes``: file blocks are read (else only scripts are)."""

    def __init__(
        self, default_path: str | None, path_for: Callable[[str], str] | None, *, writes: bool = True, scripts: bool = False
    ):
        self.default_path = default_path if writes else None
        self.path_for = path_for
        self.writes = writes
        self.scripts = scripts
        self.path = ""
        self.start = self.content = 0
        self.unnamed = False
        self.script = False

    def opens(self, text: ScanBuffer, final: bool) -> bool | None:
        """Whether the fence at the start of ``text.buf`` opens a file block (``path`` and
        ``start`` are then set): a path before it, in its info string or in a comment on its
        first line. None: it does not; False: cannot tell yet."""
        newline = text.buf.find("\n", len(FENCE))
        if newline < 0:
            return None if final or len(text.buf) > _MAX_PATH_WAIT else False
        info = text.buf[len(FENCE):newline]
        path, start, unnamed = _introduced_path(text.tail) or _info_path(info), newline + 1, False
        if path is None:
            end = text.buf.find("\n", start)
            first = text.buf[start: end if end >= 0 else len(text.buf)]
            if end < 0 and not final and _could_be_comment(first):
                return False
            path = _comment_path(first) if end >= 0 else None
            if path is not None:
                start = end + 1
            elif self.default_path and _fits(info, self.default_path):
                path, unnamed = self.default_path, True
            elif self.scripts and info.strip().lower() in _SCRIPT_INFO:
                self.path, self.start, self.content, self.unnamed, self.script = "", start, start, False, True
                return True
            else:
                return None
        if not self.writes and not (self.scripts and info.strip().lower() in _SCRIPT_INFO):
            return None
        if self.path_for is not None and not unnamed:
            path = self.path_for(path)
        self.path, self.start, self.content, self.unnamed, self.script = path, start, newline + 1, unnamed, False
        return True

    def read(self, text: ScanBuffer, final: bool) -> bool:
        close = text.buf.find("\n" + FENCE, max(text.resume, self.start - 1))
        if close < 0 and not final:
            return text.wait(self, "\n" + FENCE, not_before=self.start - 1)
        size = len(text.buf) if close < 0 else close + 1 + len(FENCE)
        body = text.buf[self.start: close if close >= 0 else len(text.buf)]
        unnamed, self.unnamed = self.unnamed, False
        script, self.script = self.script, False
        whole = text.buf[self.content: close if close >= 0 else len(text.buf)]
        if self.scripts and not script and _IMPORTS_TOTEM.search(whole):
            script, body = True, whole
        if script:
            return text.take_call((_SCRIPT_CALL, {"script": body + "\n" if body else ""}), size)
        if not self.writes:
            return text.take_text(size)  # a named Python file, where only scripts are read
        if unnamed and _path_line(body):
            return text.take_text(size)  # "```\ncalc.py\n```": the label of the next block
        return text.take_call(parse_fence_json(body, text.known, text.schemas) or _file_call(body, self.path), size)


def _could_be_comment(first: str) -> bool:
    """Whether the unfinished first line of a block may still become a comment naming a path."""
    lead = first.lstrip()
    could_be = lead.startswith(_COMMENTS) or any(marker.startswith(lead) for marker in _COMMENTS)
    return could_be and len(first) <= _MAX_PATH_WAIT


# -- writing -------------------------------------------------------------------------------------


def file_block(path: str, content: str) -> str:
    """``path`` alone on a line, then ``content`` in a fence longer than any it holds."""
    fence = "````" if "```" in content else "```"
    return f"{path}\n{fence}\n{content.rstrip()}\n{fence}"


def as_written(messages: Iterable[Message]) -> list[Message]:
    """``messages`` with each assistant step's calls rendered into its text and each call's
    result as a user message (``The write call returned: …``); neighbouring user messages are
    joined, as chat templates expect roles to alternate."""
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls and all(map(_test_run, message.tool_calls)):
            continue  # Totem ran them, not the model: their results say so
        if message.role == "tool" and message.tool_call_id and message.tool_call_id.startswith(TEST_RUN):
            _add_user(out, f"The project's tests were run:\n{message.text}")
        elif message.role == "assistant" and message.tool_calls:
            said = _without_path_lines(message.text, _block_paths(message.tool_calls))
            text = "\n\n".join(t for t in [said, *map(_written, message.tool_calls)] if t)
            out.append(Message(role="assistant", text=text, reasoning=message.reasoning, replay=message.replay))
        elif message.role == "tool" and message.name == _SCRIPT_CALL:
            _add_user(out, f"The script printed:\n{message.text}")
        elif message.role == "tool":
            _add_user(out, f"The {message.name} call returned:\n{message.text}", message.images)
        elif message.role == "user":
            _add_user(out, message.text, message.images)
        else:
            out.append(message)
    return out


def _test_run(call: ToolCall) -> bool:
    return call.id.startswith(TEST_RUN)


def _arguments(call: ToolCall) -> object:
    arguments = arguments_object(call.arguments)
    return call.arguments if arguments is None else arguments  # as sent: the model sees what it got wrong


def _file(call: ToolCall) -> tuple[str, str] | None:
    """(path, content) of a call written as a file block."""
    arguments = _arguments(call)
    if call.name in _FILE_BLOCK_CALLS and isinstance(arguments, dict):
        path, content = arguments.get("path"), arguments.get("content")
        if isinstance(path, str) and isinstance(content, str):
            return path, content
    return None


def _written(call: ToolCall) -> str:
    if (file := _file(call)) is not None:
        return file_block(*file)
    if (script := _script(call)) is not None:
        fence = "````" if "```" in script else "```"
        return f"{fence}python\n{script.rstrip()}\n{fence}"
    return "```json\n" + json.dumps({"name": call.name, "arguments": _arguments(call)}, ensure_ascii=False) + "\n```"


def _script(call: ToolCall) -> str | None:
    """The script of a ``run_script`` call, written back as the block it was read from."""
    arguments = _arguments(call)
    if call.name == _SCRIPT_CALL and isinstance(arguments, dict) and isinstance(arguments.get("script"), str):
        return arguments["script"]
    return None


def _block_paths(calls: Iterable[ToolCall]) -> set[str]:
    return {file[0] for file in map(_file, calls) if file is not None}


def _without_path_lines(text: str, paths: set[str]) -> str:
    """The step's text without the lines that introduced its file blocks (the stored text keeps
    them for the user: ``calc.py``, ``**`calc.py`**:``, a fence holding only the path), which the
    blocks replayed after it repeat."""
    kept = [line for line in text.splitlines() if line.strip(" \t`*:#") not in paths]
    return _EMPTY_FENCE.sub("", "\n".join(kept)).strip()


def _add_user(out: list[Message], text: str, images: tuple[Image, ...] = ()) -> None:
    if out and out[-1].role == "user":
        out[-1] = Message(role="user", text=f"{out[-1].text}\n\n{text}", images=out[-1].images + images)
    else:
        out.append(Message(role="user", text=text, images=images))
