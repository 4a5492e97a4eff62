"""The call formats a model writes into its text, each read from its whole markup.

- Hermes: ``<tool_call>{"name": "read", "arguments": {"path": "a.py"}}</tool_call>``
  (``parse_hermes``; https://github.com/NousResearch/Hermes-Function-Calling)
- Qwen XML: ``<function=read><parameter=path>a.py</parameter></function>``, bare or inside
  ``<tool_call>`` (``parse_function``; Qwen3-Coder's chat template)
- a Markdown fence whose whole content is one JSON object with exactly ``name`` (a known tool)
  and ``arguments`` (an object), as Qwen2.5-Coder writes it, or the same object alone at the
  start of a line (``parse_fence_json``, ``call_from_value``; ``fence_head`` tells early whether
  a fence's first characters can still be one).
- shell aliases: a fenced call of a tool that does not exist is a ``bash`` call when it is the
  shell under another agent's name (``"name": "shell"``) or a program with its command line
  (``"name": "python", "arguments": ["python -m pytest"]``); see ``SHELL_TOOLS`` and ``PROGRAMS``.

Each parser gives ``(name, arguments)`` or None when the markup is not that format.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from totem_engine import json_in
from totem_engine.vocab.tools import arguments_object

TAG_OPEN, TAG_CLOSE = "<tool_call>", "</tool_call>"
FUNC_OPEN, FUNC_CLOSE = "<function=", "</function>"
FENCE = "```"
# Info strings of a fence that may hold a call; any other (```python) is code and stays text.
FENCE_INFO = frozenset({"", "json", "tool_call", "tool"})
_MAX_NAME = 128
# Other agents' names for their shell tool (Codex's shell, Cline's execute_command, OpenHands'
# execute_bash, Continue's run_terminal_command, Gemini CLI's run_shell_command): a small model
# calls the shell by the name it learnt. And the programs it calls as tools ("name": "python",
# "arguments": ["python -m pytest"]): a command line that starts with the program's name.
SHELL_TOOLS = frozenset({"shell", "terminal", "execute_command", "execute_bash", "run_command", "run_terminal_command", "run_shell_command"})
PROGRAMS = frozenset({"python", "python3", "pytest", "pip", "git", "ls", "cat", "sed"})

_FUNCTION = re.compile(r"<function=([^>\s]+)\s*>(.*?)</function>", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)\s*>(.*?)</parameter>", re.S)


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
        return json_in.loads(stripped)
    except ValueError:
        return raw


def parse_function(markup: str, schemas: Mapping[str, Any]) -> tuple[str, dict] | None:
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


def parse_hermes(content: str) -> tuple[str, dict] | None:
    try:
        value = json_in.loads(content)
    except ValueError:
        return None
    return call_from_value(value)


def call_from_value(value: Any) -> tuple[str, dict] | None:
    """``{"name": ..., "arguments" (or "parameters"): {...} or JSON text}`` as (name, arguments)."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):  # some models send the arguments as JSON text
        arguments = arguments_object(arguments)
    if not isinstance(arguments, dict):
        return None
    return value["name"], arguments


def fence_head(rest: str, known: frozenset[str]) -> str:
    """Whether a fence's content so far can still be a call: "ok", "more" (cannot tell yet) or
    "reject". Reads ``{``, the first key (``name`` or ``arguments``) and, for ``name``, its value."""
    names = callable_names(known)
    head = _Head(rest)
    try:
        head.expect("{")
        key = head.string(lambda partial: "name".startswith(partial) or "arguments".startswith(partial))
        if key != "name":
            return "ok" if key == "arguments" else "reject"  # the name is checked when the fence is whole
        head.expect(":")
        name = head.string(lambda partial: _could_be_name(partial, names))
    except _Verdict as verdict:
        return verdict.verdict
    return "ok" if name in names else "reject"


class _Verdict(Exception):
    """``fence_head`` can tell before the end of what it reads: ``verdict`` is "more" or "reject"."""

    def __init__(self, verdict: str):
        self.verdict = verdict


class _Head:
    """A reader of the start of a JSON object, one token at a time (whitespace skipped before
    each); it raises ``_Verdict`` where the text ends too early or is not what is expected."""

    def __init__(self, text: str):
        self.text, self.at = text, 0

    def expect(self, mark: str) -> None:
        """Past the character ``mark``."""
        while self.at < len(self.text) and self.text[self.at].isspace():
            self.at += 1
        if self.at == len(self.text):
            raise _Verdict("more")
        if self.text[self.at] != mark:
            raise _Verdict("reject")
        self.at += 1

    def string(self, may_become: Callable[[str], bool]) -> str:
        """Past a JSON string (without escapes), giving its text; an unclosed one is "more" while
        ``may_become`` holds for what there is of it."""
        self.expect('"')
        close = self.text.find('"', self.at)
        if close < 0:
            raise _Verdict("more" if may_become(self.text[self.at:]) else "reject")
        value, self.at = self.text[self.at:close], close + 1
        return value


def _could_be_name(partial: str, names: frozenset[str]) -> bool:
    if len(partial) > _MAX_NAME or any(ch.isspace() or ch == "\\" for ch in partial):
        return False
    return any(name.startswith(partial) for name in names)


def callable_names(known: frozenset[str]) -> frozenset[str]:
    """The names a fenced call may use: the tools', and the shell's other names when ``bash`` is one."""
    return known | SHELL_TOOLS | PROGRAMS if "bash" in known else known


def parse_fence_json(content: str, known: frozenset[str], schemas: Mapping[str, Any]) -> tuple[str, dict] | None:
    try:
        value = json_in.loads(content)
    except ValueError:
        return None
    if not isinstance(value, dict) or set(value) != {"name", "arguments"} or not isinstance(value["name"], str):
        return None
    name, arguments = value["name"], value["arguments"]
    if name not in known:
        command = shell_command(name, arguments) if "bash" in known else None
        return ("bash", {"command": command}) if command else None
    if isinstance(arguments, list):
        arguments = _positional(arguments, schemas.get(name))
    return (name, arguments) if isinstance(arguments, dict) else None


def shell_command(name: str, arguments: Any) -> str | None:
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


def broken_call(content: str) -> bool:
    """Whether a fence that starts as a call (``{"name": "<a tool>"``, ``fence_head``) but did
    not parse was a call gone wrong: JSON that does not decode, or arguments that are not an
    object (``"arguments": ["ls"]``). Other shapes are taken for examples, not calls."""
    try:
        value = json_in.loads(content)
    except ValueError:
        return True
    return isinstance(value, dict) and "arguments" in value and not isinstance(value["arguments"], dict)


# What is left as text of a call gone wrong: a fence holding {"name": ..., "arguments": ...}
# that was not read as a call (a tool that does not exist, arguments that do not parse).
_CALL_SHAPED = re.compile(r'^```(?:json)?[ \t]*\n\s*\{\s*"name"\s*:\s*"[^"\n]*"\s*,\s*"arguments"\s*:', re.MULTILINE)


def looks_like_a_call(text: str) -> bool:
    """Whether ``text`` (what a step gave out as text) holds a fenced call that was not read as one."""
    return _CALL_SHAPED.search(text) is not None
