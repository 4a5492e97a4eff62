"""The keys a door keeps out of what it shows (the MCP server's results: a session can hold one
the model read), and the user's config they are read from before any project is opened: the
engine's one redaction (redaction.py), named here for the doors."""

from __future__ import annotations

from pathlib import Path

from totem_engine.config import Config, load_config
from totem_engine.keys import KeyStoreError, api_key_for
from totem_engine.redaction import know, know_config, redacted, scrubbed

__all__ = ["Config", "know", "learn", "redacted", "scrubbed", "user_config"]


def learn(config: Config) -> None:
    """Every secret ``config`` holds known from now on, the providers' stored keys (keyring,
    ``keys.json``) fetched now rather than at their first request: a result may carry one before
    this process has used the provider."""
    know_config(config)
    for name, settings in config.providers.items():
        try:
            api_key_for(name, settings)  # keys.py makes what it fetches known
        except KeyStoreError:
            pass  # an unusable keys.json: the provider cannot send it either


def user_config(config_file: Path | None = None) -> Config:
    """The user's config with ``config_file`` (``--config``) over it, no project's: what a door
    knows before it opens one (its own keys: ``mcp_serve_token``; the providers' keys).
    Raises ``ConfigError``."""
    return load_config(None, config_file=config_file).config
