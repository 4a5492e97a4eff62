"""run_script (code mode) through the real ``totem run``: one script reads and edits two files,
one permission question, one change set that ``totem undo`` takes back whole."""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from tests.support.model_server import text_reply, tool_reply

SCRIPT = textwrap.dedent("""\
    import totem
    for path in totem.files("*.py"):
        text = totem.read(path)
        totem.write(path, text.replace("old_name", "new_name"))
        print("renamed in", path)
""")


def test_a_script_edits_two_files_as_one_change_asked_once_and_undone_whole(totem):
    (totem.project / "a.py").write_text("def old_name():\n    return 1\n")
    (totem.project / "b.py").write_text("from a import old_name\n\nprint(old_name())\n")
    totem.server.enqueue(tool_reply([("run_script", {"script": SCRIPT})]))
    totem.server.enqueue(text_reply("Renamed."))
    result = totem.agent("rename old_name to new_name", extra=("--yes",))

    assert result.code == 0, result.stderr
    (end,) = [e for e in result.of("toolEnd") if e["tool"] == "run_script"]
    assert end["status"] == "ok"
    assert end["output"] == "renamed in a.py\nrenamed in b.py\n[Changes: edited a.py; edited b.py]"
    (permission,) = [e for e in result.of("permission") if e["callId"] == end["callId"]]
    assert permission["decision"] == "allow"
    assert (totem.project / "a.py").read_text() == "def new_name():\n    return 1\n"
    assert (totem.project / "b.py").read_text() == "from a import new_name\n\nprint(new_name())\n"
    # The model's next request holds what the script printed, and the changes.
    assert totem.server.requests[1]["messages"][-1]["content"] == end["output"]

    undone = totem.run("undo", "--cwd", str(totem.project), "--config", str(totem.config))
    assert undone.code == 0, undone.stderr
    assert "restored\ta.py" in undone.stdout and "restored\tb.py" in undone.stdout
    assert "old_name" in (totem.project / "a.py").read_text() and "old_name" in (totem.project / "b.py").read_text()


TESTED = textwrap.dedent("""\
    import totem
    totem.edit("calc.py", "a - b", "a + b")
    result = totem.run("python3 -c 'import calc; print(calc.add(2, 3))' > RESULT.txt")
    print("exit", result["exit_code"], totem.read("RESULT.txt").strip())
""")


@pytest.mark.parametrize(("sandbox", "decided"), [
    # In the sandbox the command runs over the staged edit; then the one change set is asked.
    ("auto", [("bash", "allow"), ("edit", "allow")]),
    # Without it the edit is first written (asked), so the command sees it; what the command
    # wrote is taken in as bash's is (here by the git capture); nothing is left to ask at the end.
    ("never", [("edit", "allow"), ("bash", "allow"), ("read", "allow")]),
])
def test_a_script_that_edits_and_runs_a_command_is_undone_whole_in_the_sandbox_or_not(totem, sandbox, decided):
    totem.config.write_text(f'sandbox = "{sandbox}"\n' + totem.config.read_text())
    (totem.project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=totem.project, check=True)
    totem.server.enqueue(tool_reply([("run_script", {"script": TESTED})]))
    totem.server.enqueue(text_reply("Fixed."))
    result = totem.agent("fix add", extra=("--yes",))

    assert result.code == 0, result.stderr
    (end,) = [e for e in result.of("toolEnd") if e["tool"] == "run_script"]
    assert end["status"] == "ok" and "exit 0 5" in end["output"], end
    permissions = [e for e in result.of("permission") if e["callId"] == end["callId"]]
    assert [(p["rule"]["permission"], p["decision"]) for p in permissions] == decided
    assert (totem.project / "RESULT.txt").read_text() == "5\n"
    assert "a + b" in (totem.project / "calc.py").read_text()

    undone = totem.run("undo", "--cwd", str(totem.project), "--config", str(totem.config))
    assert undone.code == 0, undone.stderr
    assert (totem.project / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert not (totem.project / "RESULT.txt").exists()
