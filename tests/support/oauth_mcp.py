"""A loopback OAuth authorization server in front of an MCP server that wants its bearer token.

    python -m tests.support.oauth_mcp [--expires-in SECONDS]

Prints the port (a free one) on the first stdout line, then serves on ``http://127.0.0.1:PORT``:

- ``/mcp``: the streamable HTTP MCP server (tool ``lookup(word)``), for a request with
  ``Authorization: Bearer TOKEN`` of an access token it issued and that has not expired; any
  other gets 401 with ``WWW-Authenticate: Bearer resource_metadata=...`` (RFC 9728);
- ``/.well-known/oauth-protected-resource/mcp`` (RFC 9728) naming this server as the
  authorization server, and ``/.well-known/oauth-authorization-server`` (RFC 8414);
- ``/register``: dynamic client registration (RFC 7591), a public client (``none``);
- ``/authorize``: approves at once: 302 to the registered ``redirect_uri`` with a code and the
  ``state`` (RFC 6749 4.1), remembering the PKCE challenge (RFC 7636, S256 only);
- ``/token``: ``authorization_code`` (the verifier must match the challenge, the redirect URI
  the authorize request's) and ``refresh_token``; access tokens last ``--expires-in`` seconds;
- ``/stats``: what it did, as JSON: grants by type, MCP requests with a good and a bad token.

``OAuthMcp(expires_in)`` runs it in a process of its own for a test: ``base``, ``url`` (its MCP
endpoint), ``stats()``, ``close()``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlencode

import uvicorn
from mcp.server.mcpserver import MCPServer


def app(expires_in: int):
    server = MCPServer("guarded", instructions="Look words up.")

    @server.tool(description="The dictionary entry of a word.")
    def lookup(word: str) -> str:
        return f"{word}: a word the guarded dictionary knows."

    inner = server.streamable_http_app()
    clients: dict[str, list[str]] = {}  # client_id -> redirect URIs
    codes: dict[str, dict] = {}  # code -> client, redirect, challenge
    access: dict[str, float] = {}  # token -> expiry
    refresh: dict[str, str] = {}  # refresh token -> client
    stats = {"authorization_code": 0, "refresh_token": 0, "registered": 0, "mcp_ok": 0, "mcp_refused": 0}

    async def send_json(send, status: int, body: dict, headers: list | None = None) -> None:
        data = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), *(headers or [])]})
        await send({"type": "http.response.body", "body": data})

    async def read_body(receive) -> bytes:
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        return body

    async def asgi(scope, receive, send):
        if scope["type"] != "http":
            return await inner(scope, receive, send)
        host = dict(scope["headers"]).get(b"host", b"").decode()
        base = f"http://{host}"
        path = scope["path"]
        if path == "/.well-known/oauth-protected-resource/mcp":
            return await send_json(send, 200, {"resource": f"{base}/mcp", "authorization_servers": [base]})
        if path == "/.well-known/oauth-authorization-server":
            return await send_json(send, 200, {
                "issuer": base, "authorization_endpoint": f"{base}/authorize", "token_endpoint": f"{base}/token",
                "registration_endpoint": f"{base}/register", "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"], "token_endpoint_auth_methods_supported": ["none"],
            })
        if path == "/register":
            asked = json.loads(await read_body(receive))
            client_id = "client-" + secrets.token_hex(8)
            clients[client_id] = asked["redirect_uris"]
            stats["registered"] += 1
            return await send_json(send, 201, {**asked, "client_id": client_id, "token_endpoint_auth_method": "none"})
        if path == "/authorize":
            query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
            if query.get("redirect_uri") not in clients.get(query.get("client_id", ""), []) or query.get("code_challenge_method") != "S256":
                return await send_json(send, 400, {"error": "invalid_request"})
            code = secrets.token_urlsafe(16)
            codes[code] = {"client": query["client_id"], "redirect": query["redirect_uri"], "challenge": query["code_challenge"]}
            location = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query.get('state', '')})}"
            await send({"type": "http.response.start", "status": 302, "headers": [(b"location", location.encode())]})
            return await send({"type": "http.response.body", "body": b""})
        if path == "/token":
            form = {k: v[0] for k, v in parse_qs((await read_body(receive)).decode()).items()}
            grant = form.get("grant_type")
            if grant == "authorization_code":
                issued = codes.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "")
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
                if issued is None or issued["challenge"] != challenge or issued["redirect"] != form.get("redirect_uri"):
                    return await send_json(send, 400, {"error": "invalid_grant"})
                client = issued["client"]
            elif grant == "refresh_token" and form.get("refresh_token") in refresh:
                client = refresh.pop(form["refresh_token"])
            else:
                return await send_json(send, 400, {"error": "invalid_grant"})
            stats[grant] += 1
            token, renewal = "access-" + secrets.token_urlsafe(24), "refresh-" + secrets.token_urlsafe(24)
            access[token] = time.time() + expires_in
            refresh[renewal] = client
            return await send_json(send, 200, {"access_token": token, "token_type": "Bearer", "expires_in": expires_in,
                                               "refresh_token": renewal})
        if path == "/stats":
            return await send_json(send, 200, stats)
        if path.startswith("/mcp"):
            bearer = dict(scope["headers"]).get(b"authorization", b"").decode().removeprefix("Bearer ")
            if access.get(bearer, 0) < time.time():
                stats["mcp_refused"] += 1
                challenge = f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
                return await send_json(send, 401, {"error": "invalid_token"}, [(b"www-authenticate", challenge.encode())])
            stats["mcp_ok"] += 1
            return await inner(scope, receive, send)
        return await send_json(send, 404, {"error": "not_found"})

    return asgi


ROOT = Path(__file__).resolve().parents[2]


class OAuthMcp:
    def __init__(self, expires_in: int):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.oauth_mcp", "--expires-in", str(expires_in)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        self.base = f"http://127.0.0.1:{int(self.process.stdout.readline())}"
        self.url = f"{self.base}/mcp"
        for _ in range(200):
            try:
                self.stats()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("the OAuth stand-in did not listen")

    def stats(self) -> dict:
        with urllib.request.urlopen(f"{self.base}/stats", timeout=5) as answer:
            return json.loads(answer.read())

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def main() -> None:
    expires_in = int(sys.argv[sys.argv.index("--expires-in") + 1]) if "--expires-in" in sys.argv else 3600
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(app(expires_in), log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
