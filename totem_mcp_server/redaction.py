"""No tool result carries a key: every string in it has the keys the server knows replaced.

The keys are the HTTP transport's bearer token and, for each configuration the server has
loaded (the user's, ``--config``, each project's), every provider's API key (config, keyring or
``keys.json``), its header values and the credentials of its base URL. A session can hold one
(the model read a file that has it): ``read_session`` then shows ``***`` in its place.
"""

from __future__ import annotations

from typing import Any

from totem_engine.api.secrets import (
    Config,
    KeyStoreError,
    api_key_for,
    redact,
    url_credentials,
)


class Redactor:
    def __init__(self, *secrets: str | None):
        self.secrets: set[str] = {s for s in secrets if s}

    def learn(self, config: Config) -> None:
        """Add the keys of ``config``'s providers."""
        for name, settings in config.providers.items():
            try:
                key = api_key_for(name, settings)
            except KeyStoreError:
                key = None  # an unusable keys.json: the provider cannot send it either
            self.secrets.update(s for s in (key, *settings.headers.values(), *url_credentials(settings.base_url or "")) if s)

    def text(self, value: str) -> str:
        return redact(value, self.secrets)

    def value(self, value: Any) -> Any:
        """``value`` (JSON-like: dicts, lists, strings, numbers) with each string redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value
