"""The language server and session leases (totem_engine/leases.py): a session another live
process runs is refused with -32001 naming it; a turn the server runs is aborted by a flag
another process sets in the store."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.test_sessions import WAIT, wait_for
from tests.support.model_server import Reply, chunk, text_reply
from totem_engine.leases import request_abort
from totem_engine.store import THIS_HOST, Lease, Store


def _store(tmp_path) -> Store:
    """The server's own history database (its XDG_DATA_HOME, tests/lsp/conftest.py)."""
    return Store(tmp_path / "home" / "data" / "totem" / "totem.db")


async def test_a_session_another_process_runs_is_refused(editor, tmp_path):
    editor.model.enqueue(text_reply("First."))
    first = await asyncio.wait_for(editor.request("totem/chat", {"text": "hello"}), WAIT)
    async with _store(tmp_path) as store:
        now = time.time()
        other = Lease(first.sessionId, "lse_other", os.getpid(), THIS_HOST, "totem run", now, now)  # this test, alive
        await store.take_lease(other, in_force=lambda _: False)
    for method, params in (
        ("totem/chat", {"text": "again", "sessionId": first.sessionId}),
        ("totem/undo", {"sessionId": first.sessionId}),
    ):
        with pytest.raises(JsonRpcException) as caught:
            await asyncio.wait_for(editor.request(method, params), WAIT)
        assert caught.value.code == -32001
        assert f"is running a turn in totem run (pid {os.getpid()})" in str(caught.value)
    assert len(editor.model.requests) == 1


async def test_a_turn_is_aborted_through_the_store(editor, tmp_path):
    editor.model.enqueue(Reply(events=[chunk({"role": "assistant", "content": ""}), chunk({"content": "Thinking"})], hold=30))
    running = asyncio.ensure_future(editor.request("totem/chat", {"text": "take your time"}))
    await wait_for(lambda: editor.of("turnStart") and editor.model.requests)
    session_id = editor.of("turnStart")[0]["sessionId"]
    async with _store(tmp_path) as store:
        asked = await request_abort(store, session_id)
    assert asked is not None and asked.holder == "totem lsp"
    result = await asyncio.wait_for(running, WAIT)
    assert result.stopReason == "aborted" and result.text == "Thinking"
