"""ConfigError, apart from config.py: a front end catches it without importing pydantic and the
config models (a `totem sessions show` loads neither)."""

from __future__ import annotations

from totem_engine.api.errors import EngineError


class ConfigError(EngineError):
    """A configuration problem, worded for the user.

    The message names the source (file path or label such as "editor settings"), the key path
    and what was expected; several problems are one per line. ``source`` is that label, or None
    when the problem is not tied to one source (e.g. an unknown provider in a model spec).
    """

    kind = "config"

    def __init__(self, message: str, *, source: str | None = None):
        super().__init__(message)
        self.source = source
