"""The project's own checks ([checks.<name>]) as published diagnostics, over the real server."""

from __future__ import annotations

import asyncio

import pytest_asyncio
from lsprotocol import types

from tests.lsp.conftest import start_editor
from tests.support.model_server import text_reply, tool_reply

TODO_CHECK = {
    "command": "awk '/TODO/ {print FILENAME \":\" NR \":1: warning: TODO left in the code\"}' {file}",
    "files": "*.py",
}
TOTEM = {"permission": True, "question": True, "trust": True, "events": True}
WAIT = 15.0


@pytest_asyncio.fixture
async def checked(tmp_path, model):
    """An editor whose settings declare the ``todo`` check."""
    editor = await start_editor(tmp_path, model, totem=TOTEM, init_options={"config": {"checks": {"todo": TODO_CHECK}}})
    yield editor
    await editor.client.shutdown_session()


async def diagnostics_for(editor, uri: str, predicate) -> list[types.Diagnostic]:
    """The diagnostics published for ``uri`` once they satisfy ``predicate``."""

    async def poll():
        while True:
            found = editor.client.diagnostics.get(uri)
            if found is not None and predicate(list(found)):
                return list(found)
            await asyncio.sleep(0.02)

    return await asyncio.wait_for(poll(), WAIT)


async def wait_for(condition) -> None:
    async def poll():
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), WAIT)


def save(editor, uri: str, text: str) -> None:
    (editor.project / uri.rsplit("/", 1)[-1]).write_text(text)
    editor.client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri), text=text)
    )


async def test_agent_edit_on_disk_publishes_check_findings(checked):
    editor = checked
    content = "x = 1\n# TODO: tidy up\ny = 2\n"
    editor.model.enqueue(tool_reply([("write", {"path": "a.py", "content": content})]))
    editor.model.enqueue(text_reply("Wrote it."))
    editor.permission_answers.append({"outcome": "allow_once"})

    result = await asyncio.wait_for(editor.request("totem/chat", {"text": "write a.py"}), WAIT)

    assert result.stopReason == "finished"
    assert (editor.project / "a.py").read_text() == content  # not open in the editor: written on disk
    assert editor.applied == []
    [end] = editor.of("toolEnd")
    assert end["status"] == "ok"
    assert "Checks found:" in end["output"]
    assert "a.py:2:1 todo TODO left in the code" in end["output"]
    # The model saw the findings too, in the tool result of its next request.
    tool_messages = [m for m in editor.model.requests[-1]["messages"] if m["role"] == "tool"]
    assert "a.py:2:1 todo TODO left in the code" in tool_messages[-1]["content"]

    uri = editor.uri("a.py")
    [diagnostic] = await diagnostics_for(editor, uri, lambda found: len(found) > 0)
    assert diagnostic.source == "todo"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.message == "TODO left in the code"
    assert diagnostic.range.start == types.Position(line=1, character=0)
    assert diagnostic.range.end.line == 1
    assert dict(diagnostic.data)["totem"] is True

    # The TODO goes away and the file is saved: the check runs again and finds nothing.
    clean = "x = 1\ny = 2\n"
    (editor.project / "a.py").write_text(clean)
    await editor.open("a.py", clean)
    editor.client.diagnostics.pop(uri, None)
    save(editor, uri, clean)
    assert await diagnostics_for(editor, uri, lambda found: found == []) == []


async def test_unsaved_buffer_is_checked_only_after_save(checked):
    editor = checked
    (editor.project / "a.py").write_text("x = 1\n")
    uri = await editor.open("a.py", "x = 1\nz = 3\n")  # unsaved changes: the buffer is not the disk
    await diagnostics_for(editor, uri, lambda found: found == [])  # what didOpen publishes
    editor.client.diagnostics.pop(uri, None)

    content = "x = 1\n# TODO: later\nz = 3\n"
    edit = {"path": "a.py", "old_string": "z = 3\n", "new_string": "# TODO: later\nz = 3\n"}
    editor.model.enqueue(tool_reply([("edit", edit)]))
    editor.model.enqueue(text_reply("Wrote it."))
    editor.permission_answers.append({"outcome": "allow_once"})
    result = await asyncio.wait_for(editor.request("totem/chat", {"text": "write a.py"}), WAIT)

    assert result.stopReason == "finished"
    assert editor.documents[uri] == content  # the edit went to the editor ...
    assert (editor.project / "a.py").read_text() == "x = 1\n"  # ... not to the disk
    [end] = editor.of("toolEnd")
    assert end["status"] == "ok", end["output"]
    assert "a.py has unsaved changes; checked after it is saved" in end["output"]
    assert "TODO left in the code" not in end["output"]

    # The check after the agent's edit is skipped: a note in the log, no external findings.
    await wait_for(lambda: any("a.py has unsaved changes" in m.message for m in editor.client.log_messages))
    assert await diagnostics_for(editor, uri, lambda found: True) == []

    # The editor (which sent the applied edit back as a didChange) saves: now the check runs.
    save(editor, uri, content)
    [diagnostic] = await diagnostics_for(editor, uri, lambda found: len(found) > 0)
    assert diagnostic.source == "todo"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.range.start.line == 1


async def test_check_from_the_user_config_runs_on_save(tmp_path, model):
    extra = "[checks.todo]\ncommand = \"\"\"" + TODO_CHECK["command"] + "\"\"\"\nfiles = \"*.py\"\n"
    editor = await start_editor(tmp_path, model, totem=TOTEM, extra_config=extra)
    try:
        text = "a = 1\nb = 2\n# TODO one\n# TODO two\n"
        (editor.project / "b.py").write_text(text)
        uri = await editor.open("b.py", text)
        save(editor, uri, text)
        found = await diagnostics_for(editor, uri, lambda found: len(found) > 0)
        assert [d.range.start.line for d in found] == [2, 3]
        assert {d.source for d in found} == {"todo"}
    finally:
        await editor.client.shutdown_session()


async def test_a_real_ruff_check_turns_into_diagnostics_after_an_agent_edit(tmp_path, model, ruff_on_path):
    ruff = {"command": "ruff check --no-cache --output-format=json {file}", "format": "ruff-json", "files": "*.py"}
    editor = await start_editor(tmp_path, model, totem=TOTEM, init_options={"config": {"checks": {"ruff": ruff}}})
    try:
        content = "import os\n\nvalue = 1\n"
        editor.model.enqueue(tool_reply([("write", {"path": "mod.py", "content": content})]))
        editor.model.enqueue(text_reply("Written."))
        editor.permission_answers.append({"outcome": "allow_once"})
        await editor.request("totem/chat", {"text": "write mod.py"})

        uri = editor.uri("mod.py")
        found = await diagnostics_for(editor, uri, lambda ds: any(d.code == "F401" for d in ds))
        unused = next(d for d in found if d.code == "F401")
        assert unused.source == "ruff" and unused.range.start == types.Position(line=0, character=7)
        assert "F401" in editor.of("toolEnd")[0]["output"]  # the model got the same finding
    finally:
        await editor.client.shutdown_session()
