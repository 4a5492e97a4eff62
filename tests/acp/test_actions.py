"""Every session action ACP can carry, as a slash command through ``session/prompt``: listed in
``available_commands_update`` (from ``Engine.commands``), done by the engine, its reply said as
an agent message (api/replies.py's wording)."""

from __future__ import annotations

import json

import pytest
from acp import RequestError

from tests.acp.conftest import eventually
from tests.support.model_server import Reply, text_reply, tool_reply


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


async def started(acp) -> str:
    await acp.initialize()
    return await acp.new_session()


async def write_turn(acp, session_id: str, path: str, content: str) -> None:
    acp.model.enqueue(tool_reply([("write", {"path": path, "content": content})]), text_reply(f"Wrote {path}."))
    acp.client.answers.append("allow_once")
    response = await acp.conn.prompt(session_id=session_id, prompt=text(f"write {path}"))
    assert response.stop_reason == "end_turn"


def said_since(acp, count: int) -> str:
    """The agent's message text after the first ``count`` updates."""
    return "".join(u.content.text for u in acp.client.updates[count:] if u.session_update == "agent_message_chunk")


async def test_the_built_in_actions_are_listed_with_what_they_take(acp):
    await started(acp)
    await eventually(lambda: acp.client.of("available_commands_update"))
    listed = {c.name: c for c in acp.client.of("available_commands_update")[0].available_commands}
    for action in ("undo", "redo", "rewind", "retry", "regenerate", "fork", "compact", "diff"):
        assert listed[action].description, action
    assert listed["rewind"].input.root.hint == "turns to go back"
    assert all(listed[a].input is None for a in ("undo", "redo", "retry", "regenerate", "fork", "compact", "diff"))
    assert listed["init"].input.root.hint == "arguments"  # a command file takes arguments


async def test_redo_puts_back_what_undo_took(acp):
    session_id = await started(acp)
    await write_turn(acp, session_id, "new.txt", "x\n")
    await acp.conn.prompt(session_id=session_id, prompt=text("/undo"))
    assert not (acp.project / "new.txt").exists()
    before = len(acp.client.updates)
    response = await acp.conn.prompt(session_id=session_id, prompt=text("/redo"))
    assert response.stop_reason == "end_turn"
    assert (acp.project / "new.txt").read_text() == "x\n"
    assert said_since(acp, before) == "restored new.txt"
    assert len(acp.model.requests) == 2  # neither action asked the model


async def test_rewind_takes_back_the_last_turns_conversation_and_files(acp):
    session_id = await started(acp)
    await write_turn(acp, session_id, "one.txt", "1\n")
    await write_turn(acp, session_id, "two.txt", "2\n")
    before = len(acp.client.updates)
    response = await acp.conn.prompt(session_id=session_id, prompt=text("/rewind 1"))
    assert response.stop_reason == "end_turn"
    assert (acp.project / "one.txt").exists() and not (acp.project / "two.txt").exists()
    said = said_since(acp, before)
    assert said.startswith("Rewound 1 turn (") and "deleted two.txt" in said

    acp.model.enqueue(text_reply("Only one.txt."))
    await acp.conn.prompt(session_id=session_id, prompt=text("what did you write?"))
    sent = json.dumps(acp.model.requests[-1]["messages"])
    assert "write one.txt" in sent and "write two.txt" not in sent  # the rewound turn is set aside


async def test_retry_takes_up_the_failed_turn(acp):
    session_id = await started(acp)
    (acp.project / "a.txt").write_text("alpha\n")
    acp.model.enqueue(tool_reply([("read", {"path": "a.txt"})]))
    acp.model.enqueue(Reply(status=400, body=json.dumps({"error": {"message": "this request is refused"}})))
    with pytest.raises(RequestError, match="this request is refused"):
        await acp.conn.prompt(session_id=session_id, prompt=text("what does a.txt say?"))

    acp.model.enqueue(text_reply("It says alpha."))
    before = len(acp.client.updates)
    response = await acp.conn.prompt(session_id=session_id, prompt=text("/retry"))
    assert response.stop_reason == "end_turn"
    assert said_since(acp, before) == "It says alpha."
    retried = json.dumps(acp.model.requests[-1]["messages"])
    assert "what does a.txt say?" in retried and "alpha" in retried  # the read it did is kept
    assert len(acp.model.requests) == 3


async def test_retry_when_nothing_failed_is_refused_with_the_engines_message(acp):
    session_id = await started(acp)
    acp.model.enqueue(text_reply("Fine."))
    await acp.conn.prompt(session_id=session_id, prompt=text("hello"))
    with pytest.raises(RequestError) as raised:
        await acp.conn.prompt(session_id=session_id, prompt=text("/retry"))
    assert raised.value.code == -32602 and "did not fail" in str(raised.value)
    assert raised.value.data["errorClass"] == "NothingToRetry"


async def test_fork_names_the_new_session_which_session_load_opens(acp):
    session_id = await started(acp)
    acp.model.enqueue(text_reply("The capital is Paris."))
    await acp.conn.prompt(session_id=session_id, prompt=text("capital of France?"))
    before = len(acp.client.updates)
    response = await acp.conn.prompt(session_id=session_id, prompt=text("/fork"))
    assert response.stop_reason == "end_turn"
    said = said_since(acp, before)
    assert said.startswith(f"Forked session {session_id} into ")
    forked = said.removeprefix(f"Forked session {session_id} into ").split(";")[0]
    assert forked and forked != session_id

    before = len(acp.client.updates)
    await acp.conn.load_session(cwd=str(acp.project), session_id=forked, mcp_servers=[])
    replayed = acp.client.updates[before:]
    assert [u.content.text for u in replayed if u.session_update == "user_message_chunk"] == ["capital of France?"]
    assert "The capital is Paris." in said_since(acp, before)
    listed = await acp.conn.list_sessions(cwd=str(acp.project))
    assert {s.session_id for s in listed.sessions} == {session_id, forked}


async def test_compact_summarises_and_the_next_turn_starts_from_the_summary(acp):
    session_id = await started(acp)
    acp.model.enqueue(text_reply("The answer is in a.py."))
    await acp.conn.prompt(session_id=session_id, prompt=text("where is the parser?"))
    acp.model.enqueue(text_reply("The user looked for the parser; it is in a.py."))
    before = len(acp.client.updates)
    response = await acp.conn.prompt(session_id=session_id, prompt=text("/compact"))
    assert response.stop_reason == "end_turn"
    assert said_since(acp, before) == (
        "Compacted: 2 messages are summarised; the next turn starts from the summary."
    )
    assert "tools" not in acp.model.requests[1]  # the summary request

    acp.model.enqueue(text_reply("Yes."))
    await acp.conn.prompt(session_id=session_id, prompt=text("is it still there?"))
    sent = json.dumps(acp.model.requests[2]["messages"])
    assert "it is in a.py" in sent and "The answer is in a.py." not in sent
