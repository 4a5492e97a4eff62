"""OAuth for a remote MCP server: its login kept like an API key, and the SDK's client flow.

The flow is the ``mcp`` SDK's ``OAuthClientProvider`` (an ``httpx2`` auth: protected resource
and authorization server metadata discovery, dynamic client registration, PKCE, refresh), as
https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization describes it. What
Totem adds: ``StoredLogin``, its ``TokenStorage``, keeps the tokens, their expiry, the client
registration and the authorization server's metadata per server URL in keys.py (keyring, else the
0600 ``keys.json``), every token known to redaction.py the moment it is read or issued; and
``OAuth`` restores the expiry and metadata on start, which the SDK does not store, so a token that
expired since the last run is refreshed before the first request instead of failing it.

A login (``totem mcp login``, mcp/login.py) has a redirect URI on a loopback listener and a
``show_url`` that opens the browser; a turn has neither: when the stored login no longer works
the flow stops with ``LoginNeeded``, whose message says how to log in.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from totem_engine.keys import store_login, stored_login
from totem_engine.redaction import know

NO_REDIRECT = "http://127.0.0.1/callback"  # a turn's: it never redirects (the login is the CLI's)


class LoginNeeded(Exception):
    """The server wants a login that only ``totem mcp login NAME`` (or an editor's) can give."""


def login_hint(name: str) -> str:
    # Door-neutral: the command line's command, and the editors' command of the same login
    # (LSP ``totem/mcpLogin``).
    return f"MCP server {name} needs a login: run `totem mcp login {name}`, then try again"


def has_login(url: str) -> bool:
    """Whether a login is kept for the server at ``url``."""
    return stored_login(url) is not None


class StoredLogin:
    """The SDK's ``TokenStorage`` over keys.py's record for one server URL. ``redirect_uri``: the
    login's; a registration made for another redirect (an earlier login's port) is not offered,
    so the flow registers again."""

    def __init__(self, url: str, redirect_uri: str | None = None):
        self.url = url
        self.redirect_uri = redirect_uri
        self.record: dict[str, Any] = stored_login(url) or {}
        tokens = self.record.get("tokens") or {}
        know([tokens.get("access_token"), tokens.get("refresh_token"), (self.record.get("client") or {}).get("client_secret")])

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        tokens = self.record.get("tokens")
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: Any) -> None:
        know([tokens.access_token, tokens.refresh_token])
        self.record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        self.record["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        store_login(self.url, self.record)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        client = self.record.get("client")
        if not client:
            return None
        info = OAuthClientInformationFull.model_validate(client)
        if self.redirect_uri is not None and self.redirect_uri not in [str(uri) for uri in info.redirect_uris or []]:
            return None
        return info

    async def set_client_info(self, client_info: Any) -> None:
        know([client_info.client_secret])
        self.record["client"] = client_info.model_dump(mode="json", exclude_none=True)
        store_login(self.url, self.record)

    def remember_metadata(self, metadata: Any) -> None:
        if metadata is not None:
            self.record["authorization_server"] = metadata.model_dump(mode="json", exclude_none=True)
            store_login(self.url, self.record)

    def redirect(self) -> str:
        """The redirect URI to register with: the login's, else the kept registration's."""
        if self.redirect_uri is not None:
            return self.redirect_uri
        uris = (self.record.get("client") or {}).get("redirect_uris") or [NO_REDIRECT]
        return str(uris[0])


def oauth(
    name: str,
    url: str,
    *,
    show_url: Callable[[str], Awaitable[None]] | None = None,
    redirect: tuple[str, Callable[[], Awaitable[Any]]] | None = None,
) -> Any:
    """The ``httpx2`` auth for the server ``name`` at ``url``. A login gives ``show_url`` (how
    the user reaches the authorization URL) and ``redirect`` (its redirect URI, and a wait for
    the ``AuthorizationCodeResult`` the listener catches); a turn gives neither and the flow
    raises ``LoginNeeded`` where it would need the user."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata, OAuthMetadata

    storage = StoredLogin(url, redirect[0] if redirect else None)

    class _Provider(OAuthClientProvider):
        async def _initialize(self) -> None:
            await super()._initialize()
            expires_at = storage.record.get("expires_at")
            self.context.token_expiry_time = expires_at
            if storage.record.get("authorization_server") and self.context.oauth_metadata is None:
                self.context.oauth_metadata = OAuthMetadata.model_validate(storage.record["authorization_server"])

        async def _handle_token_response(self, response: Any) -> None:
            await super()._handle_token_response(response)
            storage.remember_metadata(self.context.oauth_metadata)

        async def _handle_refresh_response(self, response: Any) -> bool:
            refreshed = await super()._handle_refresh_response(response)
            storage.remember_metadata(self.context.oauth_metadata)
            return refreshed

    async def no_browser(authorization_url: str) -> None:
        raise LoginNeeded(login_hint(name))

    async def no_callback() -> Any:
        raise LoginNeeded(login_hint(name))

    metadata = OAuthClientMetadata(
        client_name="Totem", redirect_uris=[storage.redirect()], grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    return _Provider(
        url, metadata, storage,
        redirect_handler=show_url if show_url is not None and redirect else no_browser,
        callback_handler=redirect[1] if redirect else no_callback,
    )
