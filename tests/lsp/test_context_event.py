"""The ``context`` event through the real ``totem lsp``: before each model call, the estimate, the
window and what fills it (system prompt and tools, history, tool results, attachments, output),
the shares adding up to the estimate."""

from __future__ import annotations

import asyncio

from tests.support.model_server import text_reply, tool_reply

WAIT = 15.0
DATA = "".join(f"row {n} of the data\n" for n in range(200))


async def test_each_step_reports_what_fills_the_window(editor):
    editor.model.models = [{"id": "test-model", "object": "model", "context_length": 32768}]
    (editor.project / "notes.txt").write_text("a note\n" * 10)
    (editor.project / "rows.csv").write_text(DATA)
    editor.model.enqueue(tool_reply([("read", {"path": "rows.csv"})]))
    editor.model.enqueue(text_reply("Read it."))

    await asyncio.wait_for(editor.request("totem/chat", {"text": "compare @notes.txt with the other one"}), WAIT)

    first, second = editor.of("context")
    for event in (first, second):
        shares = event["breakdown"]
        assert set(shares) == {"system", "history", "toolResults", "attachments", "output"}
        assert sum(shares.values()) == event["estimate"]
        assert shares["system"] > 0 and shares["output"] > 0 and shares["history"] > 0
    # The mentioned file is an attachment from the first request on; the read's result joins later.
    assert first["breakdown"]["attachments"] >= len("a note\n" * 10) // 4
    assert first["breakdown"]["toolResults"] == 0
    assert second["breakdown"]["toolResults"] >= len(DATA) // 4
    assert second["breakdown"]["attachments"] == first["breakdown"]["attachments"]
    assert second["estimate"] > first["estimate"]
