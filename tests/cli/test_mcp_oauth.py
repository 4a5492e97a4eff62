"""A remote MCP server that wants an OAuth login, through the real ``totem mcp login`` and ``totem
run``: tests/support/oauth_mcp.py is the authorization server and the MCP server behind it, and
tests/support/loopback_browser.py the browser ``webbrowser`` opens (``BROWSER``), which approves
at once. A turn before the login says how to log in; the login discovers, registers, authorizes
with PKCE and keeps the token in the 0600 keys.json; an expired token is refreshed by the next
turn, which calls the server's tool; no token reaches an event, an answer or a file but keys.json."""

from __future__ import annotations

import json
import stat
import subprocess
import time

import pytest

from tests.support.loopback_browser import browser_command
from tests.support.model_server import text_reply, tool_reply
from tests.support.oauth_mcp import OAuthMcp
from tests.support.real_mcp import write_mcp_json

EXPIRES_IN = 4


@pytest.fixture
def guarded(totem, tmp_path):
    server = OAuthMcp(EXPIRES_IN)
    write_mcp_json(totem.home / "config" / "totem" / "mcp.json", {"guarded": {"url": server.url}})
    yield server
    server.close()


def login(totem, browser: str, name: str = "guarded"):
    env = dict(totem.env, BROWSER=browser)
    done = subprocess.run(
        totem.command("mcp", "login", name, "--cwd", str(totem.project)),
        capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
    )
    return done


def test_a_turn_says_how_to_log_in_and_after_the_login_an_expired_token_is_refreshed_and_the_tool_called(totem, guarded, tmp_path):
    totem.server.enqueue(text_reply("No dictionary."))
    before = totem.agent("look up totem", extra=("--yes",))
    assert before.code == 0, before.stderr
    notice = next(e["message"] for e in before.of("notice") if e["message"].startswith("MCP server guarded did not start"))
    assert "needs a login: run `totem mcp login guarded`" in notice
    assert guarded.stats()["registered"] == 0  # a turn registers nothing: the login does

    done = login(totem, browser_command(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "Logged in to guarded" in done.stderr and "1 tools" in done.stderr
    assert f"{guarded.base}/authorize?" in done.stderr  # the URL, for a terminal without a browser
    stats = guarded.stats()
    assert stats["registered"] == 1 and stats["authorization_code"] == 1 and stats["mcp_ok"] >= 1

    keys = totem.home / "config" / "totem" / "keys.json"
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    record = json.loads(keys.read_text())["mcp_logins"][guarded.url]
    first_token = record["tokens"]["access_token"]
    assert record["tokens"]["refresh_token"] and record["client"]["client_id"].startswith("client-")

    time.sleep(EXPIRES_IN + 1)  # the token expires; the next run refreshes it before its first request
    totem.server.enqueue(tool_reply([("guarded__lookup", {"word": "totem"})]))
    totem.server.enqueue(text_reply("It is a word."))
    result = totem.agent("look up totem", extra=("--yes",))
    assert result.code == 0, result.stderr
    end = next(e for e in result.of("toolEnd") if e["tool"] == "guarded__lookup")
    assert end["status"] == "ok" and "a word the guarded dictionary knows" in end["output"]
    stats = guarded.stats()
    assert stats["refresh_token"] >= 1 and stats["authorization_code"] == 1 and stats["registered"] == 1
    record = json.loads(keys.read_text())["mcp_logins"][guarded.url]
    assert record["tokens"]["access_token"] != first_token
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600

    secrets = [first_token, record["tokens"]["access_token"], record["tokens"]["refresh_token"]]
    seen = before.stdout + before.stderr + done.stdout + done.stderr + result.stdout + result.stderr
    seen += json.dumps(totem.server.requests)
    for path in (totem.home / "data").rglob("*"):
        if path.is_file():
            seen += path.read_bytes().decode("utf-8", errors="replace")
    assert not [secret for secret in secrets if secret in seen]


def test_logout_forgets_the_login_and_a_stdio_server_has_none(totem, guarded, tmp_path):
    assert login(totem, browser_command(tmp_path)).returncode == 0
    out = totem.run("mcp", "logout", "guarded", "--cwd", str(totem.project))
    assert out.code == 0 and "Logged out of guarded" in out.stderr
    keys = json.loads((totem.home / "config" / "totem" / "keys.json").read_text())
    assert guarded.url not in keys.get("mcp_logins", {})
    totem.server.enqueue(text_reply("No dictionary."))
    after = totem.agent("look up totem", extra=("--yes",))
    assert any("needs a login" in e["message"] for e in after.of("notice"))

    write_mcp_json(totem.home / "config" / "totem" / "mcp.json", {"local": {"command": "true"}})
    refused = login(totem, browser_command(tmp_path), "local")
    assert refused.returncode == 1 and "only a URL server has a login" in refused.stderr
    unknown = login(totem, browser_command(tmp_path), "nowhere")
    assert unknown.returncode == 1 and "no MCP server nowhere is declared" in unknown.stderr
