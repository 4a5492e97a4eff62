"""The built-in actions typed in the chat (``/redo``, ``/rewind [N]``, ``/fork``, ``/retry``) and
``totem/fork`` of the conversation as it stands, through the real ``totem lsp``; and every
session action refused as busy while a turn of the session runs (the engine's one registry)."""

from __future__ import annotations

import asyncio
import json

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import to_dict
from tests.support.model_server import Reply, chunk, text_reply, tool_reply
from tests.support.reminder import sent_messages

WAIT = 30.0
REFUSED = Reply(status=400, body=json.dumps({"error": {"message": "this request is refused"}}))


async def call(editor, method: str, params) -> dict:
    return to_dict(await asyncio.wait_for(editor.request(method, params), WAIT))


async def shown(editor, session_id: str) -> list[str]:
    session = await call(editor, "totem/session", {"sessionId": session_id})
    return ["".join(p["data"]["text"] for p in m["parts"] if p["type"] == "text") for m in session["messages"]]


async def write_turn(editor, session_id: str | None, path: str, content: str) -> str:
    """A turn whose model writes ``path``; its session."""
    editor.model.enqueue(tool_reply([("write", {"path": path, "content": content})]), text_reply(f"Wrote {path}."))
    editor.permission_answers.append({"outcome": "allow_once"})
    params = {"text": f"write {path}", **({"sessionId": session_id} if session_id else {})}
    result = await call(editor, "totem/chat", params)
    assert result["stopReason"] == "finished", result
    return result["sessionId"]


async def test_redo_typed_in_the_chat_puts_back_what_undo_took(editor):
    session_id = await write_turn(editor, None, "a.txt", "new\n")
    undone = await call(editor, "totem/chat", {"text": "/undo", "sessionId": session_id})
    assert undone == {"sessionId": session_id, "stopReason": "finished", "text": "deleted a.txt"}
    assert not (editor.project / "a.txt").exists()

    redone = await call(editor, "totem/chat", {"text": "/redo", "sessionId": session_id})

    assert redone == {"sessionId": session_id, "stopReason": "finished", "text": "restored a.txt"}
    assert (editor.project / "a.txt").read_text() == "new\n"
    nothing = await call(editor, "totem/chat", {"text": "/redo", "sessionId": session_id})
    assert nothing["text"] == "Nothing to redo."
    assert len(editor.model.requests) == 2  # the one turn's; the actions asked the model nothing


async def test_rewind_typed_in_the_chat_goes_back_n_turns_with_their_files(editor):
    session_id = await write_turn(editor, None, "a.txt", "one\n")
    await write_turn(editor, session_id, "b.txt", "two\n")
    await write_turn(editor, session_id, "c.txt", "three\n")
    editor.events.clear()

    back = await call(editor, "totem/chat", {"text": "/rewind", "sessionId": session_id})

    assert back["stopReason"] == "finished"
    assert back["text"].splitlines() == [
        "Rewound 1 turn (3 messages set aside; they stay in the session's history).", "deleted c.txt",
    ]
    assert not (editor.project / "c.txt").exists() and (editor.project / "b.txt").exists()
    assert await shown(editor, session_id) == ["write a.txt", "", "Wrote a.txt.", "write b.txt", "", "Wrote b.txt."]

    two = await call(editor, "totem/chat", {"text": "/rewind 2", "sessionId": session_id})
    assert two["text"].splitlines()[0] == "Rewound 2 turns (6 messages set aside; they stay in the session's history)."
    assert sorted(two["text"].splitlines()[1:]) == ["deleted a.txt", "deleted b.txt"]
    assert not (editor.project / "a.txt").exists() and not (editor.project / "b.txt").exists()
    assert await shown(editor, session_id) == []
    assert editor.events == []  # no turn: no events

    with pytest.raises(JsonRpcException, match="no request to rewind"):
        await call(editor, "totem/chat", {"text": "/rewind", "sessionId": session_id})
    with pytest.raises(JsonRpcException, match="number of turns") as caught:
        await call(editor, "totem/chat", {"text": "/rewind lots", "sessionId": session_id})
    assert caught.value.code == -32602


async def test_fork_typed_in_the_chat_and_totem_fork_copy_the_conversation_as_it_stands(editor):
    editor.model.enqueue(text_reply("A1."), text_reply("A2."))
    first = await call(editor, "totem/chat", {"text": "Q1"})
    session_id = first["sessionId"]
    await call(editor, "totem/chat", {"text": "Q2", "sessionId": session_id})

    forked = await call(editor, "totem/chat", {"text": "/fork", "sessionId": session_id})

    new_id = forked["text"].split(" into ")[1].split(";")[0]
    assert forked == {
        "sessionId": session_id, "stopReason": "finished",
        "text": f"Forked session {session_id} into {new_id}; continue there to leave this one as it is.",
    }
    assert new_id != session_id and await shown(editor, new_id) == ["Q1", "A1.", "Q2", "A2."]
    assert new_id in {s["sessionId"] for s in await call(editor, "totem/sessions", None)}
    editor.model.enqueue(text_reply("A3."))
    await call(editor, "totem/chat", {"text": "Q3", "sessionId": new_id})
    assert await shown(editor, session_id) == ["Q1", "A1.", "Q2", "A2."]  # the original stays as it was

    # totem/fork without messageId: the conversation as it stands, too.
    again = await call(editor, "totem/fork", {"sessionId": new_id})
    assert again["sessionId"] not in (session_id, new_id)
    assert await shown(editor, again["sessionId"]) == ["Q1", "A1.", "Q2", "A2.", "Q3", "A3."]
    assert len(editor.model.requests) == 3


async def test_retry_typed_in_the_chat_takes_up_the_failed_turn_and_answers_with_it(editor):
    (editor.project / "a.txt").write_text("alpha\n")
    editor.model.enqueue(tool_reply([("read", {"path": "a.txt"})]), REFUSED, text_reply("It says alpha."))
    failed = await call(editor, "totem/chat", {"text": "what does a.txt say?"})
    assert failed["stopReason"] == "error"
    editor.events.clear()

    done = await call(editor, "totem/chat", {"text": "/retry", "sessionId": failed["sessionId"]})

    assert done == {"sessionId": failed["sessionId"], "stopReason": "finished", "text": "It says alpha."}
    assert editor.events[0]["kind"] == "turnStart" and editor.of("turnEnd")  # a turn, streamed
    assert "alpha" in str(sent_messages(editor.model.requests[-1])[-1]["content"])  # the read it did is kept
    assert await shown(editor, failed["sessionId"]) == ["what does a.txt say?", "", "It says alpha."]
    with pytest.raises(JsonRpcException, match="did not fail"):
        await call(editor, "totem/chat", {"text": "/retry", "sessionId": failed["sessionId"]})


async def test_an_action_without_a_session_is_refused_and_the_actions_are_listed(editor):
    await write_turn(editor, None, "a.txt", "new\n")
    for action in ("/undo", "/redo", "/rewind", "/fork", "/retry", "/compact"):
        with pytest.raises(JsonRpcException, match="send sessionId") as caught:
            await call(editor, "totem/chat", {"text": action})
        assert caught.value.code == -32602
    assert (editor.project / "a.txt").exists()  # the newest session was not acted on

    listed = {c["name"]: c for c in await call(editor, "totem/commands", {})}
    for name in ("compact", "diff", "fork", "redo", "regenerate", "retry", "rewind", "undo"):
        assert (listed[name]["source"], listed[name]["file"]) == ("built-in", None)


async def test_every_action_on_a_session_with_a_running_turn_is_refused_as_busy(editor):
    session_id = await write_turn(editor, None, "a.txt", "new\n")
    request = (await call(editor, "totem/session", {"sessionId": session_id}))["messages"][0]["id"]
    editor.model.enqueue(Reply(events=[chunk({"role": "assistant", "content": ""}), chunk({"content": "Thinking"})], hold=30))
    running = asyncio.ensure_future(editor.request("totem/chat", {"text": "take your time", "sessionId": session_id}))
    while len(editor.model.requests) < 3:
        await asyncio.sleep(0.02)

    refused = {
        "totem/retry": {"sessionId": session_id},
        "totem/regenerate": {"sessionId": session_id, "messageId": request},
        "totem/rewind": {"sessionId": session_id, "messageId": request},
        "totem/variant": {"sessionId": session_id, "messageId": request, "index": 0},
        "totem/compact": {"sessionId": session_id},
        "totem/undo": {"sessionId": session_id},
        "totem/redo": {"sessionId": session_id},
    }
    for method, params in refused.items():
        with pytest.raises(JsonRpcException, match="busy") as caught:
            await call(editor, method, params)
        assert caught.value.code == -32001, method
    for typed in ("/undo", "/redo", "/rewind", "/compact", "/retry", "again"):
        with pytest.raises(JsonRpcException, match="busy") as caught:
            await call(editor, "totem/chat", {"text": typed, "sessionId": session_id})
        assert caught.value.code == -32001, typed
    assert len(editor.model.requests) == 3 and (editor.project / "a.txt").exists()

    assert await call(editor, "totem/abort", {"sessionId": session_id}) is None
    assert (await asyncio.wait_for(running, WAIT)).stopReason == "aborted"
    undone = await call(editor, "totem/chat", {"text": "/undo", "sessionId": session_id})
    assert undone["text"] == "deleted a.txt"
