"""Forge through the real ``totem lsp`` (issue 24): in a Total.js project (the new folder) the
start of the built-in ``forge`` server is a ``totem/permission`` request that says where the
searches go; "always" is kept for every project; the ``forge`` event reaches the editor as a
``totem/event`` like any other, and the pages reach the model's first request. Forge is the
loopback stand-in (tests/support/forge_standin.py)."""

from __future__ import annotations

import json

import pytest_asyncio

from tests.lsp.conftest import start_editor
from tests.support.forge_standin import PAGES, ForgeStandin
from tests.support.model_server import text_reply

ROUTING = "https://forge.totaljs.es/docs/total5/routing/"


@pytest_asyncio.fixture
async def forge(tmp_path):
    server = ForgeStandin(tmp_path)
    yield server
    server.close()


async def test_the_forge_start_is_asked_once_for_every_project_and_its_event_streams(tmp_path, model, forge):
    editor = await start_editor(tmp_path, model, totem={"permission": True, "events": True}, forge_url=forge.url)
    try:
        editor.model.enqueue(text_reply("Use ROUTE."))
        editor.permission_answers.append({"outcome": "allow_always"})
        result = await editor.request("totem/chat", {"text": "how do I add a route that lists the users?"})

        assert result.stopReason == "finished"
        (start,) = editor.permissions
        assert start["tool"] == "mcp-start" and start["alwaysPattern"] == "forge" and start["input"]["url"] == forge.url
        assert "Forge" in start["title"] and "your prompts" in start["title"] and "every project" in start["title"]
        (event,) = editor.of("forge")
        assert event["query"] == "route lists users" and event["product"] == "total5"
        assert event["pages"][0]["url"] == ROUTING and event["sessionId"] == result.sessionId
        first_user = next(m["content"] for m in editor.model.requests[0]["messages"] if m["role"] == "user")
        assert PAGES[ROUTING][1].strip() in first_user
    finally:
        await editor.client.shutdown_session()

    # Kept for every project of this user, bound to the address (tests/unit/test_forge.py: another
    # project is not asked).
    stored = json.loads((tmp_path / "home" / "data" / "totem" / "mcp_starts.json").read_text())
    assert stored["projects"]["*"]["forge"] == {"target": forge.url, "action": "allow"}
