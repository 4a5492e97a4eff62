"""The keys a door keeps out of what it shows (the MCP server's results: a session can hold one
the model read) and the user's config they are read from before any project is opened: the
engine's own functions, named here for the doors."""

from __future__ import annotations

from pathlib import Path

from totem_engine.config import Config, load_config
from totem_engine.keys import KeyStoreError, api_key_for
from totem_engine.providers.http import redact, url_credentials

__all__ = ["Config", "KeyStoreError", "api_key_for", "redact", "url_credentials", "user_config"]


def user_config(config_file: Path | None = None) -> Config:
    """The user's config with ``config_file`` (``--config``) over it, no project's: what a door
    knows before it opens one (its own keys: ``mcp_serve_token``; the providers' keys).
    Raises ``ConfigError``."""
    return load_config(None, config_file=config_file).config
