"""``totem mcp serve --http`` on loopback: the ``mcp`` package's client with the bearer token
printed at start; a wrong or missing token is 401, logged without the token; a token from the
config is not printed; only loopback addresses are served."""

from __future__ import annotations

import httpx

from tests.mcp_server.conftest import TOOLS, result
from tests.support.model_server import text_reply

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_over_http_with_the_printed_token_a_prompt_gets_the_models_answer(served):
    served.server.enqueue(text_reply("Hello over HTTP."))
    with served.http() as server:
        assert server.token and server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")
        async with served.http_client(server.url, server.token) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
            session_id = result(await client.call_tool("start_session", {}))["session_id"]
            answer = result(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "say hello"}))
        server.stop()
    assert answer["text"] == "Hello over HTTP." and answer["stop_reason"] == "finished"
    assert "".join(server.log).count(server.token) == 1  # printed once, at start


def test_a_wrong_or_missing_token_is_401_and_the_log_holds_no_token(served):
    wrong = "not-the-token-" + "x" * 20
    with served.http() as server:
        assert server.token
        refused = [
            httpx.post(server.url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {wrong}"}),
            httpx.post(server.url, json=INITIALIZE, headers=HEADERS),
            httpx.post(server.url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Basic {server.token}"}),
        ]
        accepted = httpx.post(server.url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {server.token}"})
        server.stop()
    assert [r.status_code for r in refused] == [401, 401, 401]
    assert refused[0].headers["www-authenticate"].startswith("Bearer")
    assert accepted.status_code == 200
    log = "".join(server.log)
    assert "wrong bearer token (401)" in log and "no bearer token (401)" in log
    assert wrong not in log
    assert log.count(server.token) == 1  # the start line only: not the Basic attempt that carried it


async def test_a_token_from_the_config_is_required_and_never_printed(served):
    token = "configured-token-0123456789"
    config = served.serve_config(extra="")
    config.write_text(f'mcp_serve_token = "{token}"\n' + config.read_text())
    with served.http(config=config) as server:
        assert server.token is None
        async with served.http_client(server.url, token) as client:
            assert len((await client.list_tools()).tools) == len(TOOLS)
        async with httpx.AsyncClient() as http:
            refused = await http.post(server.url, json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer something-else"})
        server.stop()
    assert refused.status_code == 401
    assert token not in "".join(server.log)


def test_only_loopback_addresses_are_served(served):
    done = served.run("mcp", "serve", "--cwd", str(served.project), "--http", "0.0.0.0:0")
    assert done.code == 2 and "loopback only" in done.stderr
    done = served.run("mcp", "serve", "--cwd", str(served.project), "--http", "127.0.0.1")
    assert done.code == 2 and "HOST:PORT" in done.stderr
