"""The history as a small model wrote it: its calls as its own text, their results as user messages.

A model that writes its calls as text (providers/textcalls.py, ``file_blocks``) answers with a
path line and a fenced block for a file and a ``json`` fence for another call. Replayed as native
``tool_calls``, its earlier answers reach it through the server's chat template as JSON (Qwen's
``<tool_call>{"name": "write", "arguments": {"content": "..."}}``), and it copies that JSON,
escaped newlines and all, into the files it writes next. Replayed as the text it wrote, every
example it sees of its own answers is the form it was taught. Results become user messages,
since ``tool`` messages without the matching ``tool_calls`` are refused by strict servers. The
test runs Totem made itself (verify.py) are shown as what they are, not as the model's calls:
shown as its own, the model took to running the tests again instead of fixing the code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from totem_engine.providers.base import Message, ToolCall
from totem_engine.verify import TEST_RUN

FILE_BLOCK_CALLS = frozenset({"write"})  # what a file block is read back as
EMPTY_FENCE = re.compile(r"^```[^\n`]*\n```[ \t]*$", re.MULTILINE)  # left when its path line goes


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
        elif message.role == "tool":
            _add_user(out, f"The {message.name} call returned:\n{message.text}")
        elif message.role == "user":
            _add_user(out, message.text)
        else:
            out.append(message)
    return out


def _test_run(call: ToolCall) -> bool:
    return call.id.startswith(TEST_RUN)


def _arguments(call: ToolCall) -> object:
    try:
        return json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return call.arguments  # replayed as sent, so the model sees what it got wrong


def _file(call: ToolCall) -> tuple[str, str] | None:
    """(path, content) of a call written as a file block."""
    arguments = _arguments(call)
    if call.name in FILE_BLOCK_CALLS and isinstance(arguments, dict):
        path, content = arguments.get("path"), arguments.get("content")
        if isinstance(path, str) and isinstance(content, str):
            return path, content
    return None


def _written(call: ToolCall) -> str:
    if (file := _file(call)) is not None:
        return file_block(*file)
    return "```json\n" + json.dumps({"name": call.name, "arguments": _arguments(call)}, ensure_ascii=False) + "\n```"


def _block_paths(calls: Iterable[ToolCall]) -> set[str]:
    return {file[0] for file in map(_file, calls) if file is not None}


def _without_path_lines(text: str, paths: set[str]) -> str:
    """The step's text without the lines that introduced its file blocks (the stored text keeps
    them for the user: ``calc.py``, ``**`calc.py`**:``, a fence holding only the path), which the
    blocks replayed after it repeat."""
    kept = [line for line in text.splitlines() if line.strip(" \t`*:#") not in paths]
    return EMPTY_FENCE.sub("", "\n".join(kept)).strip()


def _add_user(out: list[Message], text: str) -> None:
    if out and out[-1].role == "user":
        out[-1] = Message(role="user", text=f"{out[-1].text}\n\n{text}")
    else:
        out.append(Message(role="user", text=text))
