"""A chat turn on the local model through the real ``totem lsp``, driven by pytest-lsp's client."""

from __future__ import annotations

import asyncio
import sys

from lsprotocol import types
from pytest_lsp import ClientServerConfig

from tests.local.conftest import CHAT_TIMEOUT, save_log, transcript
from tests.lsp.conftest import client_capabilities, to_dict

SERVER = [sys.executable, "-m", "totem_cli.main", "lsp"]


async def test_a_chat_turn_streams_its_answer_to_the_editor(project, agent_env, model_id, request):
    client = await ClientServerConfig(server_command=SERVER, server_env=agent_env).start()
    events: list[dict] = []
    asked: list[dict] = []

    @client.feature("totem/event")
    def on_event(params):
        events.append(to_dict(params))

    # A one-sentence answer needs no change and no question: any is refused, and logged.
    @client.feature("totem/permission")
    def on_permission(params):
        asked.append(to_dict(params))
        return {"outcome": "reject_once", "feedback": "No tools needed: just answer."}

    @client.feature("totem/question")
    def on_question(params):
        asked.append(to_dict(params))
        return {"answer": "Just answer the question."}

    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities(totem={"events": True, "permission": True, "question": True}),
                workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="inventory")],
            )
        )
        result = await asyncio.wait_for(
            client.protocol.send_request_async(
                "totem/chat", {"text": "Answer in one short sentence: which Python keyword defines a function?"}
            ),
            CHAT_TIMEOUT,
        )
    finally:
        await client.shutdown_session()
    log = save_log(request, f"{transcript(events)}\n--- asked\n{asked}\n--- result\n{to_dict(result)}")

    deltas = "".join(e["text"] for e in events if e["kind"] == "textDelta")
    assert result.stopReason == "finished", log
    assert result.text.strip() and result.text.strip() in deltas, log
    # Streamed: the answer came in pieces, as the model wrote it, not at the end.
    assert sum(e["kind"] == "textDelta" for e in events) > 1, log
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "turnStart" and kinds[-1] == "turnEnd", log
    assert events[0]["model"] == f"local/{model_id}", log  # no model configured: the local one
    assert "def" in result.text, log
