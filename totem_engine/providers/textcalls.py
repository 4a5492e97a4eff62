"""Stream filters for models that put into their text what belongs elsewhere.

Both are async generators over ``StreamChunk`` that a provider's stream is wrapped in; chunks
that are not text pass through in order.

``think_filter``: models that think (qwen3 on Ollama, even with thinking switched off, the R1
distills, QwQ) write their thoughts into the text and end them with ``</think>``. The start of
the text waits for that tag: what came before it becomes ``ReasoningChunk``, what follows is
``TextChunk``. When the text opens with ``<think>`` the thoughts are known to be thoughts and
stream as reasoning at once. Without the tag the held text is released as ``TextChunk`` when the
step ends (``FinishChunk`` or the end of the stream) or once ``MAX_HOLD`` characters are held.
A provider that separates reasoning itself (a ``ReasoningChunk`` arrives) switches the filter off.

``text_tool_calls``: models without reliable native tools write their calls as text. Four forms
are understood, split across chunks anywhere:

- Hermes: ``<tool_call>{"name": "read", "arguments": {"path": "a.py"}}</tool_call>``
- Qwen XML: ``<function=read><parameter=path>a.py</parameter></function>``, bare or inside
  ``<tool_call>``
- a Markdown fence whose whole content is one JSON object with exactly ``name`` (a known tool)
  and ``arguments`` (an object), as Qwen2.5-Coder writes it::

      ```json
      {"name": "read", "arguments": {"path": "a.py"}}
      ```

- the same JSON object alone at the start of a line, without a fence (Qwen2.5-Coder's later
  calls in a conversation).

A fenced call of a tool that does not exist is a ``bash`` call when it is the shell under another
agent's name (``"name": "shell"``) or a program with its command line (``"name": "python",
"arguments": ["python -m pytest"]``); see ``SHELL_TOOLS`` and ``PROGRAMS``.

With ``file_blocks`` (the small-model mode, prompts/small_tools.txt) a fifth: a fenced block
that names a relative path is the whole new content of that file, a ``write`` call, as aider's
"whole" edit format asks of weak models::

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

Calls are removed from the visible text and become ``ToolCallChunk`` (ids ``call_text_<n>``).
Any other code, fenced or not, stays text and is never executed. Only as much text is held back
as could still be the start of a call, so ordinary text keeps streaming.

The calls found in the text are given out at the end of the step (before its ``FinishChunk``),
and only when the provider sent no native call in that step; otherwise the markup is given back
as text at the end (a model that called natively meant its text as text). ``TextCallStats``
tells the caller what was seen, for the capability record's evidence rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from totem_engine.prompt_files import prompt

from .base import (
    FinishChunk,
    ReasoningChunk,
    StreamChunk,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolSpec,
)

MAX_HOLD = 40_000  # characters of text held while waiting for </think>

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


@asynccontextmanager
async def _closing(stream: AsyncIterator[StreamChunk]):
    """The wrapped stream is closed with its wrapper (an abort must end the HTTP request now,
    not whenever the garbage collector finds the provider's generator)."""
    try:
        yield stream
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()


def _partial_suffix(text: str, tag: str) -> int:
    """The length of the longest end of ``text`` that is a proper start of ``tag``."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


# ---------------------------------------------------------------------------------------------
# Thoughts in the text
# ---------------------------------------------------------------------------------------------


def split_think(text: str) -> tuple[str, str]:
    """A whole answer's ``(thoughts, answer)``, split as ``think_filter`` splits a stream: the
    thoughts are what comes before ``</think>`` (an unclosed ``<think>`` at the start: all of it),
    the answer what follows; ``("", text)`` when there are none. No ``MAX_HOLD``: the text is whole."""
    lead = text.lstrip()
    opened = lead.startswith(THINK_OPEN)
    body = lead[len(THINK_OPEN):].lstrip() if opened else text
    end = body.find(THINK_CLOSE)
    if end < 0:
        return (body, "") if opened else ("", text)
    thoughts, rest = _at_close(body, end, opened=opened)
    return thoughts, rest.lstrip()


def _at_close(text: str, end: int, *, opened: bool) -> tuple[str, str]:
    """The thoughts before the ``</think>`` at ``end`` and the text after it. Thoughts that did
    not open with ``<think>`` may still hold one (after a preamble): it is taken out."""
    thoughts, rest = text[:end], text[end + len(THINK_CLOSE):]
    if not opened:
        thoughts = thoughts.replace(THINK_OPEN, "").strip()
    return thoughts, rest


async def think_filter(stream: AsyncIterator[StreamChunk], *, max_hold: int = MAX_HOLD) -> AsyncIterator[StreamChunk]:
    """``stream`` with the thoughts before ``</think>`` turned into reasoning (module docstring)."""
    mode = "start"  # start -> open (after <think>, streaming reasoning) | held (no <think>) -> text
    buf = ""  # text not given out yet
    strip_answer = False  # drop the whitespace between </think> and the answer

    def answer(text: str) -> list[StreamChunk]:
        nonlocal strip_answer
        if strip_answer:
            text = text.lstrip()
            if text:
                strip_answer = False
        return [TextChunk(text)] if text else []

    def after_close(rest: str) -> list[StreamChunk]:
        nonlocal mode, strip_answer
        mode, strip_answer = "text", True
        return answer(rest)

    def release() -> list[StreamChunk]:
        """The step ended (or too much is held): whatever is held is what it looks like."""
        nonlocal buf, mode
        held, buf = buf, ""
        if mode == "open":
            mode = "text"
            return [ReasoningChunk(held)] if held else []  # an unclosed <think>: still thoughts
        mode = "text"
        return answer(held)

    def feed(text: str) -> list[StreamChunk]:
        nonlocal buf, mode
        if mode == "text":
            return answer(text)
        seen = max(len(buf) - len(THINK_CLOSE), 0)  # no tag ends before this
        buf += text
        out: list[StreamChunk] = []
        if mode == "start":
            lead = buf.lstrip()
            if not lead or (THINK_OPEN.startswith(lead) and lead != THINK_OPEN):
                return out  # could still be "<think>"
            if lead.startswith(THINK_OPEN):
                mode, buf = "open", lead[len(THINK_OPEN):].lstrip()
            else:
                mode = "held"
            seen = 0
        end = buf.find(THINK_CLOSE, seen)
        if end >= 0:
            thoughts, rest = _at_close(buf, end, opened=mode == "open")
            buf = ""
            if thoughts:
                out.append(ReasoningChunk(thoughts))
            return out + after_close(rest)
        if mode == "open":
            keep = _partial_suffix(buf, THINK_CLOSE)
            ready, buf = buf[: len(buf) - keep], buf[len(buf) - keep:]
            if ready:
                out.append(ReasoningChunk(ready))
        elif len(buf) >= max_hold:
            out += release()
        return out

    async with _closing(stream) as source:
        async for chunk in source:
            if isinstance(chunk, TextChunk):
                for piece in feed(chunk.text):
                    yield piece
            elif isinstance(chunk, ReasoningChunk) and mode in ("start", "held"):
                # The provider separates reasoning itself: the text is just text.
                for piece in release():
                    yield piece
                yield chunk
            elif isinstance(chunk, FinishChunk):
                for piece in release():
                    yield piece
                yield chunk
            else:
                yield chunk
    for piece in release():
        yield piece


# ---------------------------------------------------------------------------------------------
# Tool calls in the text
# ---------------------------------------------------------------------------------------------

TAG_OPEN, TAG_CLOSE = "<tool_call>", "</tool_call>"
FUNC_OPEN, FUNC_CLOSE = "<function=", "</function>"
FENCE = "```"
# Info strings of a fence that may hold a call; any other (```python) is code and stays text.
FENCE_INFO = frozenset({"", "json", "tool_call", "tool"})
_MAX_INFO = 20
_MAX_NAME = 128
# Other agents' names for their shell tool (Codex's shell, Cline's execute_command, OpenHands'
# execute_bash, Continue's run_terminal_command, Gemini CLI's run_shell_command): a small model
# calls the shell by the name it learnt. And the programs it calls as tools ("name": "python",
# "arguments": ["python -m pytest"]): a command line that starts with the program's name.
SHELL_TOOLS = frozenset({"shell", "terminal", "execute_command", "execute_bash", "run_command", "run_terminal_command", "run_shell_command"})
PROGRAMS = frozenset({"python", "python3", "pytest", "pip", "git", "ls", "cat", "sed"})

# A bare call: "{" and the key "name" at the start of a line; and what could still become one.
_BARE_START = re.compile(r'\{\s*"name"\s*:')
_BARE_PARTIAL = re.compile(r'\{\s*(?:"(?:n(?:a(?:m(?:e(?:"\s*)?)?)?)?)?)?')
# A line naming a file before a fenced block: "calc.py", "`src/a.py`:", "**a.py**", "### a.py".
_PATH_LINE = re.compile(r"[\w.][\w./-]*\.[\w]+")
_PATH_DECOR = " \t#*`:"
_QUOTED_PATH = re.compile(r"`([\w.][\w./-]*\.\w+)`")
_MAX_TAIL = 300
_MAX_PATH_WAIT = 200  # characters of a fence's first lines held while a path may still be in them
_COMMENTS = ("//", "#", "--", "/*")

_FUNCTION = re.compile(r"<function=([^>\s]+)\s*>(.*?)</function>", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)\s*>(.*?)</parameter>", re.S)


@dataclass
class TextCallStats:
    """What ``text_tool_calls`` saw in one stream.

    ``parsed``: calls found in the text; ``emitted``: those given out as ToolCallChunk (0 when a
    native call arrived); ``malformed``: markup that was meant as a call but did not parse;
    ``native``: native ToolCallChunks that passed through.
    """

    parsed: int = 0
    emitted: int = 0
    malformed: int = 0
    native: int = 0


def _parameter_value(raw: str, kind: str | None) -> Any:
    """A Qwen XML parameter's text as a JSON value. One newline around the value is the
    template's, not the value's. Without a schema, text that is a JSON array or object is
    taken as such; everything else stays a string (the tool's validation converts numbers)."""
    if raw.startswith("\n"):
        raw = raw[1:]
    if raw.endswith("\n"):
        raw = raw[:-1]
    if kind == "string":
        return raw
    stripped = raw.strip()
    if kind is None and not stripped.startswith(("[", "{")):
        return raw
    try:
        return json.loads(stripped)
    except ValueError:
        return raw


def _parse_function(markup: str, schemas: Mapping[str, Any]) -> tuple[str, dict] | None:
    match = _FUNCTION.fullmatch(markup.strip())
    if not match:
        return None
    name, body = match.group(1), match.group(2)
    properties = (schemas.get(name) or {}).get("properties") or {}
    arguments: dict[str, Any] = {}
    for param in _PARAMETER.finditer(body):
        key = param.group(1)
        kind = (properties.get(key) or {}).get("type") if properties else None
        arguments[key] = _parameter_value(param.group(2), kind if isinstance(kind, str) else None)
    if _PARAMETER.sub("", body).strip():
        return None  # text that is not a parameter: not the format we know
    return name, arguments


def _parse_hermes(content: str) -> tuple[str, dict] | None:
    try:
        value = json.loads(content)
    except ValueError:
        return None
    return _call_from_value(value)


def _call_from_value(value: Any) -> tuple[str, dict] | None:
    """``{"name": ..., "arguments" (or "parameters"): {...} or JSON text}`` as (name, arguments)."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):  # some models send the arguments as JSON text
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return value["name"], arguments


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


def _fence_head(rest: str, known: frozenset[str]) -> str:
    """Whether a fence's content so far can still be a call: "ok", "more" (cannot tell yet) or
    "reject". Reads ``{``, the first key (``name`` or ``arguments``) and, for ``name``, its value."""
    i, n = 0, len(rest)

    def skip(i: int) -> int:
        while i < n and rest[i].isspace():
            i += 1
        return i

    i = skip(i)
    if i == n:
        return "more"
    if rest[i] != "{":
        return "reject"
    i = skip(i + 1)
    if i == n:
        return "more"
    if rest[i] != '"':
        return "reject"
    close = rest.find('"', i + 1)
    if close < 0:
        partial = rest[i + 1:]
        return "more" if "name".startswith(partial) or "arguments".startswith(partial) else "reject"
    key = rest[i + 1:close]
    if key == "arguments":
        return "ok"  # the name is checked when the fence is whole
    if key != "name":
        return "reject"
    i = skip(close + 1)
    if i == n:
        return "more"
    if rest[i] != ":":
        return "reject"
    i = skip(i + 1)
    if i == n:
        return "more"
    if rest[i] != '"':
        return "reject"
    close = rest.find('"', i + 1)
    if close < 0:
        partial = rest[i + 1:]
        if len(partial) > _MAX_NAME or any(ch.isspace() or ch == "\\" for ch in partial):
            return "reject"
        return "more" if any(name.startswith(partial) for name in _callable(known)) else "reject"
    return "ok" if rest[i + 1:close] in _callable(known) else "reject"


def _callable(known: frozenset[str]) -> frozenset[str]:
    """The names a fenced call may use: the tools', and the shell's other names when ``bash`` is one."""
    return known | SHELL_TOOLS | PROGRAMS if "bash" in known else known


def _parse_fence_json(content: str, known: frozenset[str], schemas: Mapping[str, Any]) -> tuple[str, dict] | None:
    try:
        value = json.loads(content)
    except ValueError:
        return None
    if not isinstance(value, dict) or set(value) != {"name", "arguments"} or not isinstance(value["name"], str):
        return None
    name, arguments = value["name"], value["arguments"]
    if name not in known:
        command = _shell_command(name, arguments) if "bash" in known else None
        return ("bash", {"command": command}) if command else None
    if isinstance(arguments, list):
        arguments = _positional(arguments, schemas.get(name))
    return (name, arguments) if isinstance(arguments, dict) else None


def _shell_command(name: str, arguments: Any) -> str | None:
    """The command line of a call of the shell by another name (``SHELL_TOOLS``), or of a program
    called as a tool (``PROGRAMS``) with a command line that starts with that program; None when
    it is neither. The command line may come as a string, a list of lines, or ``command``/``cmd``."""
    if isinstance(arguments, dict) and len(arguments) == 1:
        arguments = arguments.get("command", arguments.get("cmd"))
    if isinstance(arguments, list) and all(isinstance(line, str) for line in arguments):
        arguments = "\n".join(arguments)
    if not isinstance(arguments, str) or not arguments.strip():
        return None
    if name in SHELL_TOOLS or (name in PROGRAMS and arguments.split()[0] == name):
        return arguments
    return None


def _positional(values: list, schema: Any) -> dict | None:
    """Arguments sent as a list of strings (``"arguments": ["sed -i …", "sed -i …"]``, a small
    model's habit) for a tool with one required string argument: that argument, the strings one
    per line (for ``bash``, commands run one after the other). None for anything else."""
    if not isinstance(schema, Mapping) or not values or not all(isinstance(v, str) for v in values):
        return None
    required = schema.get("required") or []
    properties = schema.get("properties") or {}
    if len(required) != 1 or (properties.get(required[0]) or {}).get("type") != "string":
        return None
    return {required[0]: "\n".join(values)}


def _broken_call(content: str) -> bool:
    """Whether a fence that starts as a call (``{"name": "<a tool>"``, ``_fence_head``) but did
    not parse was a call gone wrong: JSON that does not decode, or arguments that are not an
    object (``"arguments": ["ls"]``). Other shapes are taken for examples, not calls."""
    try:
        value = json.loads(content)
    except ValueError:
        return True
    return isinstance(value, dict) and "arguments" in value and not isinstance(value["arguments"], dict)


# What is left as text of a call gone wrong: a fence holding {"name": ..., "arguments": ...}
# that was not read as a call (a tool that does not exist, arguments that do not parse).
_CALL_SHAPED = re.compile(r'^```(?:json)?[ \t]*\n\s*\{\s*"name"\s*:\s*"[^"\n]*"\s*,\s*"arguments"\s*:', re.MULTILINE)


def looks_like_a_call(text: str) -> bool:
    """Whether ``text`` (what a step gave out as text) holds a fenced call that was not read as one."""
    return _CALL_SHAPED.search(text) is not None


class _Scanner:
    """The text of one stream, cut into visible text and calls (see ``text_tool_calls``).

    ``buf`` is the text not given out yet. While a markup is open (``pending``) the buffer starts
    with it and only the text after ``resume`` is searched for its end, so a long call (a file
    written through ``write``) costs one pass, not one per chunk.
    """

    def __init__(
        self,
        known: frozenset[str],
        schemas: Mapping[str, Any],
        stats: TextCallStats,
        *,
        file_blocks: bool,
        default_path: str | None,
        path_for: Callable[[str], str] | None,
    ):
        self.known = known
        self.schemas = schemas
        self.stats = stats
        self.file_blocks = file_blocks and "write" in known
        self.buf = ""
        self.tail = ""  # the end of the text given out, for the line before a fence
        self.default_path = default_path if "write" in known else None
        self.path_for = path_for
        self.file_path = ""  # the file block open at the start of buf: its path
        self.file_start = 0  # and where its content starts
        self.file_unnamed = False  # and whether the path is default_path, the block naming none
        self.line_start = True  # the text given out so far ends a line (or is empty)
        self.in_code = False  # inside an ordinary code fence: only its closing ``` is looked for
        self.pending: str | None = None  # the kind of markup open at the start of buf
        self.resume = 0
        self.calls: list[tuple[ToolCall, str]] = []  # (call, the markup it was written as)

    # -- giving out ----------------------------------------------------------------------------

    def _text(self, out: list[StreamChunk], text: str) -> None:
        if text:
            out.append(TextChunk(text))
            self.line_start = text.endswith("\n")
            self.tail = (self.tail + text)[-_MAX_TAIL:]

    def _introduced_path(self) -> str | None:
        """The path named just before a fence: on the last line given out (over one blank line),
        or alone in a fence of its own right before ("```\ncalc.py\n```")."""
        if not self.tail.endswith("\n"):
            return None
        lines = self.tail[:-1].split("\n")[-4:]
        if len(lines) > 1 and not lines[-1].strip():
            lines.pop()
        if len(lines) >= 3 and lines[-1].strip() == FENCE and lines[-3].strip().startswith(FENCE):
            return _path_line(lines[-2])
        return _path_line(lines[-1])

    def _take_text(self, out: list[StreamChunk], size: int) -> bool:
        self._text(out, self.buf[:size])
        self.buf = self.buf[size:]
        self.pending, self.resume = None, 0
        return True

    def _take_call(self, parsed: tuple[str, dict], size: int) -> bool:
        name, arguments = parsed
        call = ToolCall(
            id=f"call_text_{self.stats.parsed}",
            name=name,
            arguments=json.dumps(arguments, ensure_ascii=False),
        )
        self.stats.parsed += 1
        self.calls.append((call, self.buf[:size]))
        self.buf = self.buf[size:]
        self.pending, self.resume = None, 0
        self.line_start = False
        self.tail = ""
        return True

    def _wait(self, kind: str, close: str) -> bool:
        self.pending = kind
        self.resume = max(len(self.buf) - len(close), 0)
        return False

    def _code(self, out: list[StreamChunk], opener: int) -> bool:
        """A fence that is not a call: its opening line is text and what follows is code."""
        self.in_code = True
        return self._take_text(out, opener)

    # -- scanning ------------------------------------------------------------------------------

    def _at_line_start(self, at: int) -> bool:
        return (at == 0 and self.line_start) or (at > 0 and self.buf[at - 1] == "\n")

    def _next_start(self) -> tuple[int, str | None]:
        found: list[tuple[int, str]] = []
        if not self.in_code:
            for marker, kind in ((TAG_OPEN, "tag"), (FUNC_OPEN, "func")):
                at = self.buf.find(marker)
                if at >= 0:
                    found.append((at, kind))
            for match in _BARE_START.finditer(self.buf):
                if self._at_line_start(match.start()):
                    found.append((match.start(), "bare"))
                    break
        at = self.buf.find(FENCE)
        while at >= 0 and not self._at_line_start(at):
            at = self.buf.find(FENCE, at + 1)
        if at >= 0:
            found.append((at, "fence"))
        return min(found) if found else (-1, None)

    def _held(self) -> int:
        """How much of the end of the buffer could still become the start of a markup."""
        keep = 0
        if not self.in_code:
            keep = max(_partial_suffix(self.buf, TAG_OPEN), _partial_suffix(self.buf, FUNC_OPEN))
            line_at = self.buf.rfind("\n") + 1
            if self._at_line_start(line_at) and _BARE_PARTIAL.fullmatch(self.buf[line_at:]):
                keep = max(keep, len(self.buf) - line_at)
        ticks = len(self.buf) - len(self.buf.rstrip("`"))
        if 0 < ticks < len(FENCE) and self._at_line_start(len(self.buf) - ticks):
            keep = max(keep, ticks)
        return keep

    def scan(self, final: bool) -> list[StreamChunk]:
        out: list[StreamChunk] = []
        while self.buf:
            kind = self.pending
            if kind is None:
                at, kind = self._next_start()
                if kind is None:
                    keep = 0 if final else self._held()
                    self._text(out, self.buf[: len(self.buf) - keep])
                    self.buf = self.buf[len(self.buf) - keep:]
                    break
                if at > 0:
                    self._text(out, self.buf[:at])
                    self.buf = self.buf[at:]
            handler = {"tag": self._tag, "func": self._func, "fence": self._fence, "bare": self._bare, "file": self._file}[kind]
            if not handler(out, final):
                break  # the markup is not whole yet: wait for more text
        return out

    def _tag(self, out: list[StreamChunk], final: bool) -> bool:
        end = self.buf.find(TAG_CLOSE, max(self.resume, len(TAG_OPEN)))
        lead = self.buf[len(TAG_OPEN): len(TAG_OPEN) + 256].lstrip()
        attempt = lead.startswith(("{", FUNC_OPEN)) or (not final and FUNC_OPEN.startswith(lead))
        if not attempt:
            return self._take_text(out, len(TAG_OPEN))  # "<tool_call>" in prose: not a call
        if end < 0 and not final:
            return self._wait("tag", TAG_CLOSE)
        size = len(self.buf) if end < 0 else end + len(TAG_CLOSE)
        body = self.buf[len(TAG_OPEN): end if end >= 0 else len(self.buf)].strip()
        if body.startswith(FUNC_OPEN):
            parsed = _parse_function(body, self.schemas)
        else:
            parsed = _parse_hermes(body)
        if parsed is None:
            self.stats.malformed += 1
            return self._take_text(out, size)
        return self._take_call(parsed, size)

    def _func(self, out: list[StreamChunk], final: bool) -> bool:
        header = re.match(r"<function=([^>\s]*)(\s*)(>?)", self.buf)
        rest = self.buf[header.end():]
        opened = bool(header.group(1)) and header.group(3) == ">"
        if not opened and (rest or header.group(3) or (header.group(2) and not header.group(1))):
            return self._take_text(out, len(FUNC_OPEN))  # "<function=" in prose
        end = self.buf.find(FUNC_CLOSE, max(self.resume, header.end()))
        if end < 0:
            if final:
                return self._take_text(out, len(FUNC_OPEN))
            return self._wait("func", FUNC_CLOSE)
        size = end + len(FUNC_CLOSE)
        parsed = _parse_function(self.buf[:size], self.schemas)
        if parsed is None:
            self.stats.malformed += 1
            return self._take_text(out, size)
        return self._take_call(parsed, size)

    def _bare(self, out: list[StreamChunk], final: bool) -> bool:
        """A call written as a JSON object alone on its line: whole once the object decodes."""
        if not final and self.pending == "bare" and "}" not in self.buf[self.resume:]:
            return self._wait("bare", "")  # it cannot have ended without a new "}"
        try:
            value, end = json.JSONDecoder().raw_decode(self.buf)
        except ValueError:
            if not final:
                return self._wait("bare", "")
            self.stats.malformed += 1
            return self._take_text(out, len(self.buf))
        parsed = _call_from_value(value)
        if parsed is None or parsed[0] not in self.known:
            return self._take_text(out, end)
        return self._take_call(parsed, end)

    def _file_start(self, final: bool) -> bool | None:
        """Whether the fence at the start of buf opens a file block (file_path and file_start are
        then set): a path before it, in its info string or in a comment on its first line. None:
        it does not; False: cannot tell yet."""
        newline = self.buf.find("\n", len(FENCE))
        if newline < 0:
            return None if final or len(self.buf) > _MAX_PATH_WAIT else False
        path = self._introduced_path() or _info_path(self.buf[len(FENCE):newline])
        start = newline + 1
        if path is None:
            end = self.buf.find("\n", start)
            first = self.buf[start: end if end >= 0 else len(self.buf)]
            if end < 0:
                lead = first.lstrip()
                could_be = lead.startswith(_COMMENTS) or any(marker.startswith(lead) for marker in _COMMENTS)
                if could_be and not final and len(first) <= _MAX_PATH_WAIT:
                    return False
            path = _comment_path(first) if end >= 0 else None
            if path is not None:
                start = end + 1
            elif self.default_path and _fits(self.buf[len(FENCE):newline], self.default_path):
                path, self.file_unnamed = self.default_path, True
            else:
                return None
        if self.path_for is not None and not self.file_unnamed:
            path = self.path_for(path)
        self.file_path, self.file_start = path, start
        return True

    def _file(self, out: list[StreamChunk], final: bool) -> bool:
        """A file block: the whole new content of ``file_path`` (a call in a json fence stays one)."""
        close = self.buf.find("\n" + FENCE, max(self.resume, self.file_start - 1))
        if close < 0 and not final:
            self._wait("file", "\n" + FENCE)
            self.resume = max(self.resume, self.file_start - 1)
            return False
        size = len(self.buf) if close < 0 else close + 1 + len(FENCE)
        body = self.buf[self.file_start: close if close >= 0 else len(self.buf)]
        unnamed, self.file_unnamed = self.file_unnamed, False
        if unnamed and _path_line(body):
            return self._take_text(out, size)  # "```\ncalc.py\n```": the label of the next block
        parsed = _parse_fence_json(body, self.known, self.schemas) or self._file_call(body)
        return self._take_call(parsed, size)

    def _file_call(self, body: str) -> tuple[str, dict]:
        """A block's content as a ``write`` of the whole file, or a ``patch`` when it is a diff
        (``@@`` hunks; the ``---``/``+++`` header is added when the model left it out)."""
        lines = body.splitlines()
        if any(line.startswith("@@") for line in lines) and all(line[:1] in _DIFF_MARKS for line in lines):
            if not body.startswith("--- "):
                body = f"--- a/{self.file_path}\n+++ b/{self.file_path}\n{body}"
            return "patch", {"patch": body + "\n"}
        return "write", {"path": self.file_path, "content": body + "\n" if body else ""}

    def _fence(self, out: list[StreamChunk], final: bool) -> bool:
        if self.in_code:  # the end of an ordinary code block
            self.in_code = False
            return self._take_text(out, len(FENCE))
        if self.file_blocks:
            opens = self._file_start(final)
            if opens is False:
                return self._wait("fence", "")  # its first lines are still coming
            if opens:
                return self._file(out, final)
        newline = self.buf.find("\n", len(FENCE))
        if newline < 0:
            info = self.buf[len(FENCE):].strip().lower()
            plausible = len(info) <= _MAX_INFO and any(name.startswith(info) for name in FENCE_INFO)
            if plausible and not final:
                return self._wait("fence", "")
            return self._code(out, len(self.buf))
        if self.buf[len(FENCE):newline].strip().lower() not in FENCE_INFO:
            return self._code(out, newline + 1)
        body_start = newline + 1
        close = self.buf.find("\n" + FENCE, max(self.resume, newline))
        body_end = close if close >= 0 else len(self.buf)
        head = _fence_head(self.buf[body_start: min(body_end, body_start + 512)], self.known)
        if head == "reject" or (head == "more" and (final or close >= 0 or body_end - body_start >= 512)):
            return self._code(out, body_start)
        if close < 0 and not final:
            self._wait("fence", "\n" + FENCE)
            self.resume = max(self.resume, newline)
            return False
        parsed = _parse_fence_json(self.buf[body_start:body_end], self.known, self.schemas)
        if parsed is None:
            self.stats.malformed += _broken_call(self.buf[body_start:body_end])
            return self._code(out, body_start)
        return self._take_call(parsed, len(self.buf) if close < 0 else close + 1 + len(FENCE))


async def text_tool_calls(
    stream: AsyncIterator[StreamChunk],
    known_tools: Iterable[str],
    *,
    schemas: Mapping[str, Any] | None = None,
    stats: TextCallStats | None = None,
    file_blocks: bool = False,
    default_path: str | None = None,
    path_for: Callable[[str], str] | None = None,
) -> AsyncIterator[StreamChunk]:
    """``stream`` with the tool calls written in its text turned into ToolCallChunks.

    ``known_tools``: the names a fenced JSON call may use (tags are taken whatever the name: the
    loop answers an unknown one with the list of tools). ``schemas``: optional JSON schemas by
    tool name, used to type the values of Qwen XML parameters. ``stats`` is filled as the stream
    goes (see ``TextCallStats``). ``file_blocks``: a fenced block that names a path is a ``write``
    (a ``patch`` when it holds a diff); ``default_path``: with ``file_blocks``, the file a block
    that names none is taken for (the one file shown with the request, as aider does with the
    one file in its chat); ``path_for``: with ``file_blocks``, the file a block naming a path is
    written to (the engine's policy for a small model's slips; the path itself when absent).
    """
    stats = stats if stats is not None else TextCallStats()
    scanner = _Scanner(
        frozenset(known_tools), schemas or {}, stats, file_blocks=file_blocks,
        default_path=default_path if file_blocks else None, path_for=path_for if file_blocks else None,
    )

    def finish() -> list[StreamChunk]:
        out = scanner.scan(final=True)
        if stats.native:
            # The model called natively: what looked like calls in its text was text.
            out += [TextChunk(markup) for _, markup in scanner.calls]
        else:
            out += [ToolCallChunk(call) for call, _ in scanner.calls]
            stats.emitted += len(scanner.calls)
        scanner.calls = []
        return out

    async with _closing(stream) as source:
        async for chunk in source:
            if isinstance(chunk, TextChunk):
                scanner.buf += chunk.text
                for piece in scanner.scan(final=False):
                    yield piece
            elif isinstance(chunk, ToolCallChunk):
                stats.native += 1
                yield chunk
            elif isinstance(chunk, FinishChunk):
                for piece in finish():
                    yield piece
                yield chunk
            else:
                yield chunk
    for piece in finish():
        yield piece


def tool_prompt(specs: Iterable[ToolSpec]) -> str:
    """The system-prompt section that tells a model without native tools how to call them (in
    the Hermes form, which ``text_tool_calls`` reads): ``prompts/text_tools.txt``, then the tools."""
    lines = [prompt("text_tools.txt"), "", "Available tools:"]
    for spec in specs:
        description = spec.description.strip().split("\n\n", 1)[0].replace("\n", " ")
        lines.append(f"- {spec.name}: {description}")
        lines.append(f"  arguments: {json.dumps(spec.parameters, ensure_ascii=False, separators=(',', ':'))}")
    return "\n".join(lines)


# A file block replaces them for a small model: a whole file is what a 1.5B model writes
# reliably (aider's finding), while its edits drop or garble lines. They stay callable.
FILE_BLOCK_TOOLS = frozenset({"write", "edit"})


def small_tool_prompt(specs: Iterable[ToolSpec]) -> str:
    """The same section for a small model (``prompts/small_tools.txt``): files written as a path
    line and a fenced block (``text_tool_calls(..., file_blocks=True)``), other calls as fenced
    JSON, each tool on one line as ``name(argument, optional?: type): first sentence``. Short
    and the same on every step, so a local server keeps the prompt prefix cached."""
    lines = [prompt("small_tools.txt")]
    for spec in specs:
        if spec.name in FILE_BLOCK_TOOLS:
            continue
        sentence = spec.description.strip().split(". ", 1)[0].rstrip(".")
        lines.append(f"- {spec.name}({_signature(spec.parameters)}): {sentence}.")
    return "\n".join(lines)


def _signature(schema: Mapping[str, Any]) -> str:
    required = set(schema.get("required") or ())
    shown = []
    for name, field in (schema.get("properties") or {}).items():
        kind = field.get("type") if isinstance(field, Mapping) else None
        shown.append(f"{name}{'' if name in required else '?'}" + (f": {kind}" if isinstance(kind, str) else ""))
    return ", ".join(shown)


__all__ = [
    "FILE_BLOCK_TOOLS", "MAX_HOLD", "TextCallStats", "looks_like_a_call", "small_tool_prompt", "split_think", "text_tool_calls", "think_filter", "tool_prompt"
]
