"""The closest-key suggestion of an unknown config key (config.py ``closest_key``): typical typos
of every key of every table get that key (issue 22)."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import BaseModel

from totem_engine.config import Config, closest_key

# "modes" is "mode" with an s added or "models" with an l dropped: one slip from each, and
# neither changes a letter. The suggestion is "mode" (the alphabetically first); both are fair.
AMBIGUOUS = {"modes"}


def tables(model: type[BaseModel], seen: set | None = None):
    """(table name, its keys) for ``model`` and every model its fields hold."""
    seen = set() if seen is None else seen
    if model in seen:
        return
    seen.add(model)
    yield model.__name__, list(model.model_fields)
    for info in model.model_fields.values():
        stack = [info.annotation]
        while stack:
            tp = stack.pop()
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                yield from tables(tp, seen)
            else:
                stack.extend(get_args(tp))


def typos(key: str) -> dict[str, str]:
    """What a hurried hand types for ``key``: two neighbours swapped, a letter dropped or doubled."""
    found = {}
    for i in range(len(key)):
        if i + 1 < len(key) and key[i] != key[i + 1]:
            found[key[:i] + key[i + 1] + key[i] + key[i + 2:]] = f"letters {i}-{i + 1} swapped"
        found[key[:i] + key[i + 1:]] = f"letter {i} dropped"
        found[key[:i] + key[i] + key[i:]] = f"letter {i} doubled"
    return found


def test_a_typical_typo_of_every_key_suggests_that_key():
    tried, wrong = 0, []
    for table, keys in tables(Config):
        for key in keys:
            for typo, slip in typos(key).items():
                if typo in keys or typo in AMBIGUOUS:
                    continue
                tried += 1
                got = closest_key(typo, keys)
                if got != key:
                    wrong.append(f"{table}.{key}: {typo!r} ({slip}) suggested {got!r}")
    assert {"Config", "ProviderConfig", "ModelOverride", "SnapshotsConfig", "CheckConfig"} <= {t for t, _k in tables(Config)}
    assert tried > 1000
    assert wrong == []


@pytest.mark.parametrize(
    ("typo", "expected"),
    [
        ("modle", "model"),  # swapped: one slip (difflib's ratio said "mode")
        ("mdoe", "mode"),
        ("max-steps", "max_steps"),
        ("Model", "model"),
        ("modes", "mode"),
        ("modell", "model"),  # a letter doubled, not "models" with one changed
        ("window_thing", None),  # nothing close: the message lists the known keys instead
        ("x", None),
    ],
)
def test_closest_key(typo, expected):
    keys = list(Config.model_fields)
    assert closest_key(typo, keys) == expected
