"""Code mode as a turn's shape (turn/scripts.py, turn/caught.py) through the real ``totem run``
against a scripted loopback model: the model is offered no tools and answers with scripts; a
model with tools caught describing its change in prose is switched to scripts; the whole file
written in prose is applied."""

from __future__ import annotations

import json

from tests.support.model_server import text_reply

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"

SCRIPT = """\
I fix the sign and run the tests.

```python
import totem
totem.edit("calc.py", "return a - b", "return a + b")
totem.write("NOTES.md", "add fixed\\n")
result = totem.tests()
print("exit", result["exit_code"])
```
"""

FAILING = """\
```python
import totem
totem.edit("calc.py", "return a - b", "return a + b")
totem.write("NOTES.md", "add fixed\\n")
raise RuntimeError("changed my mind")
```
"""


def _code_mode(totem, value: str = "always") -> None:
    totem.config.write_text(totem.config.read_text().replace("retry_max_wait", f'code_mode = "{value}"\nretry_max_wait', 1))


def _project(totem) -> None:
    (totem.project / "calc.py").write_text(CALC)
    (totem.project / "test_calc.py").write_text(TEST)


def _last_user(request: dict) -> str:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


def test_in_code_mode_one_script_edits_two_files_runs_the_tests_and_applies_as_one_change(totem):
    _code_mode(totem)
    _project(totem)
    totem.server.enqueue(text_reply(SCRIPT))
    totem.server.enqueue(text_reply("Fixed: add now adds."))
    result = totem.agent("fix add in calc.py", extra=("--yes",))

    assert result.code == 0, result.stderr
    first = totem.server.requests[0]
    assert "tools" not in first  # the model is offered no tools: it writes scripts
    assert "import totem" in first["messages"][0]["content"]  # taught by prompts/code_mode.txt
    (end,) = [e for e in result.of("toolEnd") if e["tool"] == "run_script"]
    assert end["status"] == "ok", end
    assert (totem.project / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    assert (totem.project / "NOTES.md").read_text() == "add fixed\n"
    # The tests ran in the sandbox over the staged edits (asked as bash); then the one change set.
    permissions = [e for e in result.of("permission") if e["callId"] == end["callId"]]
    decided = [(p["rule"]["permission"], p["decision"]) for p in permissions]
    assert decided == [("bash", "allow"), ("edit", "allow")], permissions
    # What the script printed is the next user message; its script is replayed as written.
    second = totem.server.requests[1]
    said = _last_user(second)
    assert said.startswith("The script printed:\n") and "exit 0" in said, said
    assert "```python\nimport totem\ntotem.edit(" in second["messages"][-2]["content"]
    assert "tools" not in second
    assert end["summary"] == "Changes: edited calc.py; created NOTES.md"
    assert result.of("turnEnd")[-1]["stopReason"] == "finished"


def test_a_script_that_raises_leaves_both_files_unchanged_and_returns_the_traceback(totem):
    _code_mode(totem)
    _project(totem)
    totem.server.enqueue(text_reply(FAILING))
    totem.server.enqueue(text_reply("It failed."))
    result = totem.agent("fix add in calc.py", extra=("--yes",))

    assert result.code == 0, result.stderr
    (end,) = [e for e in result.of("toolEnd") if e["tool"] == "run_script"]
    assert end["status"] == "error"
    assert (totem.project / "calc.py").read_text() == CALC
    assert not (totem.project / "NOTES.md").exists()
    said = _last_user(totem.server.requests[1])
    assert "RuntimeError: changed my mind" in said and "Traceback" in said, said


PROSE = """\
To fix this, replace the subtraction in calc.py:

```python
    return a + b
```
"""

SWITCHED = """\
```python
import totem
totem.edit("calc.py", "return a - b", "return a + b")
print("edited")
```
"""


def test_a_model_describing_its_change_in_prose_is_switched_to_scripts_and_the_record_keeps_it(totem):
    _project(totem)
    totem.server.enqueue(text_reply(PROSE))
    totem.server.enqueue(text_reply(SWITCHED))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("fix add in calc.py", extra=("--yes",))

    assert result.code == 0, result.stderr
    assert "tools" in totem.server.requests[0]  # a model with native tools
    switched = totem.server.requests[1]
    assert "tools" not in switched  # not nudged again with tools: scripts from now on
    assert "import totem" in switched["messages"][0]["content"]
    assert "fix add in calc.py" in _last_user(switched) and "script" in _last_user(switched)
    assert any("asks it for a script" in e["message"] for e in result.of("notice"))
    assert (totem.project / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    assert "tools" not in totem.server.requests[2]

    # The script did the change: the model's next request starts in code mode.
    totem.server.enqueue(text_reply("Nothing else to do."))
    again = totem.agent("now rename mul to times in calc.py", extra=("--yes",))
    assert again.code == 0, again.stderr
    assert "tools" not in totem.server.requests[3]


def test_with_code_mode_never_prose_ends_the_turn_as_before(totem):
    _code_mode(totem, "never")
    _project(totem)
    totem.server.enqueue(text_reply(PROSE))
    result = totem.agent("fix add in calc.py", extra=("--yes",))

    assert result.code == 0, result.stderr
    assert len(totem.server.requests) == 1
    assert (totem.project / "calc.py").read_text() == CALC


def test_in_plan_mode_a_described_change_is_the_answer(totem):
    _project(totem)
    totem.server.enqueue(text_reply(WHOLE))
    result = totem.agent("fix add in calc.py", extra=("--yes", "--mode", "plan"))

    assert result.code == 0, result.stderr
    assert len(totem.server.requests) == 1
    assert (totem.project / "calc.py").read_text() == CALC


WHOLE = f"""\
Here is the updated `calc.py`:

```python
{CALC.replace("a - b", "a + b")}```
"""


def test_the_whole_file_written_in_prose_is_applied_with_a_snapshot_and_undone(totem):
    _project(totem)
    totem.server.enqueue(text_reply(WHOLE))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("fix add in calc.py", extra=("--yes",))

    assert result.code == 0, result.stderr
    assert (totem.project / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    (end,) = [e for e in result.of("toolEnd") if e["tool"] == "write"]
    assert end["status"] == "ok"
    assert any("Totem applied calc.py." in e["message"] for e in result.of("notice"))
    # The model is told what was written, as the result of its own write.
    results = [m for m in totem.server.requests[1]["messages"] if m["role"] in ("tool", "user")]
    assert "calc.py" in json.dumps(results[-1])

    undone = totem.run("undo", "--cwd", str(totem.project), "--config", str(totem.config))
    assert undone.code == 0, undone.stderr
    assert (totem.project / "calc.py").read_text() == CALC


def test_a_fragment_in_prose_is_not_taken_for_the_whole_file(totem):
    _project(totem)
    fragment = "Here is the corrected code for `calc.py`:\n\n```python\ndef add(a, b):\n    return a + b\n```\n"
    totem.server.enqueue(text_reply(fragment))
    totem.server.enqueue(text_reply(SWITCHED))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("fix add in calc.py", extra=("--yes",))

    assert result.code == 0, result.stderr
    assert not [e for e in result.of("toolEnd") if e["tool"] == "write"]
    # The fragment was left to the model, which made the change with a script.
    assert [e["tool"] for e in result.of("toolEnd")] == ["run_script"]
    assert (totem.project / "calc.py").read_text() == CALC.replace("a - b", "a + b")
