"""totem/rewind through the real ``totem lsp``: the conversation continues from before a message,
later messages kept and marked; with files, the files go back, what the user changed since left
alone unless confirmed."""

from __future__ import annotations

import asyncio

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import to_dict
from tests.support.model_server import text_reply, tool_reply

WAIT = 15.0


async def call(editor, method: str, params) -> dict:
    return to_dict(await asyncio.wait_for(editor.request(method, params), WAIT))


async def two_turns(editor) -> tuple[str, dict]:
    """Turn 1 creates a.txt; turn 2 rewrites it and creates b.txt. The session and its messages."""
    editor.model.enqueue(tool_reply([("write", {"path": "a.txt", "content": "one\n"})]))
    editor.model.enqueue(text_reply("Wrote a."))
    editor.model.enqueue(tool_reply([("write", {"path": "a.txt", "content": "two\n"}), ("write", {"path": "b.txt", "content": "b\n"})]))
    editor.model.enqueue(text_reply("Wrote both."))
    editor.permission_answers += [{"outcome": "allow_once"}] * 3
    first = await call(editor, "totem/chat", {"text": "first request"})
    await call(editor, "totem/chat", {"text": "second request", "sessionId": first["sessionId"]})
    return first["sessionId"], await call(editor, "totem/session", {"sessionId": first["sessionId"]})


def requests_of(session: dict) -> list[dict]:
    return [m for m in session["messages"] if m["role"] == "user"]


async def test_rewind_with_files_puts_back_the_conversation_and_the_files(editor):
    session_id, session = await two_turns(editor)
    assert (editor.project / "a.txt").read_text() == "two\n" and (editor.project / "b.txt").exists()
    second = requests_of(session)[1]
    later = [m["id"] for m in session["messages"][session["messages"].index(second):]]

    done = await call(editor, "totem/rewind", {"sessionId": session_id, "messageId": second["id"], "files": True})

    assert done["rewound"] == later
    assert done["files"] == [{"path": "a.txt", "action": "restored"}, {"path": "b.txt", "action": "deleted"}]
    assert (editor.project / "a.txt").read_text() == "one\n" and not (editor.project / "b.txt").exists()
    now = await call(editor, "totem/session", {"sessionId": session_id})
    assert [m["id"] for m in now["messages"]] == [m["id"] for m in session["messages"][: session["messages"].index(second)]]
    every = await call(editor, "totem/session", {"sessionId": session_id, "all": True})
    kept = {m["id"]: m for m in every["messages"]}
    assert all(kept[i]["rewound"] and not kept[i]["active"] for i in later)  # stored, marked, not deleted

    # The conversation continues from before the second request: the model never sees it again.
    editor.model.enqueue(text_reply("Fresh start."))
    await call(editor, "totem/chat", {"text": "third request", "sessionId": session_id})
    sent = " ".join(str(m.get("content")) for m in editor.model.requests[-1]["messages"])
    assert "first request" in sent and "third request" in sent and "second request" not in sent

    # The rewind's file change is a change set of its own: undo takes it back.
    undone = await call(editor, "totem/undo", {"sessionId": session_id})
    assert {f["path"] for f in undone["files"]} == {"a.txt", "b.txt"}
    assert (editor.project / "a.txt").read_text() == "two\n" and (editor.project / "b.txt").read_text() == "b\n"


async def test_a_file_the_user_changed_since_is_named_and_left_alone_unless_confirmed(editor):
    session_id, session = await two_turns(editor)
    (editor.project / "a.txt").write_text("the user's own\n")
    second = requests_of(session)[1]["id"]

    preview = await call(editor, "totem/rewind", {"sessionId": session_id, "messageId": second, "files": True, "dryRun": True})
    assert preview["files"] == [
        {"path": "a.txt", "action": "conflict", "reason": "changed since; left as it is"},
        {"path": "b.txt", "action": "deleted"},
    ]
    assert (editor.project / "b.txt").exists()  # a dry run touches nothing
    assert len((await call(editor, "totem/session", {"sessionId": session_id}))["messages"]) == len(session["messages"])

    done = await call(editor, "totem/rewind", {"sessionId": session_id, "messageId": second, "files": True, "overwrite": ["a.txt"]})
    assert done["files"] == [{"path": "a.txt", "action": "restored"}, {"path": "b.txt", "action": "deleted"}]
    assert (editor.project / "a.txt").read_text() == "one\n"


async def test_without_confirmation_the_changed_file_stays_and_the_rest_goes_back(editor):
    session_id, session = await two_turns(editor)
    (editor.project / "a.txt").write_text("the user's own\n")
    second = requests_of(session)[1]["id"]
    done = await call(editor, "totem/rewind", {"sessionId": session_id, "messageId": second, "files": True})
    assert [f["action"] for f in done["files"]] == ["conflict", "deleted"]
    assert (editor.project / "a.txt").read_text() == "the user's own\n"


async def test_rewind_without_files_leaves_the_files_and_any_message_may_be_the_point(editor):
    session_id, session = await two_turns(editor)
    answer = next(m for m in session["messages"] if m["role"] == "assistant")
    done = await call(editor, "totem/rewind", {"sessionId": session_id, "messageId": answer["id"]})
    assert done["files"] == []
    assert (editor.project / "a.txt").read_text() == "two\n"
    assert [m["role"] for m in (await call(editor, "totem/session", {"sessionId": session_id}))["messages"]] == ["user"]


async def test_rewind_refuses_files_inside_a_turn_and_a_message_not_in_the_conversation(editor):
    session_id, session = await two_turns(editor)
    answer = next(m for m in session["messages"] if m["role"] == "assistant")
    with pytest.raises(JsonRpcException, match="start of a turn"):
        await call(editor, "totem/rewind", {"sessionId": session_id, "messageId": answer["id"], "files": True})
    second = requests_of(session)[1]["id"]
    await call(editor, "totem/rewind", {"sessionId": session_id, "messageId": second})
    with pytest.raises(JsonRpcException, match="not in the conversation"):
        await call(editor, "totem/rewind", {"sessionId": session_id, "messageId": second})
    with pytest.raises(JsonRpcException, match="msg_nope"):
        await call(editor, "totem/rewind", {"sessionId": session_id, "messageId": "msg_nope"})


async def test_a_rewind_to_the_first_message_drops_the_title_and_the_next_message_names_the_session(editor):
    session_id, session = await two_turns(editor)

    async def listed_title() -> str:
        listed = await call(editor, "totem/sessions", {})
        return next(s["title"] for s in listed if s["sessionId"] == session_id)

    second = requests_of(session)[1]["id"]
    await call(editor, "totem/rewind", {"sessionId": session_id, "messageId": second})
    assert await listed_title() == "first request"  # the first message stays: so does its title

    await call(editor, "totem/rewind", {"sessionId": session_id, "messageId": requests_of(session)[0]["id"]})
    assert await listed_title() == ""
    assert (await call(editor, "totem/session", {"sessionId": session_id}))["title"] == ""

    editor.model.enqueue(text_reply("Starting over."))
    await call(editor, "totem/chat", {"text": "another start", "sessionId": session_id})
    assert await listed_title() == "another start"
