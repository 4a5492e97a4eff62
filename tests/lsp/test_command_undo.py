"""Undo of what a command changed, through the real language server (issue 19): the open
buffer of a file a command changed on disk shows the new content, and undo puts back both the
disk and the buffer."""

from __future__ import annotations

import asyncio

from tests.cli.test_command_undo import SED, git
from tests.lsp.conftest import to_dict
from tests.support.model_server import text_reply, tool_reply

WAIT = 30


async def test_undo_of_a_command_updates_the_open_buffer_and_the_disk(editor):
    git(editor.project, "init", "-q")
    f = editor.project / "f.txt"
    f.write_text("a line\n")
    uri = await editor.open("f.txt")
    editor.model.enqueue(tool_reply([("bash", {"command": SED})]))
    editor.model.enqueue(text_reply("Done."))
    editor.permission_answers.append({"outcome": "allow_once"})
    result = await asyncio.wait_for(editor.request("totem/chat", {"text": "change it"}), WAIT)
    assert result.stopReason == "finished"

    [end] = editor.of("toolEnd")
    assert sorted(end["changed"]) == ["f.txt", "new.txt"]
    assert f.read_text() == "b line\n"
    assert editor.documents[uri] == "b line\n"  # the buffer shows what the command wrote

    undone = to_dict(await asyncio.wait_for(editor.request("totem/undo", {"sessionId": result.sessionId}), WAIT))
    assert sorted(undone["files"], key=lambda o: o["path"]) == [
        {"path": "f.txt", "action": "restored"},
        {"path": "new.txt", "action": "deleted"},
    ]
    assert editor.documents[uri] == "a line\n"
    assert f.read_text() == "a line\n" and not (editor.project / "new.txt").exists()
