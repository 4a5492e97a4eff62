"""totem/chat over the real language server: streaming, abort, permission, edits through the editor."""

from __future__ import annotations

import asyncio
import random

from lsprotocol import types

from tests.lsp.conftest import start_editor, to_dict
from tests.support.model_server import Reply, text_reply, tool_reply
from tests.support.processes import processes_with
from tests.support.reminder import sent_messages


async def eventually(predicate, timeout: float = 15.0) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)




async def test_initialize_advertises_the_totem_protocol(tmp_path, model):
    editor = await start_editor(tmp_path, model, totem={"events": True})
    try:
        info = editor.init_result
        assert info.capabilities.experimental == {"totem": {"protocolVersion": 1}}
        assert info.capabilities.text_document_sync.change == types.TextDocumentSyncKind.Incremental
        commands = set(info.capabilities.execute_command_provider.commands)
        assert {"totem.server.ask", "totem.server.abort", "totem.server.undo", "totem.server.redo"} <= commands
        assert info.capabilities.code_action_provider
    finally:
        await editor.client.shutdown_session()


async def test_a_streamed_turn_arrives_in_order_coalesced_and_answers(editor):
    text = "".join(f"word{n} " for n in range(300))
    editor.model.enqueue(text_reply(text, pieces=300, reasoning="Planning it.", usage=(11, 22)))
    result = await editor.request("totem/chat", {"text": "hi"})

    assert result.stopReason == "finished" and result.text == text
    kinds = [e["kind"] for e in editor.events]
    assert kinds[0] == "turnStart" and kinds[-1] == "turnEnd"
    assert kinds.index("reasoningDelta") < kinds.index("textDelta") < kinds.index("stepEnd")
    deltas = editor.of("textDelta")
    assert "".join(e["text"] for e in deltas) == text
    assert len(deltas) < 300  # coalesced: 300 deltas arrive in fewer notifications
    assert editor.of("stepEnd")[0]["usage"] == {"inputTokens": 11, "outputTokens": 22}
    assert all(e["sessionId"] == result.sessionId for e in editor.events)


async def test_permission_request_carries_the_diff_and_an_accepted_edit_lands_in_the_buffer(editor):
    (editor.project / "app.py").write_text("print('old')\n")
    uri = await editor.open("app.py")
    editor.model.enqueue(tool_reply([("read", {"path": "app.py"})]))
    editor.model.enqueue(tool_reply([("write", {"path": "app.py", "content": "print('new')\n"})]))
    editor.model.enqueue(text_reply("Changed it."))
    editor.permission_answers.append({"outcome": "allow_once"})

    result = await editor.request("totem/chat", {"text": "change app.py"})

    assert result.stopReason == "finished"
    asked = editor.permissions[0]
    assert asked["tool"] == "write" and asked["paths"] == ["app.py"]
    assert "-print('old')" in asked["diff"] and "+print('new')" in asked["diff"]
    assert asked["proposed"] == [{"uri": uri, "text": "print('new')\n"}]
    assert asked["sessionId"] == result.sessionId and asked["callId"] == editor.of("toolStart")[1]["callId"]
    # The edit went to the editor as a WorkspaceEdit on the open document, at its version.
    change = editor.applied[0].edit.document_changes[0]
    assert change.text_document.uri == uri and change.text_document.version == 1
    assert editor.documents[uri] == "print('new')\n"
    assert (editor.project / "app.py").read_text() == "print('old')\n"  # the buffer changed, not the disk


async def test_an_agent_edit_of_one_line_reaches_the_editor_as_an_edit_of_that_line_only(editor):
    text = "".join(f"value_{n} = {n}\n" for n in range(300))
    (editor.project / "big.py").write_text(text)
    uri = await editor.open("big.py")
    edit = {"path": "big.py", "old_string": "value_150 = 150\n", "new_string": "value_150 = 'one hundred fifty'\n"}
    editor.model.enqueue(tool_reply([("edit", edit)]))
    editor.model.enqueue(text_reply("Changed it."))
    editor.permission_answers.append({"outcome": "allow_once"})

    result = await editor.request("totem/chat", {"text": "change value_150"})

    assert result.stopReason == "finished"
    assert editor.of("toolEnd")[0]["status"] == "ok"
    [applied] = editor.applied
    [change] = applied.edit.document_changes
    assert change.text_document.uri == uri and change.text_document.version == 1
    [only] = change.edits  # the other 299 lines are not touched: cursor, marks and undo stay
    assert only.range == types.Range(start=types.Position(line=150, character=0), end=types.Position(line=151, character=0))
    assert only.new_text == "value_150 = 'one hundred fifty'\n"
    assert editor.documents[uri] == text.replace("value_150 = 150\n", "value_150 = 'one hundred fifty'\n")


async def test_a_rejected_edit_changes_nothing_and_the_model_gets_the_feedback(editor):
    editor.model.enqueue(tool_reply([("write", {"path": "new.txt", "content": "x"})]))
    editor.model.enqueue(text_reply("Understood."))
    editor.permission_answers.append({"outcome": "reject_once", "feedback": "use notes.txt instead"})
    result = await editor.request("totem/chat", {"text": "write it"})
    assert result.stopReason == "finished"
    assert not (editor.project / "new.txt").exists()
    [ended] = editor.of("toolEnd")
    assert ended["status"] == "denied" and ended["summary"] == "rejected"
    assert "use notes.txt instead" in sent_messages(editor.model.requests[1])[-1]["content"]
    # The feedback on its own, for the chat to show under the call; and kept for a reopened session.
    assert ended["feedback"] == "use notes.txt instead"
    session = to_dict(await editor.request("totem/session", {"sessionId": result.sessionId}))
    [stored] = [p for m in session["messages"] for p in m["parts"] if p["type"] == "tool"]
    assert stored["data"]["feedback"] == "use notes.txt instead"


async def test_a_call_allowed_or_rejected_without_words_carries_no_feedback(editor):
    editor.model.enqueue(tool_reply([("write", {"path": "a.txt", "content": "x"}), ("write", {"path": "b.txt", "content": "y"})]))
    editor.model.enqueue(text_reply("Done."))
    editor.permission_answers += [{"outcome": "allow_once"}, {"outcome": "reject_once"}]
    await editor.request("totem/chat", {"text": "write them"})
    assert [(e["status"], e["feedback"]) for e in editor.of("toolEnd")] == [("ok", None), ("denied", None)]


async def test_a_refused_key_says_which_provider_and_how_to_fix_it_live_and_stored(editor):
    editor.model.enqueue(Reply(status=401, body='{"error": {"message": "Incorrect API key provided"}}'))
    result = await editor.request("totem/chat", {"text": "hi"})
    assert result.stopReason == "error"
    [error] = editor.of("error")
    assert error["errorClass"] == "AuthenticationError" and "Incorrect API key provided" in error["message"]
    # No key anywhere for "sim": the hint names the provider, its table and the command.
    assert "sim" in error["hint"] and "totem auth set sim" in error["hint"] and "[providers.sim]" in error["hint"]
    session = to_dict(await editor.request("totem/session", {"sessionId": result.sessionId}))
    [stored] = [p for m in session["messages"] for p in m["parts"] if p["type"] == "error"]
    assert stored["data"]["errorClass"] == "AuthenticationError"
    assert stored["data"]["hint"] == error["hint"]


async def test_a_refused_key_from_the_config_is_named_as_the_one_to_correct(tmp_path, model):
    editor = await start_editor(tmp_path, model, totem={"events": True}, init_options={"config": {"providers": {"sim": {"kind": "openai", "base_url": model.base_url, "api_key": "sk-wrong"}}}})
    try:
        model.enqueue(Reply(status=401, body='{"error": {"message": "Incorrect API key provided"}}'))
        await editor.request("totem/chat", {"text": "hi"})
        [error] = editor.of("error")
        assert "api_key of [providers.sim]" in error["hint"] and "sk-wrong" not in error["hint"]
    finally:
        await editor.client.shutdown_session()


async def test_a_file_not_open_is_written_on_disk(editor):
    editor.model.enqueue(tool_reply([("write", {"path": "pkg/mod.py", "content": "x = 1\n"})]))
    editor.model.enqueue(text_reply("done"))
    editor.permission_answers.append({"outcome": "allow_once"})
    await editor.request("totem/chat", {"text": "write"})
    assert (editor.project / "pkg/mod.py").read_text() == "x = 1\n"
    assert editor.applied == []


async def test_an_edit_over_the_users_unsaved_typing_is_refused_as_stale(editor):
    (editor.project / "a.py").write_text("one\n")
    uri = await editor.open("a.py")
    editor.model.enqueue(tool_reply([("read", {"path": "a.py"})]))
    hold = tool_reply([("edit", {"path": "a.py", "old_string": "one", "new_string": "ONE"})])
    hold.delay = 0.5  # the user types while the model is still answering
    editor.model.enqueue(hold)
    editor.model.enqueue(text_reply("I will read it again."))
    chat = asyncio.ensure_future(editor.request("totem/chat", {"text": "capitalise"}))
    await eventually(lambda: len(editor.of("toolEnd")) == 1)
    editor.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=0, character=3), end=types.Position(line=0, character=3)),
                text=" two",
            )],
        )
    )
    result = await chat
    assert result.stopReason == "finished"
    end = editor.of("toolEnd")[1]
    assert end["status"] == "error" and "changed since you last read it" in end["output"]
    assert editor.permissions == [] and editor.applied == []


async def test_show_message_request_is_the_fallback_for_plain_clients(plain_editor):
    editor = plain_editor
    editor.show_answer = "Allow once"
    editor.model.enqueue(tool_reply([("write", {"path": "f.txt", "content": "ok"})]))
    editor.model.enqueue(text_reply("done"))
    result = await editor.request("totem/chat", {"text": "write"})
    assert result.stopReason == "finished"
    assert (editor.project / "f.txt").read_text() == "ok"
    shown = editor.shown[0]
    assert "Write f.txt" in shown.message or "Create f.txt" in shown.message
    assert [a.title for a in shown.actions] == ["Allow once", "Allow always", "Reject", "Reject always"]


async def test_cancel_request_aborts_the_turn_kills_its_processes_and_keeps_the_partial_answer(editor):
    marker = f"37.{random.randint(10**5, 10**6)}"  # unique, so no other run's process is mistaken for ours
    reply = tool_reply([("bash", {"command": f"sleep {marker}"})], text="Running the command now.")
    editor.model.enqueue(reply)
    editor.permission_answers.append({"outcome": "allow_once"})
    future = asyncio.ensure_future(
        editor.client.protocol.send_request_async("totem/chat", {"text": "run it"}, msg_id="chat-to-cancel")
    )
    await eventually(lambda: processes_with(f"sleep {marker}"))
    editor.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="chat-to-cancel"))
    result = await asyncio.wait_for(future, 20)

    assert result.stopReason == "aborted"
    await eventually(lambda: not processes_with(f"sleep {marker}"), timeout=10)
    end = editor.of("toolEnd")[0]
    assert end["status"] == "interrupted"
    session = await editor.request("totem/session", {"sessionId": result.sessionId})
    texts = [p.data.text for m in session.messages for p in m.parts if p.type == "text"]
    assert "Running the command now." in texts


async def test_totem_abort_stops_a_streaming_turn(editor):
    slow = text_reply("partial words", pieces=2)
    slow.events = slow.events[:3]
    slow.hold = 30
    editor.model.enqueue(slow)
    chat = asyncio.ensure_future(editor.request("totem/chat", {"text": "talk"}))
    await eventually(lambda: len(editor.of("textDelta")) >= 1 and "".join(e["text"] for e in editor.of("textDelta")) == "partial words")
    session_id = editor.events[0]["sessionId"]
    editor.client.protocol.notify("totem/abort", {"sessionId": session_id})
    result = await asyncio.wait_for(chat, 20)
    assert result.stopReason == "aborted" and result.text == "partial words"
    assert editor.events[-1]["kind"] == "turnEnd" and editor.events[-1]["stopReason"] == "aborted"


async def test_work_done_progress_is_reported_when_asked(editor):
    editor.model.enqueue(tool_reply([("read", {"path": "."})]))
    editor.model.enqueue(text_reply("ok"))
    token = "progress-1"
    editor.client.progress_reports[token] = []  # a client-made token needs no create request
    await editor.request("totem/chat", {"text": "look", "workDoneToken": token})
    values = [type(v).__name__ for v in editor.client.progress_reports.get(token, [])]
    assert values[0] == "WorkDoneProgressBegin" and values[-1] == "WorkDoneProgressEnd"
    assert "WorkDoneProgressReport" in values


async def test_questions_from_the_ask_tool_reach_the_editor(editor):
    editor.model.enqueue(tool_reply([("ask", {"question": "Which colour?", "options": ["red", "blue"]})]))
    editor.model.enqueue(text_reply("Blue it is."))
    result = await editor.request("totem/chat", {"text": "paint"})
    assert result.stopReason == "finished"
    assert editor.questions[0]["question"] == "Which colour?" and editor.questions[0]["options"] == ["red", "blue"]
    assert "blue" in sent_messages(editor.model.requests[1])[-1]["content"]
