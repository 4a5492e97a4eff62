"""A small model's history replayed as the text it wrote (textcalls/fileblocks.py `as_written`)."""

from __future__ import annotations

import json

from totem_engine.textcalls import as_written
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall


def write(path: str, content: str, call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name="write", arguments=json.dumps({"path": path, "content": content}))


def test_a_file_call_is_replayed_as_its_block_without_the_lines_that_introduced_it():
    history = [
        Message(role="user", text="Fix calc.py"),
        Message(role="assistant", text="The sum is wrong.\n\n**`calc.py`**:\n\n```\ncalc.py\n```\n", tool_calls=(write("calc.py", "x = 1\n"),)),
        Message(role="tool", text="Wrote calc.py", tool_call_id="c1", name="write"),
    ]
    assert as_written(history) == [
        Message(role="user", text="Fix calc.py"),
        Message(role="assistant", text="The sum is wrong.\n\ncalc.py\n```\nx = 1\n```"),
        Message(role="user", text="The write call returned:\nWrote calc.py"),
    ]


def test_other_calls_are_json_fences_and_results_join_the_next_user_message():
    broken = ToolCall(id="c2", name="bash", arguments='{"command": "ls"')
    history = [
        Message(role="assistant", text="", tool_calls=(ToolCall(id="c1", name="read", arguments='{"path": "a.py"}'), broken)),
        Message(role="tool", text="1\tx = 1", tool_call_id="c1", name="read"),
        Message(role="tool", text="Error: bad JSON", tool_call_id="c2", name="bash"),
        Message(role="user", text="Now run it"),
    ]
    assistant, user = as_written(history)
    assert assistant.text == (
        '```json\n{"name": "read", "arguments": {"path": "a.py"}}\n```\n\n'
        '```json\n{"name": "bash", "arguments": "{\\"command\\": \\"ls\\""}\n```'
    )  # broken arguments are shown as they were sent
    assert assistant.tool_calls == ()
    assert user.text == "The read call returned:\n1\tx = 1\n\nThe bash call returned:\nError: bad JSON\n\nNow run it"


def test_a_file_holding_a_fence_gets_a_longer_one_and_plain_steps_are_kept():
    content = "Use:\n```\nrun()\n```\n"
    history = [
        Message(role="assistant", text="Hello."),
        Message(role="user", text="Document it"),
        Message(role="assistant", text="README.md", tool_calls=(write("README.md", content),)),
    ]
    plain, user, block = as_written(history)
    assert plain == history[0] and user == history[1]
    assert block.text == f"README.md\n````\n{content.rstrip()}\n````"


def test_a_test_run_totem_made_is_shown_as_such_not_as_the_model_s_call():
    run = ToolCall(id="testrun_0001", name="bash", arguments='{"command": "pytest -q"}')
    history = [
        Message(role="assistant", text="calc.py", tool_calls=(write("calc.py", "x = 2\n"),)),
        Message(role="tool", text="Wrote calc.py", tool_call_id="c1", name="write"),
        Message(role="assistant", tool_calls=(run,)),
        Message(role="tool", text="1 failed", tool_call_id="testrun_0001", name="bash"),
    ]
    block, results = as_written(history)
    assert block.text == "calc.py\n```\nx = 2\n```"
    assert results.text == "The write call returned:\nWrote calc.py\n\nThe project's tests were run:\n1 failed"
