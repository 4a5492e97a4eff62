"""Mentions in a chat message and totem/complete, through the real ``totem lsp``: ``@path``,
``@path#L10-20``, ``#buffer``, ``#selection``, ``#diagnostics`` become context blocks the model
receives, as ``context`` does; completion answers for them and for slash commands."""

from __future__ import annotations

import asyncio

from tests.lsp.conftest import to_dict
from tests.support.model_server import text_reply, tool_reply
from tests.support.reminder import sent_messages

WAIT = 15.0
APP = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


async def call(editor, method: str, params) -> dict:
    return to_dict(await asyncio.wait_for(editor.request(method, params), WAIT))


def last_user_text(editor) -> str:
    return [m for m in sent_messages(editor.model.requests[-1]) if m["role"] == "user"][-1]["content"]


async def request_part(editor, session_id: str) -> dict:
    session = await call(editor, "totem/session", {"sessionId": session_id})
    return next(p for p in session["messages"][-2]["parts"] if p["type"] == "text")["data"]


async def test_a_file_mention_attaches_the_buffer_and_the_chat_keeps_what_was_typed(editor):
    (editor.project / "src").mkdir()
    (editor.project / "src/app.py").write_text(APP)
    unsaved = APP.replace("a + b", "a + b  # unsaved")
    await editor.open("src/app.py", unsaved)
    editor.model.enqueue(text_reply("Seen."))
    typed = "What does @src/app.py do? And @src/app.py#L5-6, please."

    result = await call(editor, "totem/chat", {"text": typed})

    sent = last_user_text(editor)
    assert sent.startswith(f'<context file="src/app.py">\n{unsaved.rstrip()}\n</context>\n\n')  # buffer first
    assert '<context file="src/app.py" lines="5-6">\ndef sub(a, b):\n    return a - b\n</context>' in sent
    assert sent.endswith(f"\n\n{typed}")
    data = await request_part(editor, result["sessionId"])
    assert data["typed"] == typed
    assert data["attachments"] == [
        {"kind": "file", "path": "src/app.py", "mention": "@src/app.py"},
        {"kind": "file", "path": "src/app.py", "lines": [5, 6], "mention": "@src/app.py#L5-6"},
    ]


async def test_a_whole_file_mentioned_counts_as_read(editor):
    (editor.project / "notes.txt").write_text("old\n")
    editor.model.enqueue(tool_reply([("write", {"path": "notes.txt", "content": "new\n"})]))
    editor.model.enqueue(text_reply("Rewrote it."))
    editor.permission_answers.append({"outcome": "allow_once"})
    await call(editor, "totem/chat", {"text": "rewrite @notes.txt"})
    [end] = editor.of("toolEnd")
    assert end["status"] == "ok", end["output"]  # no "read it first": it was shown with the request
    assert (editor.project / "notes.txt").read_text() == "new\n"


async def test_editor_mentions_name_the_document_the_editor_shows(editor):
    (editor.project / "app.py").write_text(APP)
    uri = await editor.open("app.py")
    editor.model.enqueue(text_reply("ok"))
    state = {
        "uri": uri,
        "range": {"start": {"line": 4, "character": 0}, "end": {"line": 6, "character": 0}},
        "diagnostics": [{"range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 10}},
                         "message": "Return type unknown", "severity": 2, "code": "R1", "source": "pyright"}],
    }
    await call(editor, "totem/chat", {"text": "#selection vs #buffer, and fix #diagnostics", "editor": state})
    sent = last_user_text(editor)
    blocks = sent.split("\n\n<context ")
    assert blocks[0] == '<context file="app.py" lines="5-6">\ndef sub(a, b):\n    return a - b\n</context>'
    assert blocks[1].startswith('file="app.py">\ndef add(a, b):')
    assert blocks[2].startswith('file="app.py" diagnostics="1">\n2:5 warning R1: Return type unknown (pyright)\n</context>')
    assert "file=" not in sent.split("</context>")[-1]  # the typed text last, nothing about a context block


async def test_mentions_that_name_nothing_readable_attach_nothing(editor):
    (editor.project.parent / "secret.txt").write_text("outside\n")
    editor.model.enqueue(text_reply("ok"))
    typed = "see @../secret.txt and @missing.py and #buffer, mail me@example.com"
    result = await call(editor, "totem/chat", {"text": typed})
    assert last_user_text(editor) == typed
    assert "attachments" not in await request_part(editor, result["sessionId"])


async def test_completion_of_files_editor_mentions_and_commands(editor):
    (editor.project / "src").mkdir()
    for name in ("src/app.py", "src/apply.py", "readme.md", "zapp.txt"):
        (editor.project / name).write_text("x\n")
    await editor.open("src/apply.py")

    files = await call(editor, "totem/complete", {"text": "look at @ap", "position": 11})
    assert files["start"] == 8 and files["end"] == 11
    # By how well they match (the name's start, then anywhere), open buffers first among equals.
    assert [i["label"] for i in files["items"]] == ["src/apply.py", "src/app.py", "zapp.txt"]
    assert files["items"][0]["detail"] == "open"
    assert files["items"][1] == {"label": "src/app.py", "kind": "file", "insertText": "@src/app.py"}

    # Offsets are UTF-16: the emoji before the word counts two.
    emoji = await call(editor, "totem/complete", {"text": "\U0001F600 #se", "position": 6})
    assert emoji["start"] == 3 and [i["label"] for i in emoji["items"]] == ["#selection"]
    assert emoji["items"][0]["kind"] == "buffer"

    commands = await call(editor, "totem/complete", {"text": "/un", "position": 3})
    assert [(i["label"], i["kind"], i["insertText"]) for i in commands["items"]] == [("/undo", "command", "/undo ")]
    assert (await call(editor, "totem/complete", {"text": "say /un", "position": 7}))["items"] == []
    assert (await call(editor, "totem/complete", {"text": "plain words", "position": 11}))["items"] == []
