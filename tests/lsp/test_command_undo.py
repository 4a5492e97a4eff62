"""Undo of what a command changed, through the real language server (issue 19): the open
buffer of a file a command changed on disk shows the new content, and undo puts back both the
disk and the buffer."""

from __future__ import annotations

import asyncio

from tests.cli.test_command_undo import SED, git, repository
from tests.lsp.conftest import start_editor, to_dict
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


async def test_undo_of_the_second_command_puts_back_what_the_user_left_between_the_two(tmp_path, model):
    # Without the sandbox: the git capture, whose watch of the project spares a before-pass only
    # when nothing changed since the last capture (worktree_capture.py, tree_watch.py).
    editor = await start_editor(tmp_path, model, totem={"permission": True, "events": True}, extra_config='sandbox = "never"\n')
    try:
        repository(editor.project)
        f = editor.project / "f.txt"
        first = await _bash(editor, "sed -i s/a/b/ f.txt")
        assert f.read_text() == "b line\n"

        f.write_text("the user's line\n")  # outside any command, between two turns
        await _bash(editor, "sed -i s/user/agent/ f.txt", session=first.sessionId)
        assert f.read_text() == "the agent's line\n"

        undone = to_dict(await asyncio.wait_for(editor.request("totem/undo", {"sessionId": first.sessionId}), WAIT))
        assert undone["files"] == [{"path": "f.txt", "action": "restored"}]
        assert f.read_text() == "the user's line\n"
    finally:
        await editor.client.shutdown_session()


async def _bash(editor, command: str, session: str | None = None):
    editor.model.enqueue(tool_reply([("bash", {"command": command})]))
    editor.model.enqueue(text_reply("Done."))
    editor.permission_answers.append({"outcome": "allow_once"})
    params = {"text": "change it"} | ({"sessionId": session} if session else {})
    result = await asyncio.wait_for(editor.request("totem/chat", params), WAIT)
    assert result.stopReason == "finished"
    return result
