"""The session actions beside a prompt, each called through the ``mcp`` package's client:
``redo_turn``, ``rewind`` (by turns or to a message, with or without the files), ``fork_session``,
``retry_turn`` after a failed turn (the model's server answering 500 until the tries are used
up, over stdio; its stream cut each time, over HTTP); and the tool errors, worded by kind."""

from __future__ import annotations

import anyio

from tests.mcp_server.conftest import error_text, result
from tests.support.model_server import Reply, text_reply, tool_reply
from tests.support.reminder import sent_messages
from totem_engine.retry import MAX_TRIES

TRIES = MAX_TRIES  # the tries a step gets before its turn fails


async def _write(served, client, session_id: str, path: str, content: str) -> dict:
    """A turn that writes ``path``; its answer."""
    served.server.enqueue(tool_reply([("write", {"path": path, "content": content})]))
    served.server.enqueue(text_reply(f"I wrote {path}."))
    answer = result(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": f"write {path}"}))
    assert answer["stop_reason"] == "finished" and answer["changed"] == [path]
    return answer


async def _conversation(client, session_id: str) -> list[tuple[str, str]]:
    """The texts of the session's conversation as it stands (``active`` messages), by role."""
    read = result(await client.call_tool("read_session", {"session_id": session_id}))
    return [
        (m["role"], p["data"]["text"])
        for m in read["messages"] if m["active"]
        for p in m["parts"] if p["type"] == "text" and not p.get("discarded")
    ]


async def _messages(client, session_id: str) -> list[dict]:
    return result(await client.call_tool("read_session", {"session_id": session_id}))["messages"]


async def test_redo_puts_back_what_undo_took_back(served):
    async with served.stdio() as client:
        session_id = result(await client.call_tool("start_session", {}))["session_id"]
        await _write(served, client, session_id, "a.txt", "one\n")
        assert result(await client.call_tool("undo_turn", {"session_id": session_id}))["files"] == [
            {"path": "a.txt", "action": "deleted", "reason": None}
        ]
        assert not (served.project / "a.txt").exists()

        redone = result(await client.call_tool("redo_turn", {"session_id": session_id}))
        assert redone == {"session_id": session_id, "files": [{"path": "a.txt", "action": "restored", "reason": None}]}
        assert (served.project / "a.txt").read_text() == "one\n"
        assert result(await client.call_tool("redo_turn", {"session_id": session_id}))["files"] == []
    assert len(served.server.requests) == 2  # undo and redo asked the model nothing


async def test_rewind_by_turns_takes_back_the_conversation_and_the_files_or_the_conversation_only(served):
    async with served.stdio() as client:
        session_id = result(await client.call_tool("start_session", {}))["session_id"]
        await _write(served, client, session_id, "a.txt", "one\n")
        await _write(served, client, session_id, "b.txt", "two\n")

        rewound = result(await client.call_tool("rewind", {"session_id": session_id}))
        assert rewound["text"].startswith("Rewound 1 turn (")
        assert rewound["files"] == [{"path": "b.txt", "action": "deleted", "reason": None}]
        assert not (served.project / "b.txt").exists() and (served.project / "a.txt").read_text() == "one\n"
        assert await _conversation(client, session_id) == [("user", "write a.txt"), ("assistant", "I wrote a.txt.")]
        set_aside = [m for m in await _messages(client, session_id) if m["rewound"]]
        assert set_aside and not any(m["active"] for m in set_aside)  # kept in the history, out of the conversation

        kept = result(await client.call_tool("rewind", {"session_id": session_id, "turns": 1, "files": False}))
        assert kept["files"] == [] and kept["text"].startswith("Rewound 1 turn (")
        assert (served.project / "a.txt").read_text() == "one\n"  # the conversation only
        assert await _conversation(client, session_id) == []


async def test_rewind_to_a_message_and_fork_up_to_one(served):
    async with served.stdio() as client:
        session_id = result(await client.call_tool("start_session", {"title": "two files"}))["session_id"]
        await _write(served, client, session_id, "a.txt", "one\n")
        await _write(served, client, session_id, "b.txt", "two\n")
        messages = await _messages(client, session_id)
        second_request = next(m for m in messages if m["role"] == "user" and m["parts"][0]["data"].get("text") == "write b.txt")
        first_answer = messages[messages.index(second_request) - 1]
        assert first_answer["role"] == "assistant"

        forked = result(await client.call_tool("fork_session", {"session_id": session_id, "message_id": first_answer["id"]}))
        assert forked["forked_from"] == session_id and forked["session_id"] != session_id
        assert forked["session_id"] in forked["text"]
        assert await _conversation(client, forked["session_id"]) == [("user", "write a.txt"), ("assistant", "I wrote a.txt.")]
        whole = result(await client.call_tool("fork_session", {"session_id": session_id}))
        assert len(await _conversation(client, whole["session_id"])) == 4
        listed = {s["session_id"] for s in result(await client.call_tool("list_sessions", {}))["sessions"]}
        assert listed == {session_id, forked["session_id"], whole["session_id"]}

        # A message that starts no turn cannot take the files back to it: refused, nothing done.
        refused = error_text(
            await client.call_tool("rewind", {"session_id": session_id, "message_id": first_answer["id"], "files": True})
        )
        assert "invalid: " in refused and "read_session" in refused
        both = error_text(
            await client.call_tool("rewind", {"session_id": session_id, "message_id": second_request["id"], "turns": 1})
        )
        assert "invalid: rewind takes turns or message_id, not both" in both

        rewound = result(
            await client.call_tool("rewind", {"session_id": session_id, "message_id": second_request["id"], "files": False})
        )
        assert rewound["text"].startswith(f"Rewound to before {second_request['id']} (") and rewound["files"] == []
        assert (served.project / "b.txt").read_text() == "two\n"
        assert await _conversation(client, session_id) == [("user", "write a.txt"), ("assistant", "I wrote a.txt.")]
        assert len(await _conversation(client, whole["session_id"])) == 4  # the fork kept its own


async def test_a_turn_failed_by_server_errors_is_retried_to_its_end(served):
    for _ in range(TRIES):
        served.server.enqueue(Reply(status=500, body='{"error":{"message":"the model server is down"}}'))
    async with served.stdio() as client:
        session_id = result(await client.call_tool("start_session", {}))["session_id"]
        failed = result(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "do it"}))
        assert failed["stop_reason"] == "error" and "the model server is down" in failed["reason"]
        assert len(served.server.requests) == TRIES

        served.server.enqueue(text_reply("Done at last."))
        retried = result(await client.call_tool("retry_turn", {"session_id": session_id}))
        assert retried["stop_reason"] == "finished" and retried["text"] == "Done at last."
        assert retried["session_id"] == session_id and retried["turn_id"] and retried["model"] == "sim/test-model"
        assert await _conversation(client, session_id) == [("user", "do it"), ("assistant", "Done at last.")]
        assert sent_messages(served.server.requests[-1])[-1]["content"] == "do it"  # the same request, once

        again = error_text(await client.call_tool("retry_turn", {"session_id": session_id}))
    assert "invalid: the session's last turn did not fail" in again


async def test_over_http_a_turn_whose_stream_is_cut_is_retried_and_its_session_forked(served):
    for _ in range(TRIES):
        cut = text_reply("an answer cut off in the middle", pieces=6)
        cut.cut_after = 4
        served.server.enqueue(cut)
    with served.http() as server:
        assert server.token
        async with served.http_client(server.url, server.token) as client:
            session_id = result(await client.call_tool("start_session", {}))["session_id"]
            failed = result(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "tell me"}))
            assert failed["stop_reason"] == "error"

            served.server.enqueue(text_reply("The whole answer."))
            retried = result(await client.call_tool("retry_turn", {"session_id": session_id}))
            forked = result(await client.call_tool("fork_session", {"session_id": session_id}))
            conversation = await _conversation(client, forked["session_id"])
        server.stop()
    assert retried["stop_reason"] == "finished" and retried["text"] == "The whole answer."
    assert conversation == [("user", "tell me"), ("assistant", "The whole answer.")]


async def test_errors_say_their_kind_and_what_to_do(served):
    held = text_reply("partial answer that never ends", pieces=2)
    held.events = held.events[:3]
    held.hold = 60
    served.server.enqueue(held)
    async with served.stdio() as client:
        missing = error_text(await client.call_tool("redo_turn", {"session_id": "ses_missing"}))
        session_id = result(await client.call_tool("start_session", {}))["session_id"]
        answers = []

        async def prompt() -> None:
            answers.append(result(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "tell me"})))

        async with anyio.create_task_group() as group:
            group.start_soon(prompt)
            while not result(await client.call_tool("list_sessions", {}))["sessions"][0]["running"]:
                await anyio.sleep(0.05)
            busy = [
                error_text(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "me too"})),
                error_text(await client.call_tool("rewind", {"session_id": session_id})),
                error_text(await client.call_tool("retry_turn", {"session_id": session_id})),
            ]
            assert result(await client.call_tool("abort_turn", {"session_id": session_id}))["stopped"]
    assert "not_found: no session 'ses_missing'" in missing and "list_sessions" in missing
    for text in busy:
        assert f"busy: session {session_id} is busy" in text and "abort_turn" in text, text
    assert answers[0]["stop_reason"] == "aborted"
    assert len(served.server.requests) == 1
