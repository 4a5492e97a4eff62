"""Sessions, models, busy sessions, undo and redo over the real language server."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import start_editor, to_dict
from tests.support.model_server import Reply, chunk, text_reply, tool_reply
from tests.support.reminder import sent_messages

WAIT = 15.0


async def call(editor, method: str, params) -> object:
    return to_dict(await asyncio.wait_for(editor.request(method, params), WAIT))


async def wait_for(condition) -> None:
    async def poll():
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), WAIT)


async def test_sessions_list_and_session_messages(editor):
    # The first try is cut mid-stream, after some text: retried, its parts kept but discarded.
    cut = text_reply("Partial answer that never ends", pieces=3)
    editor.model.enqueue(Reply(events=cut.events, cut_after=3))
    editor.model.enqueue(text_reply("The whole answer."))

    result = await asyncio.wait_for(editor.request("totem/chat", {"text": "hello there"}), WAIT)
    assert result.stopReason == "finished"
    assert result.text == "The whole answer."
    assert len(editor.model.requests) == 2
    session_id = result.sessionId

    [listed] = await call(editor, "totem/sessions", None)
    assert set(listed) == {"sessionId", "title", "model", "mode", "createdAt", "updatedAt"}
    assert listed["sessionId"] == session_id
    assert listed["model"] == "sim/test-model"
    assert isinstance(listed["title"], str)
    assert listed["createdAt"] <= listed["updatedAt"]

    session = await call(editor, "totem/session", {"sessionId": session_id})
    assert session["sessionId"] == session_id
    roles = [m["role"] for m in session["messages"]]
    assert roles[0] == "user"
    assert "assistant" in roles
    user_text = [p for p in session["messages"][0]["parts"] if p["type"] == "text"]
    assert "hello there" in user_text[0]["data"]["text"]
    texts = [p for m in session["messages"] if m["role"] == "assistant" for p in m["parts"] if p["type"] == "text"]
    live = [p for p in texts if not p["discarded"]]
    discarded = [p for p in texts if p["discarded"]]
    assert [p["data"]["text"] for p in live] == ["The whole answer."]
    assert discarded and discarded[0]["data"]["text"].startswith("Partial")


async def test_sessions_lists_each_chat(editor):
    assert await call(editor, "totem/sessions", None) == []
    editor.model.enqueue(text_reply("one"))
    first = await asyncio.wait_for(editor.request("totem/chat", {"text": "one"}), WAIT)
    editor.model.enqueue(text_reply("two"))
    second = await asyncio.wait_for(editor.request("totem/chat", {"text": "two"}), WAIT)
    assert first.sessionId != second.sessionId
    listed = await call(editor, "totem/sessions", None)
    assert {s["sessionId"] for s in listed} == {first.sessionId, second.sessionId}


async def test_session_unknown_id_is_an_error(editor):
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(editor.request("totem/session", {"sessionId": "ses_nope"}), WAIT)
    assert "ses_nope" in str(caught.value)


async def test_models_and_set_model(editor):
    editor.model.models = [{"id": "test-model", "object": "model"}, {"id": "other-model", "object": "model"}]
    models = await call(editor, "totem/models", None)
    by_id = {m["id"]: m for m in models}
    assert {"sim/test-model", "sim/other-model"} <= set(by_id)
    assert by_id["sim/test-model"]["provider"] == "sim"
    # The config's model is the one new sessions use: a client names it before the first turn.
    assert by_id["sim/test-model"]["default"] is True
    assert by_id["sim/other-model"]["default"] is False

    editor.model.enqueue(text_reply("hi"))
    result = await asyncio.wait_for(editor.request("totem/chat", {"text": "hi"}), WAIT)
    session_id = result.sessionId

    changed = await call(editor, "totem/setModel", {"sessionId": session_id, "model": "sim/other-model"})
    assert changed == {"model": "sim/other-model"}
    [listed] = await call(editor, "totem/sessions", None)
    assert listed["model"] == "sim/other-model"

    # The next turn of that session asks the new model.
    editor.model.enqueue(text_reply("again", model="other-model"))
    await asyncio.wait_for(editor.request("totem/chat", {"text": "again", "sessionId": session_id}), WAIT)
    assert editor.model.requests[-1]["model"] == "other-model"

    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(editor.request("totem/setModel", {"sessionId": session_id, "model": "nowhere/some-model"}), WAIT)
    assert "nowhere" in str(caught.value)
    [listed] = await call(editor, "totem/sessions", None)
    assert listed["model"] == "sim/other-model"  # unchanged

    # Without a session: the model for new sessions, and now the default.
    await call(editor, "totem/setModel", {"model": "sim/other-model"})
    by_id = {m["id"]: m for m in await call(editor, "totem/models", None)}
    assert by_id["sim/other-model"]["default"] is True
    assert by_id["sim/test-model"]["default"] is False


async def test_models_say_what_the_configs_models_entry_knows(tmp_path, model):
    """A local server reports no window and no vision; the user's [models] entry does, and the
    model list the editors read (VS Code's "Image… (vision unknown)") says what it says."""
    model.models = [{"id": "test-model", "object": "model"}, {"id": "other-model", "object": "model"}]
    editor = await start_editor(tmp_path, model, extra_config='[models."sim/test-model"]\ncontext_window = 32768\nvision = true\n')
    try:
        by_id = {m["id"]: m for m in await call(editor, "totem/models", None)}
        assert (by_id["sim/test-model"]["vision"], by_id["sim/test-model"]["contextWindow"]) == (True, 32768)
        assert (by_id["sim/other-model"]["vision"], by_id["sim/other-model"]["contextWindow"]) == (None, None)
    finally:
        await editor.client.shutdown_session()


async def test_a_busy_session_refuses_a_second_turn(editor):
    editor.model.enqueue(Reply(events=[chunk({"role": "assistant", "content": ""}), chunk({"content": "Thinking"})], hold=30))
    first = asyncio.ensure_future(editor.request("totem/chat", {"text": "take your time"}))
    await wait_for(lambda: editor.of("turnStart") and editor.model.requests)
    session_id = editor.of("turnStart")[0]["sessionId"]

    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(editor.request("totem/chat", {"text": "and now?", "sessionId": session_id}), WAIT)
    assert caught.value.code == -32001
    assert "busy" in str(caught.value)
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(editor.request("totem/undo", {"sessionId": session_id}), WAIT)
    assert caught.value.code == -32001
    assert len(editor.model.requests) == 1  # the refused turn never reached the model

    assert await call(editor, "totem/abort", {"sessionId": session_id}) is None
    result = await asyncio.wait_for(first, WAIT)
    assert result.stopReason == "aborted"
    assert result.sessionId == session_id

    # Once the turn has ended the session takes a new one.
    editor.model.enqueue(text_reply("Now I can."))
    result = await asyncio.wait_for(editor.request("totem/chat", {"text": "and now?", "sessionId": session_id}), WAIT)
    assert result.stopReason == "finished"


async def test_undo_and_redo_restore_files_on_disk(editor):
    a = editor.project / "a.py"
    a.write_text("x = 1\n")
    b = editor.project / "b.py"
    editor.model.enqueue(
        tool_reply([
            ("edit", {"path": "a.py", "old_string": "x = 1\n", "new_string": "x = 2\n"}),
            ("write", {"path": "b.py", "content": "print('new')\n"}),
        ])
    )
    editor.model.enqueue(text_reply("Done."))
    editor.permission_answers += [{"outcome": "allow_once"}, {"outcome": "allow_once"}]
    result = await asyncio.wait_for(editor.request("totem/chat", {"text": "change things"}), WAIT)
    assert result.stopReason == "finished"
    assert a.read_text() == "x = 2\n"
    assert b.read_text() == "print('new')\n"
    session_id = result.sessionId

    undone = await call(editor, "totem/undo", {"sessionId": session_id})
    assert sorted(undone["files"], key=lambda f: f["path"]) == [
        {"path": "a.py", "action": "restored"},
        {"path": "b.py", "action": "deleted"},
    ]
    assert a.read_text() == "x = 1\n"
    assert not b.exists()

    redone = await call(editor, "totem/redo", {"sessionId": session_id})
    assert sorted(redone["files"], key=lambda f: f["path"]) == [
        {"path": "a.py", "action": "restored"},
        {"path": "b.py", "action": "restored"},
    ]
    assert a.read_text() == "x = 2\n"
    assert b.read_text() == "print('new')\n"

    # The same through workspace/executeCommand.
    command = types.ExecuteCommandParams(command="totem.server.undo", arguments=[{"sessionId": session_id}])
    undone = to_dict(await asyncio.wait_for(editor.client.workspace_execute_command_async(command), WAIT))
    assert {f["path"] for f in undone["files"]} == {"a.py", "b.py"}
    assert a.read_text() == "x = 1\n"
    assert not b.exists()


async def test_after_undo_the_agents_next_edit_of_the_file_succeeds_and_the_model_is_told(editor):
    """Issue 25, item 7: Totem's own undo is not an outside change of the file."""
    (editor.project / "app.py").write_text("x = 1\n")
    uri = await editor.open("app.py")
    editor.model.enqueue(tool_reply([("edit", {"path": "app.py", "old_string": "x = 1\n", "new_string": "x = 2\n"})]))
    editor.model.enqueue(text_reply("Set to 2."))
    editor.permission_answers.append({"outcome": "allow_once"})
    first = await asyncio.wait_for(editor.request("totem/chat", {"text": "set x to 2"}), WAIT)
    assert editor.documents[uri] == "x = 2\n"

    undone = await call(editor, "totem/undo", {"sessionId": first.sessionId})
    assert undone["files"] == [{"path": "app.py", "action": "restored"}]
    assert editor.documents[uri] == "x = 1\n"  # through the editor: the open buffer

    editor.model.enqueue(tool_reply([("edit", {"path": "app.py", "old_string": "x = 1\n", "new_string": "x = 3\n"})]))
    editor.model.enqueue(text_reply("Set to 3."))
    editor.permission_answers.append({"outcome": "allow_once"})
    editor.events.clear()
    second = await asyncio.wait_for(editor.request("totem/chat", {"text": "set x to 3", "sessionId": first.sessionId}), WAIT)
    assert second.stopReason == "finished"
    [ended] = editor.of("toolEnd")
    assert ended["status"] == "ok", ended["output"]
    assert editor.documents[uri] == "x = 3\n"
    # The model read, beside the request, which file the undo put back.
    request = sent_messages(editor.model.requests[-2])[-1]["content"]
    assert "undid or redid" in request and "app.py" in request and request.endswith("set x to 3")
    # Told once: the turn after does not repeat it.
    editor.model.enqueue(text_reply("Nothing to do."))
    await asyncio.wait_for(editor.request("totem/chat", {"text": "thanks", "sessionId": first.sessionId}), WAIT)
    assert sent_messages(editor.model.requests[-1])[-1]["content"] == "thanks"


async def test_after_redo_the_agents_next_edit_of_the_file_succeeds(editor):
    a = editor.project / "a.py"
    a.write_text("x = 1\n")
    editor.model.enqueue(tool_reply([("edit", {"path": "a.py", "old_string": "x = 1\n", "new_string": "x = 2\n"})]))
    editor.model.enqueue(text_reply("Set to 2."))
    editor.permission_answers.append({"outcome": "allow_once"})
    first = await asyncio.wait_for(editor.request("totem/chat", {"text": "set x to 2"}), WAIT)
    await call(editor, "totem/undo", {"sessionId": first.sessionId})
    # The agent reads the undone file (it knows x = 1 now); a read changes nothing, so redo stays.
    editor.model.enqueue(tool_reply([("read", {"path": "a.py"})]))
    editor.model.enqueue(text_reply("It is 1."))
    await asyncio.wait_for(editor.request("totem/chat", {"text": "what is x?", "sessionId": first.sessionId}), WAIT)
    redone = await call(editor, "totem/redo", {"sessionId": first.sessionId})
    assert redone["files"] == [{"path": "a.py", "action": "restored"}]
    assert a.read_text() == "x = 2\n"
    editor.model.enqueue(tool_reply([("edit", {"path": "a.py", "old_string": "x = 2\n", "new_string": "x = 4\n"})]))
    editor.model.enqueue(text_reply("Set to 4."))
    editor.permission_answers.append({"outcome": "allow_once"})
    editor.events.clear()
    await asyncio.wait_for(editor.request("totem/chat", {"text": "set x to 4", "sessionId": first.sessionId}), WAIT)
    assert editor.of("toolEnd")[0]["status"] == "ok", editor.of("toolEnd")[0]["output"]
    assert a.read_text() == "x = 4\n"


async def test_undo_of_an_unknown_session_is_an_error(editor):
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(editor.request("totem/undo", {"sessionId": "ses_nope"}), WAIT)
    assert "ses_nope" in str(caught.value)


async def test_a_session_is_titled_by_what_the_user_typed_not_by_its_context(editor):
    (editor.project / "a.py").write_text("x = 1\n")
    uri = await editor.open("a.py")
    editor.model.enqueue(text_reply("It sets x."))
    context = {"uri": uri, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}}
    result = await editor.request("totem/chat", {"text": "what does this do?", "context": context})
    sessions = [to_dict(s) for s in await editor.request("totem/sessions", None)]
    titled = next(s for s in sessions if s["sessionId"] == result.sessionId)
    assert titled["title"] == "what does this do?"
    assert "<context" in sent_messages(editor.model.requests[0])[-1]["content"]


async def test_initialization_options_of_the_wrong_type_are_ignored_and_logged(tmp_path, model):
    totem = {"permission": True, "question": True, "trust": True, "events": True}
    editor = await start_editor(tmp_path, model, totem=totem, init_options={"model": 5, "config": {"max_steps": 40}})
    try:
        assert any(
            m.message == "initializationOptions.model: expected a string, got int; ignored" for m in editor.client.log_messages
        )
        model.enqueue(text_reply("hello"))
        result = await editor.request("totem/chat", {"text": "hi"})
        assert result.stopReason == "finished"
        assert editor.of("turnStart")[0]["model"] == "sim/test-model"  # the config's model, not 5
    finally:
        await editor.client.shutdown_session()
