"""The bearer token the HTTP transport requires of every request (RFC 6750's header form).

``Authorization: Bearer TOKEN``, compared in constant time (``hmac.compare_digest`` over the
UTF-8 bytes). A request without it, or with another token, gets 401 with
``WWW-Authenticate: Bearer`` and is logged (method, path, client address, why) without the token
it sent.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

log = logging.getLogger("totem_mcp_server")

Scope = dict[str, Any]


class BearerToken:
    """ASGI middleware in front of ``app``: only requests carrying ``token`` reach it."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self._token = token.encode("utf-8", "surrogatepass")

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan: no request to refuse
            await self.app(scope, receive, send)
            return
        why = self._refusal(scope)
        if why is None:
            await self.app(scope, receive, send)
            return
        client = scope.get("client") or ("?", 0)
        log.warning("refused %s %s from %s:%s: %s (401)", scope.get("method"), scope.get("path"), client[0], client[1], why)
        body = f"{why}: send Authorization: Bearer <token> (the token totem mcp serve printed, or mcp_serve_token)".encode()
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"www-authenticate", b'Bearer realm="totem"')],
        })
        await send({"type": "http.response.body", "body": body})

    def _refusal(self, scope: Scope) -> str | None:
        """None when the request carries the token, else why not (never the token itself)."""
        sent = [value for name, value in scope.get("headers") or [] if name.lower() == b"authorization"]
        if not sent:
            return "no bearer token"
        scheme, _, token = sent[0].strip().partition(b" ")
        if scheme.lower() != b"bearer" or not token.strip():
            return "no bearer token"
        if not hmac.compare_digest(token.strip(), self._token):
            return "wrong bearer token"
        return None
