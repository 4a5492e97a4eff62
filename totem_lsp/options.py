"""``initializationOptions`` of ``initialize`` as a typed value, validated once (docs/protocol.md).

attrs, not pydantic: it loads before ``initialize`` is answered, and pygls already loaded attrs
(pydantic alone adds about 20 % to the start-up, see protocol.py).
"""

from __future__ import annotations

from typing import Any

import attrs
from attrs.validators import instance_of, optional

from totem_lsp.protocol import plain


@attrs.frozen
class InitializationOptions:
    """What the editor sends in ``initializationOptions``; every field optional."""

    token: str | None = attrs.field(default=None, validator=optional(instance_of(str)), metadata={"expected": "a string"})
    """TCP mode: the server's token (ignored on stdio)."""
    model: str | None = attrs.field(default=None, validator=optional(instance_of(str)), metadata={"expected": "a string"})
    """``"provider/model"``: the model for new sessions, over the config's."""
    config: dict[str, Any] | None = attrs.field(default=None, validator=optional(instance_of(dict)), metadata={"expected": "an object"})
    """The editor's settings: the TOML config's keys (config.md)."""

    @classmethod
    def from_wire(cls, raw: Any) -> tuple["InitializationOptions", list[str]]:
        """The options, and one problem per field left at its default for having the wrong type.
        Anything but an object gives the defaults; unknown fields and nulls are ignored."""
        data = plain(raw)
        if not isinstance(data, dict):
            return cls(), []
        given: dict[str, Any] = {}
        problems: list[str] = []
        for field in attrs.fields(cls):
            value = data.get(field.name)
            if value is None:
                continue
            try:
                field.validator(None, field, value)
            except TypeError:
                expected = field.metadata["expected"]
                problems.append(f"initializationOptions.{field.name}: expected {expected}, got {type(value).__name__}; ignored")
                continue
            given[field.name] = value
        return cls(**given), problems

