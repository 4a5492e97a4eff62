"""totem/regenerate, totem/variant, totem/retry and totem/fork through the real ``totem lsp``."""

from __future__ import annotations

import asyncio
import json

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import to_dict
from tests.support.model_server import Reply, text_reply, tool_reply
from tests.support.reminder import sent_messages

WAIT = 30.0
REFUSED = Reply(status=400, body=json.dumps({"error": {"message": "this request is refused"}}))


async def call(editor, method: str, params) -> dict:
    return to_dict(await asyncio.wait_for(editor.request(method, params), WAIT))


async def shown(editor, session_id: str) -> list[str]:
    """The conversation as the chat shows it: each message's text parts."""
    session = await call(editor, "totem/session", {"sessionId": session_id})
    return ["".join(p["data"]["text"] for p in m["parts"] if p["type"] == "text") for m in session["messages"]]


def sent(request: dict) -> list[str]:
    return [str(m.get("content")) for m in sent_messages(request) if m["role"] != "system"]


async def test_regenerate_makes_a_second_variant_and_switching_back_shows_the_first(editor):
    editor.model.enqueue(text_reply("First answer."))
    editor.model.enqueue(text_reply("Second answer."))
    first = await call(editor, "totem/chat", {"text": "the question"})
    session_id = first["sessionId"]
    request = (await call(editor, "totem/session", {"sessionId": session_id}))["messages"][0]["id"]

    again = await call(editor, "totem/regenerate", {"sessionId": session_id, "messageId": request})

    assert again == {"sessionId": session_id, "stopReason": "finished", "text": "Second answer."}
    assert sent(editor.model.requests[1]) == ["the question"]  # the first answer is not in it
    session = await call(editor, "totem/session", {"sessionId": session_id})
    assert [m["role"] for m in session["messages"]] == ["user", "assistant"]
    assert session["messages"][1]["variant"] == {"request": request, "index": 1, "count": 2}
    assert await shown(editor, session_id) == ["the question", "Second answer."]

    switched = await call(editor, "totem/variant", {"sessionId": session_id, "messageId": request, "index": 0})
    assert switched == {"request": request, "index": 0, "count": 2}
    assert await shown(editor, session_id) == ["the question", "First answer."]

    # The conversation follows the chosen variant.
    editor.model.enqueue(text_reply("Going on."))
    await call(editor, "totem/chat", {"text": "and then?", "sessionId": session_id})
    assert sent(editor.model.requests[2]) == ["the question", "First answer.", "and then?"]

    # Back to the second and then the first again: each continues where it was left.
    await call(editor, "totem/variant", {"sessionId": session_id, "messageId": request, "index": 1})
    assert await shown(editor, session_id) == ["the question", "Second answer."]
    await call(editor, "totem/variant", {"sessionId": session_id, "messageId": request, "index": 0})
    assert await shown(editor, session_id) == ["the question", "First answer.", "and then?", "Going on."]

    with pytest.raises(JsonRpcException, match="no variant 2"):
        await call(editor, "totem/variant", {"sessionId": session_id, "messageId": request, "index": 2})


async def test_regenerate_of_an_answer_message_answers_its_request(editor):
    editor.model.enqueue(text_reply("One."))
    editor.model.enqueue(text_reply("Two."))
    first = await call(editor, "totem/chat", {"text": "count"})
    answer = (await call(editor, "totem/session", {"sessionId": first["sessionId"]}))["messages"][1]["id"]
    await call(editor, "totem/regenerate", {"sessionId": first["sessionId"], "messageId": answer})
    assert await shown(editor, first["sessionId"]) == ["count", "Two."]


async def test_retry_takes_up_a_failed_turn_from_its_last_completed_step(editor):
    (editor.project / "a.txt").write_text("alpha\n")
    editor.model.enqueue(tool_reply([("read", {"path": "a.txt"})]))
    editor.model.enqueue(REFUSED)
    editor.model.enqueue(text_reply("It says alpha."))
    failed = await call(editor, "totem/chat", {"text": "what does a.txt say?"})
    assert failed["stopReason"] == "error"
    session_id = failed["sessionId"]

    done = await call(editor, "totem/retry", {"sessionId": session_id})

    assert done["stopReason"] == "finished" and done["text"] == "It says alpha."
    retried = sent(editor.model.requests[2])
    assert retried[0] == "what does a.txt say?" and "alpha" in retried[-1]  # the read it did is kept
    assert len(editor.model.requests) == 3
    every = await call(editor, "totem/session", {"sessionId": session_id, "all": True})
    errors = [m for m in every["messages"] if any(p["type"] == "error" for p in m["parts"])]
    assert errors and all(m["rewound"] and not m["active"] for m in errors)  # the failure is kept, set aside
    assert not any(p["type"] == "error" for m in (await call(editor, "totem/session", {"sessionId": session_id}))["messages"] for p in m["parts"])


async def test_retry_is_refused_when_nothing_failed_and_after_three_failed_retries(editor):
    editor.model.enqueue(text_reply("Fine."))
    fine = await call(editor, "totem/chat", {"text": "hello"})
    with pytest.raises(JsonRpcException, match="did not fail"):
        await call(editor, "totem/retry", {"sessionId": fine["sessionId"]})

    for _ in range(4):
        editor.model.enqueue(REFUSED)
    failed = await call(editor, "totem/chat", {"text": "again", "sessionId": fine["sessionId"]})
    assert failed["stopReason"] == "error"
    for _ in range(3):
        assert (await call(editor, "totem/retry", {"sessionId": fine["sessionId"]}))["stopReason"] == "error"
    with pytest.raises(JsonRpcException, match="after 3 retries"):
        await call(editor, "totem/retry", {"sessionId": fine["sessionId"]})
    assert len(editor.model.requests) == 5  # the chat, its first try, three retries


async def test_fork_starts_a_new_session_from_a_message(editor):
    editor.model.enqueue(text_reply("A1."))
    editor.model.enqueue(text_reply("A2."))
    first = await call(editor, "totem/chat", {"text": "Q1"})
    await call(editor, "totem/chat", {"text": "Q2", "sessionId": first["sessionId"]})
    answer = (await call(editor, "totem/session", {"sessionId": first["sessionId"]}))["messages"][1]["id"]

    forked = await call(editor, "totem/fork", {"sessionId": first["sessionId"], "messageId": answer})

    assert forked["sessionId"] != first["sessionId"]
    assert await shown(editor, forked["sessionId"]) == ["Q1", "A1."]
    assert await shown(editor, first["sessionId"]) == ["Q1", "A1.", "Q2", "A2."]
    listed = {s["sessionId"] for s in await call(editor, "totem/sessions", None)}
    assert forked["sessionId"] in listed
    editor.model.enqueue(text_reply("A3."))
    await call(editor, "totem/chat", {"text": "Q3", "sessionId": forked["sessionId"]})
    assert sent(editor.model.requests[-1]) == ["Q1", "A1.", "Q3"]
