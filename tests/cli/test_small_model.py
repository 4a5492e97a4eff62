"""A small model end to end through the real ``totem run``: the short prompt, the named files
shown with the message, fenced calls, whole-file blocks and a fragment merged into its file."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

from tests.support.model_server import text_reply

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
MUL = "def mul(a, b):\n    return a * b\n"
JUNK = "def scaled(a):\n    return mul(a, factor)\n"  # an undefined name: F821


def small_config(totem):
    path = totem.home / "small.toml"
    path.write_text(
        'model = "sim/qwen2.5-coder-1.5b"\nforge = false\n'
        f'[providers.sim]\nkind = "openai"\nbase_url = "{totem.server.base_url}"\ntemperature = 0\n'
        '[models."sim/qwen2.5-coder-1.5b"]\ncontext_window = 8192\n'
    )
    return path


def config_with_tests(totem, extra=""):
    """The small model's config with the tests run by this Python's pytest."""
    config = small_config(totem)
    command = f'test_command = "{sys.executable} -m pytest -q -p no:cacheprovider"\n{extra}'
    config.write_text(config.read_text().replace("model =", f"{command}model =", 1))
    return config


def run_small(totem, prompt):
    return totem.run("run", "--cwd", str(totem.project), "--config", str(small_config(totem)), "--json", "--yes", prompt)


def test_a_small_model_gets_the_short_prompt_the_named_file_and_a_zero_temperature(totem):
    (totem.project / "calc.py").write_text(CALC)
    (totem.project / "notes.txt").write_text("unrelated\n")
    totem.server.enqueue(text_reply("calc.py adds and subtracts."))
    result = run_small(totem, "What does calc.py do?")

    assert result.code == 0, result.stderr
    (request,) = totem.server.requests
    assert "tools" not in request and request["temperature"] == 0
    system, user = request["messages"][0]["content"], request["messages"][1]["content"]
    assert "Write every file that must change in the same answer" in system and "alone on a line" in system
    assert "- read(path: string, offset?: integer, limit?: integer)" in system
    assert "- edit(" not in system  # whole files, not edits, for a small model
    assert user.startswith("Files in the project (2): calc.py, notes.txt")
    assert user.endswith("\n\nWhat does calc.py do?")  # the request last, nearest to the answer
    assert f"calc.py\n```\n{CALC.rstrip()}\n```" in user and "unrelated" not in user


def test_a_fragment_sent_as_the_whole_file_is_merged_and_that_answer_ends_the_turn(totem):
    (totem.project / "calc.py").write_text(CALC)
    totem.server.enqueue(text_reply("I add mul.\n\ncalc.py\n```python\ndef mul(a, b):\n    return a * b\n```\n", pieces=9))
    result = run_small(totem, "Add mul(a, b) to calc.py")

    assert result.code == 0, result.stderr
    assert len(totem.server.requests) == 1  # the clean change was the answer: no round to restate it
    assert result.of("turnEnd")[0]["text"].startswith("I add mul.")
    assert (totem.project / "calc.py").read_text() == CALC + "\n\ndef mul(a, b):\n    return a * b\n"
    (end,) = result.of("toolEnd")
    assert end["tool"] == "write" and end["status"] == "ok"
    assert "merged into the file: added mul" in end["output"]
    assert "```" not in "".join(e["text"] for e in result.of("textDelta"))


def test_a_fragment_sent_again_is_not_written_twice(totem):
    (totem.project / "calc.py").write_text(CALC)
    block = "calc.py\n```python\ndef mul(a, b):\n    return a * b\n```\n"
    totem.server.enqueue(text_reply(block))
    first = run_small(totem, "Add mul(a, b) to calc.py")
    totem.server.enqueue(text_reply(block))
    totem.server.enqueue(text_reply("It is there already."))
    again = totem.run(
        "run", "--cwd", str(totem.project), "--config", str(small_config(totem)), "--json", "--yes",
        "--session", first.events[0]["sessionId"], "Add mul(a, b) to calc.py",
    )

    assert (totem.project / "calc.py").read_text() == CALC + "\n\ndef mul(a, b):\n    return a * b\n"
    (end,) = again.of("toolEnd")
    assert end["status"] == "ok" and end["output"] == "Unchanged: calc.py already holds what you sent."
    assert again.of("turnEnd")[0]["text"].endswith("It is there already.")


def test_a_bare_json_call_on_its_own_line_runs(totem):
    (totem.project / "data.txt").write_text("42\n")
    totem.server.enqueue(text_reply('{"name": "read", "arguments": {"path": "data.txt"}}'))
    totem.server.enqueue(text_reply("It holds 42."))
    result = run_small(totem, "look at the data file")

    assert result.code == 0, result.stderr
    (end,) = result.of("toolEnd")
    assert end["tool"] == "read" and "1\t42" in end["output"]


def test_a_fragment_of_a_file_without_a_merge_is_refused_and_the_file_kept(totem):
    app = "function a() {}\nfunction b() {}\nfunction c() {}\n"
    (totem.project / "app.js").write_text(app)
    totem.server.enqueue(text_reply("app.js\n```js\nfunction d() {}\n```\n"))
    totem.server.enqueue(text_reply("Sorry."))
    result = run_small(totem, "add d to app.js")

    assert (totem.project / "app.js").read_text() == app
    (end,) = result.of("toolEnd")
    assert end["status"] == "error" and "would delete a, b, c from app.js" in end["output"]


def test_a_small_model_hears_what_its_python_breaks(totem):
    (totem.project / "calc.py").write_text(CALC)
    totem.server.enqueue(text_reply("calc.py\n```python\ndef mul(a, b):\n    return multiply(a, b)\n```\n"))
    totem.server.enqueue(text_reply("Done."))
    result = run_small(totem, "Add mul(a, b) to calc.py")

    (end,) = result.of("toolEnd")
    assert end["status"] == "ok" and "Checks found:" in end["output"]
    assert "calc.py:10:12 F821 undefined name 'multiply'" in end["output"]
    assert "F821" in totem.server.requests[1]["messages"][-1]["content"]


def test_after_a_clean_change_the_tests_run_and_a_failure_goes_back_to_the_model(totem):
    (totem.project / "calc.py").write_text("def double(x):\n    return x + 2\n")
    (totem.project / "test_calc.py").write_text("from calc import double\n\n\ndef test_double():\n    assert double(3) == 6\n")
    config = config_with_tests(totem)
    totem.server.enqueue(text_reply("calc.py\n```python\ndef double(x):\n    return x + x + 1\n```\n"))
    totem.server.enqueue(text_reply("calc.py\n```python\ndef double(x):\n    return x * 2\n```\n"))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config), "--json", "--yes", "Fix double in calc.py")

    assert result.code == 0, result.stderr
    tools = [(e["tool"], e["status"]) for e in result.of("toolEnd")]
    assert tools == [("write", "ok"), ("bash", "ok"), ("write", "ok"), ("bash", "ok")]
    first_run, second_run = [e["output"] for e in result.of("toolEnd") if e["tool"] == "bash"]
    assert "1 failed" in first_run and "assert 7 == 6" in first_run and "1 passed" in second_run
    assert len(totem.server.requests) == 2  # passing tests end the turn
    # The first answer is replayed as the model wrote it (a file block), not as a native tool
    # call; the results come back as a user message, Totem's test run as what it is.
    replayed = totem.server.requests[1]["messages"][2:]
    assert [m["role"] for m in replayed] == ["assistant", "user"]
    assert all("tool_calls" not in m for m in replayed)
    assert replayed[0]["content"] == "calc.py\n```\ndef double(x):\n    return x + x + 1\n```"
    assert replayed[1]["content"].startswith("The write call returned:\n")
    assert "\n\nThe project's tests were run:\n" in replayed[1]["content"] and "1 failed" in replayed[1]["content"]
    assert '"bash"' not in replayed[1]["content"]


def test_a_small_model_s_answer_is_capped_at_the_output_its_window_keeps_free(totem):
    totem.server.enqueue(text_reply("Hello."))
    assert run_small(totem, "hi").code == 0
    assert totem.server.requests[0]["max_tokens"] == 2048  # a quarter of the 8192-token window


def test_a_file_echoed_for_a_question_is_left_as_it_is(totem):
    (totem.project / "calc.py").write_text(CALC)
    totem.server.enqueue(text_reply(f"calc.py\n```python\n{CALC}```\n"))
    totem.server.enqueue(text_reply("It adds and subtracts."))
    result = run_small(totem, "What does calc.py do? Answer in a sentence.")

    assert result.code == 0, result.stderr
    assert (totem.project / "calc.py").read_text() == CALC
    assert [e["output"] for e in result.of("toolEnd")] == ["Unchanged: calc.py already holds what you sent."]
    assert not result.of("notice") and len(totem.server.requests) == 2


def test_a_call_that_cannot_be_read_is_asked_for_again_twice_at_most(totem):
    totem.server.enqueue(text_reply('```json\n{"name": "bash", "arguments": {"command": "ls}}\n```\n'))  # not JSON
    totem.server.enqueue(text_reply('```json\n{"name": "python", "arguments": ["-m", "pytest"]}\n```\n'))  # no such tool
    totem.server.enqueue(text_reply('```json\n{"name": "python", "arguments": ["-m", "pytest"]}\n```\n'))
    result = run_small(totem, "List the files")

    assert result.code == 0, result.stderr
    assert len(totem.server.requests) == 3  # the first answer and two asks
    notices = [e["message"] for e in result.of("notice")]
    assert notices == ["The model's tool call could not be read; it is asked to write it again."] * 2
    # The broken answers are left out of what the model sees (it copied them word for word).
    (system, user) = totem.server.requests[-1]["messages"]
    assert user["content"].count("Your tool call could not be read. The tools are: bash, glob, grep, read, todo.") == 2
    assert "python" not in user["content"]


def test_a_program_called_as_a_tool_runs_in_the_shell_and_a_shown_file_is_not_shown_twice(totem):
    (totem.project / "calc.py").write_text(CALC)
    totem.server.enqueue(text_reply('```json\n{"name": "python", "arguments": ["python -c \'print(6 * 7)\'"]}\n```\n'))
    totem.server.enqueue(text_reply('```json\n{"name": "read", "arguments": {"path": "calc.py"}}\n```\n'))
    totem.server.enqueue(text_reply("calc.py adds and subtracts; 6 * 7 is 42."))
    first = run_small(totem, "What does calc.py do, and what is 6 * 7?")

    assert first.code == 0, first.stderr
    shell, read = first.of("toolEnd")
    assert shell["tool"] == "bash" and shell["status"] == "ok" and shell["output"].strip() == "42"
    assert read["status"] == "ok" and "def add" not in read["output"]
    assert read["output"].startswith("calc.py is shown above, with the request, and has not changed since")
    # A later request that does not name it shows it no more: a read gives its lines again.
    totem.server.enqueue(text_reply('```json\n{"name": "read", "arguments": {"path": "calc.py"}}\n```\n'))
    totem.server.enqueue(text_reply("It still adds and subtracts."))
    again = totem.run(
        "run", "--cwd", str(totem.project), "--config", str(small_config(totem)), "--json", "--yes",
        "--session", first.events[0]["sessionId"], "And now?",
    )
    (read,) = again.of("toolEnd")
    assert "1\tdef add(a, b):" in read["output"]


def test_a_file_sent_back_unchanged_for_a_fix_is_met_with_the_failing_tests(totem):
    broken = "def double(x):\n    return x + 2\n"
    (totem.project / "calc.py").write_text(broken)
    (totem.project / "test_calc.py").write_text("from calc import double\n\n\ndef test_double():\n    assert double(3) == 6\n")
    config = config_with_tests(totem)
    totem.server.enqueue(text_reply(f"calc.py\n```python\n{broken}```\n"))
    totem.server.enqueue(text_reply("calc.py\n```python\ndef double(x):\n    return x * 2\n```\n"))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config), "--json", "--yes", "The tests fail: fix calc.py")

    assert result.code == 0, result.stderr
    outputs = [(e["tool"], e["output"]) for e in result.of("toolEnd")]
    assert outputs[0] == ("write", "Unchanged: calc.py already holds what you sent.")
    assert outputs[1][0] == "bash" and "assert 5 == 6" in outputs[1][1]
    assert "assert 5 == 6" in totem.server.requests[1]["messages"][-1]["content"]  # the failure went back
    assert outputs[3][0] == "bash" and "1 passed" in outputs[3][1] and len(totem.server.requests) == 2
    assert (totem.project / "calc.py").read_text() == "def double(x):\n    return x * 2\n"


def test_a_file_block_stuck_repeating_itself_is_cut_before_it_closes(totem):
    (totem.project / "calc.py").write_text(CALC)
    looping = "calc.py\n```python\n" + "    total = total + values[0]\n" * 400  # the block never closes
    totem.server.enqueue(text_reply(looping, pieces=200))
    result = run_small(totem, "Add a sum function to calc.py")

    end = result.of("turnEnd")[0]
    assert end["stopReason"] == "guard", result.stdout[-2000:]
    assert "repeating" in result.of("notice")[-1]["message"]
    assert not result.of("toolStart") and (totem.project / "calc.py").read_text() == CALC


def test_a_block_naming_no_file_goes_to_the_one_named_file_that_is_not_a_test(totem):
    (totem.project / "calc.py").write_text(CALC)
    (totem.project / "test_calc.py").write_text("from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n")
    config = small_config(totem)
    config.write_text(config.read_text().replace("model =", 'test_command = ""\nmodel =', 1))
    totem.server.enqueue(text_reply("```python\ndef mul(a, b):\n    return a * b\n```\n"))
    result = totem.run(
        "run", "--cwd", str(totem.project), "--config", str(config), "--json", "--yes",
        "Add mul(a, b) to calc.py; the test in test_calc.py checks it.",
    )

    assert result.code == 0, result.stderr
    assert [(e["tool"], e["status"]) for e in result.of("toolEnd")] == [("write", "ok")]
    assert (totem.project / "calc.py").read_text() == CALC + "\n\ndef mul(a, b):\n    return a * b\n"


def test_a_block_naming_a_new_file_the_request_does_not_mention_goes_to_the_named_file(totem):
    (totem.project / "calc.py").write_text(CALC)
    config = small_config(totem)
    config.write_text(config.read_text().replace("model =", 'test_command = ""\nmodel =', 1))
    mul = "```python\ndef mul(a, b):\n    return a * b\n```\n"
    totem.server.enqueue(text_reply("mul.py\n" + mul))
    moved = totem.run("run", "--cwd", str(totem.project), "--config", str(config), "--json", "--yes", "In calc.py, add mul(a, b)")

    assert moved.code == 0, moved.stderr
    assert not (totem.project / "mul.py").exists()
    assert (totem.project / "calc.py").read_text() == CALC + "\n\ndef mul(a, b):\n    return a * b\n"
    # A new file the request mentions is created.
    totem.server.enqueue(text_reply("ops.py\n" + mul))
    created = totem.run("run", "--cwd", str(totem.project), "--config", str(config), "--json", "--yes",
                        "In calc.py, import mul from a new module ops.py")
    assert created.code == 0, created.stderr
    assert (totem.project / "ops.py").read_text() == "def mul(a, b):\n    return a * b\n"


def test_a_change_announced_but_not_made_is_asked_for_once_without_the_announcement(totem):
    (totem.project / "calc.py").write_text(CALC)
    totem.server.enqueue(text_reply("`calc.py` must be changed to add mul."))
    totem.server.enqueue(text_reply("calc.py\n```python\ndef mul(a, b):\n    return a * b\n```\n"))
    result = run_small(totem, "Add mul(a, b) to calc.py")

    assert result.code == 0, result.stderr
    assert [e["message"] for e in result.of("notice")] == ["The model changed no file; it is asked to make the change."]
    assert "def mul(a, b):" in (totem.project / "calc.py").read_text()
    # The announcement is left out of what the model sees next: the request, then the ask.
    (system, user) = totem.server.requests[1]["messages"]
    assert "must be changed" not in user["content"]
    assert user["content"].endswith("No file has been changed yet. The request is: Add mul(a, b) to calc.py\n"
                                    "Make the change now: write the file's path alone on a line, then its complete"
                                    " new content in a fenced code block.")
    export = totem.export(result.of("turnEnd")[0]["sessionId"])
    kept = [p for m in export["messages"] for p in m["parts"] if p["type"] == "text" and p["discarded"]]
    assert [p["data"]["text"] for p in kept] == ["`calc.py` must be changed to add mul."]  # kept in the store


def test_a_round_that_repeats_one_before_any_change_asks_for_the_change_instead(totem):
    (totem.project / "calc.py").write_text(CALC)
    ls = '```json\n{"name": "bash", "arguments": {"command": "ls"}}\n```\n'
    totem.server.enqueue(text_reply(ls))
    totem.server.enqueue(text_reply(ls))  # nothing new: the change is asked for
    totem.server.enqueue(text_reply("calc.py\n```python\ndef mul(a, b):\n    return a * b\n```\n"))
    result = run_small(totem, "Add mul(a, b) to calc.py")

    assert result.code == 0, result.stderr
    assert [e["message"] for e in result.of("notice")] == ["The model changed no file; it is asked to make the change."]
    assert "def mul(a, b):" in (totem.project / "calc.py").read_text()
    # The repeated round is left out of what the model sees next; the first one stays.
    messages = totem.server.requests[2]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1]["content"].startswith("The bash call returned:\ncalc.py")
    assert messages[-1]["content"].endswith("The request is: Add mul(a, b) to calc.py\nMake the change now: write the file's"
                                            " path alone on a line, then its complete new content in a fenced code block.")


def test_a_question_answered_by_repeated_reads_is_not_asked_for_a_change(totem):
    (totem.project / "data.txt").write_text("42\n")
    read = '```json\n{"name": "read", "arguments": {"path": "data.txt"}}\n```\n'
    totem.server.enqueue(text_reply(read))
    totem.server.enqueue(text_reply(read))
    totem.server.enqueue(text_reply("It holds 42."))
    result = run_small(totem, "What number is in the data file?")

    assert result.code == 0, result.stderr
    assert not result.of("notice") and result.of("turnEnd")[0]["text"].endswith("It holds 42.")


def test_a_name_imported_from_a_module_that_lacks_it_is_imported_from_its_one_home(totem):
    (totem.project / "utils.py").write_text("def plural(count, word):\n    return word\n")
    (totem.project / "dates.py").write_text("def parse_date(text):\n    return text\n")
    (totem.project / "main.py").write_text("from .utils import parse_date, plural\n\nprint(plural(parse_date('1'), 'day'))\n")
    config = small_config(totem)
    config.write_text(config.read_text().replace("model =", 'test_command = ""\nmodel =', 1))
    wrong = "from utils import parse_date, plural\n\nprint(plural(parse_date('1'), 'day'))\n"
    totem.server.enqueue(text_reply(f"main.py\n```python\n{wrong}```\n"))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config), "--json", "--yes", "Fix the imports in main.py")

    assert result.code == 0, result.stderr
    assert (totem.project / "main.py").read_text() == wrong.replace(
        "from utils import parse_date, plural\n", "from utils import plural\nfrom dates import parse_date\n"
    )
    (end,) = result.of("toolEnd")
    assert end["status"] == "ok" and "(Totem fixed an import in main.py: from dates import parse_date)" in end["output"]
    assert "Checks found" not in end["output"] and len(totem.server.requests) == 1  # a clean change: the turn is done
    # Undo takes back the model's write and the fix together.
    undone = totem.run("undo", "--session", result.of("turnEnd")[0]["sessionId"], "--cwd", str(totem.project),
                       "--config", str(config))
    assert undone.code == 0, undone.stderr
    assert (totem.project / "main.py").read_text().startswith("from .utils import parse_date, plural\n")


def test_a_change_the_model_cannot_get_past_the_tests_is_undone_and_the_request_tried_afresh(totem):
    broken = "def double(x):\n    return x + 2\n"
    (totem.project / "calc.py").write_text(broken)
    (totem.project / "test_calc.py").write_text("from calc import double\n\n\ndef test_double():\n    assert double(3) == 6\n")
    wrong = "calc.py\n```python\ndef double(x):\n    return x + x + 1\n```\n"
    totem.server.enqueue(text_reply("I fix double.\n\n" + wrong))
    totem.server.enqueue(text_reply(wrong))  # the failing change sent back as it is
    totem.server.enqueue(text_reply("I double x.\n\ncalc.py\n```python\ndef double(x):\n    return x * 2\n```\n"))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config_with_tests(totem)), "--json", "--yes", "Fix double in calc.py")

    assert result.code == 0, result.stderr
    assert (totem.project / "calc.py").read_text() == "def double(x):\n    return x * 2\n"
    outputs = [(e["tool"], e["output"].splitlines()[0]) for e in result.of("toolEnd")]
    assert [tool for tool, _ in outputs] == ["write", "bash", "write", "write", "bash"]
    assert outputs[2][1] == "Unchanged: calc.py already holds what you sent."
    notices = [e["message"] for e in result.of("notice")]
    assert notices == [
        "The model's attempt still fails the project's tests or checks; Totem put calc.py back and asks it afresh (attempt 2 of 4)."
    ]
    first, _, fresh = totem.server.requests
    # The same request again, nothing of the failed attempt in it, sampled with a seed.
    assert fresh["messages"] == first["messages"] and "broken" not in fresh["messages"][-1]["content"]
    assert (first["temperature"], "seed" in first) == (0, False)
    assert (fresh["temperature"], fresh["seed"]) == (0.7, 2)
    answer = result.of("turnEnd")[0]["text"]
    assert answer.startswith("I double x.") and "I fix double" not in answer
    # The next turn of the session sees the attempt that stood, not the one put back.
    totem.server.enqueue(text_reply("Done."))
    totem.run(
        "run", "--cwd", str(totem.project), "--config", str(config_with_tests(totem)), "--json", "--yes",
        "--session", result.events[0]["sessionId"], "Thanks",
    )
    history = "\n".join(m["content"] for m in totem.server.requests[-1]["messages"])
    assert "x * 2" in history and "x + x + 1" not in history


def test_fresh_attempts_stop_at_the_configured_count_and_the_last_attempt_stands(totem):
    (totem.project / "calc.py").write_text("def double(x):\n    return x + 2\n")
    (totem.project / "test_calc.py").write_text("from calc import double\n\n\ndef test_double():\n    assert double(3) == 6\n")
    for body in ("x + x + 1", "x - 1"):
        wrong = f"calc.py\n```python\ndef double(x):\n    return {body}\n```\n"
        totem.server.enqueue(text_reply(wrong))
        totem.server.enqueue(text_reply(wrong))
    totem.server.enqueue(text_reply("I could not make the test pass."))
    config = config_with_tests(totem, "fresh_attempts = 1\n")
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config), "--json", "--yes", "Fix double in calc.py")

    assert result.code == 0, result.stderr
    assert len(totem.server.requests) == 5  # no third attempt: the last one's echo meets the tests
    assert [e["message"] for e in result.of("notice")] == [
        "The model's attempt still fails the project's tests or checks; Totem put calc.py back and asks it afresh (attempt 2 of 2)."
    ]
    assert (totem.project / "calc.py").read_text() == "def double(x):\n    return x - 1\n"
    assert "assert 2 == 6" in totem.server.requests[-1]["messages"][-1]["content"]


def test_a_test_failing_elsewhere_does_not_undo_the_change(totem):
    (totem.project / "calc.py").write_text(CALC)
    (totem.project / "other.py").write_text("def one():\n    return 2\n")
    (totem.project / "test_other.py").write_text("from other import one\n\n\ndef test_one():\n    assert one() == 1\n")
    totem.server.enqueue(text_reply("calc.py\n```python\ndef mul(a, b):\n    return a * b\n```\n"))
    totem.server.enqueue(text_reply("I added mul; the failing test is about other.py."))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config_with_tests(totem)), "--json", "--yes", "Add mul(a, b) to calc.py")

    assert result.code == 0, result.stderr
    assert "def mul(a, b)" in (totem.project / "calc.py").read_text()
    assert "FAILED test_other.py::test_one" in result.of("toolEnd")[1]["output"]
    assert not result.of("notice") and len(totem.server.requests) == 2


def test_a_change_whose_check_findings_the_model_sends_back_is_tried_afresh(totem):
    (totem.project / "calc.py").write_text(CALC)
    (totem.project / "test_calc.py").write_text("from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n")
    broken = f"calc.py\n```python\n{CALC}\n\n{MUL}\n\n{JUNK}```\n"
    totem.server.enqueue(text_reply(broken))
    totem.server.enqueue(text_reply(broken))  # its findings not fixed: sent back as it is
    totem.server.enqueue(text_reply(f"calc.py\n```python\n{CALC}\n\n{MUL}```\n"))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config_with_tests(totem)), "--json", "--yes", "Add mul(a, b) to calc.py")

    assert result.code == 0, result.stderr
    first, echo, fresh = result.of("toolEnd")[:3]
    assert "F821 undefined name 'factor'" in first["output"] and echo["output"].startswith("Unchanged")
    assert "Checks found" not in fresh["output"] and "1 passed" in result.of("toolEnd")[3]["output"]
    assert [e["message"] for e in result.of("notice")] == [
        "The model's attempt still fails the project's tests or checks; Totem put calc.py back and asks it afresh (attempt 2 of 4)."
    ]
    assert "factor" not in (totem.project / "calc.py").read_text() and "def mul" in (totem.project / "calc.py").read_text()
    assert len(totem.server.requests) == 3


def test_files_sent_back_after_the_attempt_s_change_end_the_turn_once_the_tests_pass(totem):
    (totem.project / "calc.py").write_text(CALC)
    (totem.project / "test_calc.py").write_text("from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n")
    change = f"calc.py\n```python\n{CALC}\n\n{MUL}\n\n{JUNK}```\n"
    totem.server.enqueue(text_reply(change))
    totem.server.enqueue(text_reply(change))
    config = config_with_tests(totem, "fresh_attempts = 0\n")
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config), "--json", "--yes", "Add mul(a, b) to calc.py")

    assert result.code == 0, result.stderr
    assert [e["tool"] for e in result.of("toolEnd")] == ["write", "write", "bash"]
    assert "1 passed" in result.of("toolEnd")[2]["output"]
    assert len(totem.server.requests) == 2 and not result.of("notice")


def test_a_finding_a_later_file_of_the_same_answer_mends_does_not_hold_the_change_back(totem):
    (totem.project / "geometry.py").write_text("def calc_area(w, h):\n    return w * h\n")
    (totem.project / "report.py").write_text("from geometry import calc_area\n\n\ndef area(w, h):\n    return calc_area(w, h)\n")
    totem.server.enqueue(text_reply(
        "geometry.py\n```python\ndef rectangle_area(w, h):\n    return w * h\n```\n\n"
        "report.py\n```python\nfrom geometry import rectangle_area\n\n\ndef area(w, h):\n    return rectangle_area(w, h)\n```\n"
    ))
    result = run_small(totem, "Rename calc_area in geometry.py to rectangle_area, and update report.py.")

    assert result.code == 0, result.stderr
    geometry, report = result.of("toolEnd")
    assert "E0611 report.py:1 imports calc_area from geometry" in geometry["output"]
    assert "Checks found" not in report["output"]
    assert len(totem.server.requests) == 1 and not result.of("notice")
    assert "rectangle_area" in (totem.project / "report.py").read_text()


def test_a_file_left_with_findings_while_another_is_changed_keeps_the_attempt_from_ending(totem):
    (totem.project / "calc.py").write_text(CALC)
    (totem.project / "notes.md").write_text("# Notes\n")
    (totem.project / "test_calc.py").write_text("from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n")
    broken = f"calc.py\n```python\n{CALC}\n\n{MUL}\n\n{JUNK}```\n"
    totem.server.enqueue(text_reply(broken))
    # calc.py sent back as it is, beside a change to another file: its findings still stand.
    totem.server.enqueue(text_reply(broken + "\nnotes.md\n```markdown\n# Notes\n\nmul added.\n```\n"))
    totem.server.enqueue(text_reply(f"calc.py\n```python\n{CALC}\n\n{MUL}```\n"))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config_with_tests(totem)), "--json", "--yes", "Add mul(a, b) to calc.py")

    assert result.code == 0, result.stderr
    assert [e["tool"] for e in result.of("toolEnd")] == ["write", "write", "write", "write", "bash"]
    assert "factor" not in (totem.project / "calc.py").read_text() and len(totem.server.requests) == 3


def test_a_project_test_copied_into_the_module_is_taken_out(totem):
    (totem.project / "calc.py").write_text(CALC)
    (totem.project / "test_calc.py").write_text("from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n")
    copied = "def test_mul():\n    assert mul(2, 3) == 6\n"
    totem.server.enqueue(text_reply(f"calc.py\n```python\n{CALC}\n\n{MUL}\n\n{copied}```\n"))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config_with_tests(totem)), "--json", "--yes", "Add mul(a, b) to calc.py")

    assert result.code == 0, result.stderr
    write, tests = result.of("toolEnd")
    assert "(Totem took test_mul out of calc.py: a project test, which stays in its test file)" in write["output"]
    assert (totem.project / "calc.py").read_text() == f"{CALC}\n\n{MUL}"
    assert "1 passed" in tests["output"] and len(totem.server.requests) == 1


DOUBLE_TEST = "from calc import double\n\n\ndef test_double():\n    assert double(3) == 6\n"
WRONG_DOUBLE = "calc.py\n```python\ndef double(x):\n    return x + x + 1\n```\n"
RIGHT_DOUBLE = "calc.py\n```python\ndef double(x):\n    return x * 2\n```\n"


def json_call(name, **arguments):
    return "```json\n" + json.dumps({"name": name, "arguments": arguments}) + "\n```\n"


def test_a_fix_written_beside_another_call_is_not_put_back_for_the_failure_before_it(totem):
    (totem.project / "calc.py").write_text("def double(x):\n    return x + 2\n")
    (totem.project / "test_calc.py").write_text(DOUBLE_TEST)
    totem.server.enqueue(text_reply(WRONG_DOUBLE))
    totem.server.enqueue(text_reply(RIGHT_DOUBLE + "\n" + json_call("read", path="test_calc.py")))
    totem.server.enqueue(text_reply(RIGHT_DOUBLE))  # sent back as it is: the tests then pass
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config_with_tests(totem)), "--json", "--yes", "Fix double in calc.py")

    assert result.code == 0, result.stderr
    assert not result.of("notice") and len(totem.server.requests) == 3
    assert (totem.project / "calc.py").read_text() == "def double(x):\n    return x * 2\n"


def test_a_failure_in_a_test_file_whose_name_holds_the_changed_file_s_is_not_its_doing(totem):
    (totem.project / "utils.py").write_text("def shout(s):\n    return s\n")
    (totem.project / "test_string_utils.py").write_text("def test_upper():\n    assert 'a'.upper() == 'a'\n")  # fails already
    totem.server.enqueue(text_reply("utils.py\n```python\ndef shout(s):\n    return s.upper()\n```\n"))
    totem.server.enqueue(text_reply("utils.py\n```python\ndef shout(s):\n    return s.upper()\n```\n"))
    totem.server.enqueue(text_reply("shout now upper-cases; test_string_utils.py failed before."))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config_with_tests(totem)), "--json", "--yes", "In utils.py, make shout upper-case")

    assert result.code == 0, result.stderr
    assert not [n for n in result.of("notice") if "afresh" in n["message"]]
    assert "upper()" in (totem.project / "utils.py").read_text()


def test_calls_the_user_keeps_rejecting_end_the_turn_without_a_fresh_attempt(totem):
    (totem.project / "calc.py").write_text("def double(x):\n    return x + 2\n")
    (totem.project / "test_calc.py").write_text(DOUBLE_TEST)
    totem.server.enqueue(text_reply(WRONG_DOUBLE))
    for _ in range(3):
        totem.server.enqueue(text_reply(json_call("bash", command="rm test_calc.py")))
    config = config_with_tests(totem)
    config.write_text(config.read_text() + '[permission]\nbash = { "rm *" = "deny" }\n')
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config), "--json", "--yes", "Fix double in calc.py")

    assert result.of("turnEnd")[0]["stopReason"] == "guard"
    assert [n["message"] for n in result.of("notice")] == [
        "3 actions in a row were rejected or denied; the run stopped so it does not keep trying."
    ]
    assert len(totem.server.requests) == 4


def test_on_stdout_a_file_block_reads_as_one_line_saying_what_was_written(totem):
    (totem.project / "report.py").write_text("def total(items):\n    return sum(items)\n")
    block = "report.py\n```python\ndef total(items):\n    return sum(items)\n\n\ndef count(items):\n    return len(items)\n```\n"
    totem.server.enqueue(text_reply(f"Here's the updated code:\n\n{block}\nIt adds count.", pieces=11))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(small_config(totem)), "--yes", "Add count(items) to report.py")

    assert result.code == 0, result.stderr
    assert "def count" in (totem.project / "report.py").read_text()
    # The path line stands for the block the engine took out: what was written, in its place.
    assert result.stdout == "Here's the updated code:\n\n(report.py: 6 lines written)\n\nIt adds count.\n"
    assert "→ Write report.py" in result.stderr


def test_on_a_terminal_the_text_streams_and_a_file_block_reads_as_one_line(totem):
    (totem.project / "report.py").write_text("def total(items):\n    return sum(items)\n")
    block = "report.py\n```python\ndef count(items):\n    return len(items)\n```\n"
    totem.server.enqueue(text_reply(f"I add count.\n\n{block}\nDone.", pieces=7))
    leader, follower = pty.openpty()
    command = totem.command("run", "--cwd", str(totem.project), "--config", str(small_config(totem)), "--yes", "Add count(items) to report.py")
    proc = subprocess.Popen(command, stdout=follower, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=totem.env, text=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # closed when totem exits
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    shown = b"".join(chunks).decode().replace("\r\n", "\n")
    # A fragment merged into the file: the whole file is what was written.
    assert shown == "I add count.\n\n(report.py: 6 lines written)\n\nDone.\n", shown


def test_without_a_terminal_a_rejected_file_block_ends_the_turn_and_nothing_asks_again(totem):
    (totem.project / "calc.py").write_text(CALC)
    for _ in range(3):
        totem.server.enqueue(text_reply("calc.py\n```python\ndef mul(a, b):\n    return a * b\n```\n"))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(small_config(totem)), "--json", "Add mul(a, b) to calc.py")

    assert result.code == 3
    assert (totem.project / "calc.py").read_text() == CALC
    assert len(totem.server.requests) == 1  # not asked to make the change again
    assert [n["message"] for n in result.of("notice")] == [
        (
            "Write calc.py needs permission and there is no terminal to ask: the run stopped. "
            "Run it again with --yes to allow each change, or from a terminal to answer."
        )
    ]
    assert result.of("turnEnd")[0]["stopReason"] == "guard"


# Issue 34, hole 5: the files a small model's request names are shown with it, but never a
# secret file, whoever named it: the user, or an untrusted project's command.
ENV = "API_KEY=sk-live-hunter2\n"
KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"


def _secrets(totem) -> None:
    (totem.project / ".env").write_text(ENV)
    (totem.project / "server.key").write_text(KEY)
    (totem.project / "app.py").write_text("import os\nKEY = os.environ['API_KEY']\n")


def _sent(totem) -> str:
    return json.dumps(totem.server.requests)


def test_a_small_model_is_not_sent_the_secret_files_a_request_names(totem):
    _secrets(totem)
    totem.server.enqueue(text_reply("The key is read from the environment."))
    result = run_small(totem, "Check the API_KEY in .env and the key in server.key against app.py")

    assert result.code == 0, result.stderr
    sent = _sent(totem)
    assert "hunter2" not in sent and "PRIVATE KEY" not in sent and "MIIEvQ" not in sent
    assert "server.key is not shown here: the read tool asks the user before reading it." in sent
    assert "os.environ['API_KEY']" in sent  # app.py, named and not secret, is shown


def test_an_untrusted_projects_command_naming_secret_files_does_not_send_them(totem):
    _secrets(totem)
    commands = totem.project / ".totem" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review\n---\nReview .env and server.key and app.py for leaks.\n")
    totem.server.enqueue(text_reply("Reviewed."))
    result = run_small(totem, "/review")

    assert result.code == 0, result.stderr
    sent = _sent(totem)
    assert "Review .env and server.key" in sent  # the command's text was the request
    assert "hunter2" not in sent and "PRIVATE KEY" not in sent and "MIIEvQ" not in sent
