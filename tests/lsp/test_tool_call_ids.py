"""A tool-call id that is not a string, or a lone surrogate, never poisons a session (issue 16, items 7, 8).

``"id": 12345`` in an OpenAI-compatible stream ended the turn with a ValidationError, stored an
integer ``callId``, and every later turn of that session failed before calling the model.
"""

from __future__ import annotations

import pytest

from tests.support.model_server import text_reply, tool_reply


def _with_call_id(reply, call_id):
    for event in reply.events:
        for choice in event.get("choices", []) if isinstance(event, dict) else []:
            for call in choice["delta"].get("tool_calls", []):
                if "id" in call:
                    if call_id is None:
                        del call["id"]
                    else:
                        call["id"] = call_id
    return reply


@pytest.mark.parametrize("call_id", [12345, None, {"a": 1}])
async def test_a_session_goes_on_after_a_call_id_that_is_not_a_string(editor, call_id):
    (editor.project / "a.txt").write_text("hello\n")
    editor.model.enqueue(_with_call_id(tool_reply([("read", {"path": "a.txt"})]), call_id))
    editor.model.enqueue(text_reply("Read it."))
    first = await editor.request("totem/chat", {"text": "read a.txt"})
    assert first.stopReason == "finished" and first.text == "Read it."

    editor.model.enqueue(text_reply("Still here."))
    second = await editor.request("totem/chat", {"text": "again", "sessionId": first.sessionId})
    assert second.stopReason == "finished" and second.text == "Still here."
    sent = editor.model.requests[-1]["messages"]
    ids = [call["id"] for m in sent for call in m.get("tool_calls", [])]
    assert ids and all(isinstance(i, str) and i for i in ids)
    if isinstance(call_id, int | float) and not isinstance(call_id, bool):
        assert ids == [str(call_id)]


async def test_a_lone_surrogate_in_a_text_delta_or_in_arguments_does_not_end_the_turn(editor):
    # Issue 16, item 8: "A\udcffB" raised UnicodeEncodeError in the store and the turn was lost.
    (editor.project / "a.txt").write_text("hello\n")
    editor.model.enqueue(tool_reply([("read", {"path": "a.txt", "note": "x\ud800y"})], text="A\udcffB"))
    editor.model.enqueue(text_reply("Done \udcff."))
    first = await editor.request("totem/chat", {"text": "read a.txt"})
    assert first.stopReason == "finished"
    editor.model.enqueue(text_reply("Still here."))
    second = await editor.request("totem/chat", {"text": "again", "sessionId": first.sessionId})
    assert second.stopReason == "finished" and second.text == "Still here."
    sent = editor.model.requests[-1]["messages"]
    assert any("A\ufffdB" in (m.get("content") or "") for m in sent)
