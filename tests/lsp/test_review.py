"""A permission answer that carries the change as the user reviewed it (``accepted``), through the
real ``totem lsp``: what the user took is what is applied, and the model is told what changed."""

from __future__ import annotations

import asyncio

from tests.support.model_server import text_reply, tool_reply

WAIT = 15.0

BEFORE = "".join(f"line {n}\n" for n in range(1, 21))
# The model's proposal changes line 2 and line 18: two hunks, far apart.
PROPOSED = BEFORE.replace("line 2\n", "line two\n").replace("line 18\n", "line eighteen\n")


async def chat(editor, text: str) -> object:
    return await asyncio.wait_for(editor.request("totem/chat", {"text": text}), WAIT)


def last_tool_message(request: dict) -> str:
    return [m for m in request["messages"] if m["role"] == "tool"][-1]["content"]


async def test_a_partial_accept_applies_only_the_hunk_taken(editor):
    (editor.project / "notes.txt").write_text(BEFORE)
    editor.model.enqueue(tool_reply([("read", {"path": "notes.txt"})]))
    editor.model.enqueue(tool_reply([("write", {"path": "notes.txt", "content": PROPOSED})]))
    editor.model.enqueue(text_reply("Done."))
    taken = BEFORE.replace("line 2\n", "line two\n")  # the first hunk taken, the second left
    uri = editor.uri("notes.txt")
    editor.permission_answers.append({"outcome": "allow_once", "accepted": [{"uri": uri, "text": taken}]})

    result = await chat(editor, "rename lines 2 and 18")

    assert result.stopReason == "finished"
    assert editor.permissions[0]["proposed"] == [{"uri": uri, "text": PROPOSED}]
    assert (editor.project / "notes.txt").read_text() == taken
    [end] = [e for e in editor.of("toolEnd") if e["tool"] == "write"]
    assert end["status"] == "ok" and end["changed"] == ["notes.txt"]
    told = last_tool_message(editor.model.requests[2])
    assert told == end["output"]
    assert "-line eighteen\n+line 18" in told  # the hunk left out, as a diff from the proposal
    assert "line two" not in told.split("```diff", 1)[1]  # the hunk taken is not in the diff


async def test_a_user_edited_proposal_is_applied_as_edited_and_the_model_is_told_the_diff(editor):
    (editor.project / "app.py").write_text("def greet():\n    return 'hi'\n")
    uri = await editor.open("app.py")
    proposal = "def greet():\n    return 'hello'\n"
    edited = "def greet(name):\n    return f'hello {name}'\n"
    edit = {"path": "app.py", "old_string": "return 'hi'", "new_string": "return 'hello'"}
    editor.model.enqueue(tool_reply([("edit", edit)]))
    editor.model.enqueue(tool_reply([("read", {"path": "app.py"})]))
    editor.model.enqueue(text_reply("Built on it."))
    editor.permission_answers.append({"outcome": "allow_once", "accepted": [{"uri": uri, "text": edited}]})

    result = await chat(editor, "make it say hello")

    assert result.stopReason == "finished"
    assert editor.permissions[0]["proposed"] == [{"uri": uri, "text": proposal}]
    assert editor.documents[uri] == edited  # applied through the editor, as the user wrote it
    told = last_tool_message(editor.model.requests[1])
    diff = told.split("```diff\n", 1)[1].split("```", 1)[0]
    assert diff.splitlines()[2:] == [
        "@@ -1,2 +1,2 @@", "-def greet():", "-    return 'hello'", "+def greet(name):", "+    return f'hello {name}'",
    ]
    # Freshness knows the new content: the next read is no stale-view refusal, and it sees the user's text.
    [read] = [e for e in editor.of("toolEnd") if e["tool"] == "read"]
    assert read["status"] == "ok" and "def greet(name):" in read["output"]


async def test_a_file_accepted_as_it_was_is_left_unchanged_and_one_left_out_is_taken_as_proposed(editor):
    (editor.project / "a.txt").write_text("a\n")
    (editor.project / "b.txt").write_text("b\n")
    patch = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n"
        "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b\n+B\n"
    )
    editor.model.enqueue(tool_reply([("patch", {"patch": patch})]))
    editor.model.enqueue(text_reply("ok"))
    editor.permission_answers.append({"outcome": "allow_once", "accepted": [{"uri": editor.uri("a.txt"), "text": "a\n"}]})

    await chat(editor, "capitalise both")

    assert (editor.project / "a.txt").read_text() == "a\n"
    assert (editor.project / "b.txt").read_text() == "B\n"
    [end] = editor.of("toolEnd")
    assert end["changed"] == ["b.txt"]
    assert "a.txt: none of your change was taken" in end["output"]
    assert "b.txt: taken as you proposed it" in end["output"]


async def test_an_accepted_file_that_was_not_proposed_is_a_malformed_answer(editor):
    (editor.project / "a.txt").write_text("a\n")
    editor.model.enqueue(tool_reply([("read", {"path": "a.txt"})]))
    editor.model.enqueue(tool_reply([("write", {"path": "a.txt", "content": "A\n"})]))
    editor.model.enqueue(text_reply("ok"))
    editor.permission_answers.append({"outcome": "allow_once", "accepted": [{"uri": editor.uri("other.txt"), "text": "x"}]})

    await chat(editor, "capitalise")

    assert (editor.project / "a.txt").read_text() == "a\n"
    assert not (editor.project / "other.txt").exists()
    [end] = [e for e in editor.of("toolEnd") if e["tool"] == "write"]
    assert end["status"] == "denied" and "not proposed" in end["output"]
