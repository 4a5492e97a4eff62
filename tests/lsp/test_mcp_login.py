"""``totem/mcpLogin`` through the real ``totem lsp``: a remote MCP server that wants an OAuth login
(tests/support/oauth_mcp.py, the authorization server and the MCP server behind it). A turn
before the login says the editor can log in; the request asks the editor to open the
authorization URL (``window/showDocument``, external), which the test then visits with the
loopback browser (tests/support/loopback_browser.py, approving at once); the request answers
once the login is done, and the next turn starts the server and calls its tool. A server that is
not declared, or has no login, is an error with the engine's reason."""

from __future__ import annotations

import asyncio
import json
import stat

import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import start_editor
from tests.lsp.test_chat import eventually
from tests.support.loopback_browser import visit
from tests.support.model_server import text_reply, tool_reply
from tests.support.oauth_mcp import OAuthMcp
from tests.support.real_mcp import write_mcp_json


@pytest_asyncio.fixture
async def guarded():
    server = OAuthMcp(3600)
    yield server
    server.close()


@pytest_asyncio.fixture
async def editor(tmp_path, model, guarded):
    servers = {"guarded": {"url": guarded.url}, "local": {"command": "true", "enabled": False}}  # local: never started
    write_mcp_json(tmp_path / "home" / "config" / "totem" / "mcp.json", servers)
    editor = await start_editor(tmp_path, model, totem={"permission": True, "question": True, "trust": True, "events": True})
    yield editor
    await editor.client.shutdown_session()


async def test_the_editor_logs_in_through_a_url_it_is_shown_and_the_next_turn_uses_the_server(editor, guarded, tmp_path):
    editor.model.enqueue(text_reply("No dictionary."))
    editor.permission_answers.append({"outcome": "allow_once"})  # the server's start
    before = await editor.request("totem/chat", {"text": "look up totem"})
    notice = next(e["message"] for e in editor.of("notice") if e["message"].startswith("MCP server guarded did not start"))
    assert "run `totem mcp login guarded`, then try again" in notice
    assert guarded.stats()["registered"] == 0

    login = asyncio.ensure_future(editor.request("totem/mcpLogin", {"uri": editor.project.as_uri(), "name": "guarded"}))
    # The editor shows the URL (pytest-lsp's client answers window/showDocument with success and
    # keeps it); the user's browser opens it: approves, redirects to Totem's loopback callback.
    await eventually(lambda: editor.client.shown_documents)
    (shown,) = editor.client.shown_documents
    assert not login.done()  # answered only once the login is done
    await asyncio.to_thread(visit, shown.uri)
    done = await asyncio.wait_for(login, 60)
    assert (done.server, done.url, list(done.tools)) == ("guarded", guarded.url, ["lookup"])
    assert shown.external is True and shown.uri.startswith(f"{guarded.base}/authorize?")
    assert "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in shown.uri and "code_challenge_method=S256" in shown.uri
    stats = guarded.stats()
    assert stats["registered"] == 1 and stats["authorization_code"] == 1
    keys = tmp_path / "home" / "config" / "totem" / "keys.json"
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600 and guarded.url in json.loads(keys.read_text())["mcp_logins"]

    editor.model.enqueue(tool_reply([("guarded__lookup", {"word": "totem"})]))
    editor.model.enqueue(text_reply("It is a word."))
    editor.permission_answers += [{"outcome": "allow_once"}, {"outcome": "allow_once"}]  # the start, the call
    after = await editor.request("totem/chat", {"text": "look up totem", "sessionId": before.sessionId})
    assert after.stopReason == "finished" and after.text == "It is a word."
    assert [p["tool"] for p in editor.permissions] == ["mcp-start", "mcp-start", "guarded__lookup"]
    end = next(e for e in editor.of("toolEnd") if e["tool"] == "guarded__lookup")
    assert end["status"] == "ok" and "a word the guarded dictionary knows" in end["output"]
    assert guarded.stats()["authorization_code"] == 1  # the turn used the kept login
    token = json.loads(keys.read_text())["mcp_logins"][guarded.url]["tokens"]["access_token"]
    assert token not in json.dumps(editor.events) and token not in json.dumps(editor.model.requests)


async def test_a_server_without_a_login_is_an_error_with_the_reason(editor):
    for name, reason in (("nowhere", "no MCP server nowhere is declared"), ("local", "only a URL server has a login")):
        try:
            await editor.request("totem/mcpLogin", {"name": name})
        except JsonRpcException as exc:
            assert exc.code == -32004 and reason in exc.message
        else:
            raise AssertionError(f"{name}: no error")
    assert editor.client.shown_documents == []


async def test_the_servers_to_log_in_to_are_the_declared_url_servers(editor, guarded):
    # `local` is a stdio server: no login, not listed.
    assert await editor.request("totem/mcpServers", {}) == [{"name": "guarded", "url": guarded.url}]
    assert await editor.request("totem/mcpServers", {"uri": editor.project.as_uri()}) == [{"name": "guarded", "url": guarded.url}]
