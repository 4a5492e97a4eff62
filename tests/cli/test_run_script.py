"""run_script (code mode) through the real ``totem run``: one script reads and edits two files,
one permission question, one change set that ``totem undo`` takes back whole."""

from __future__ import annotations

import textwrap

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
