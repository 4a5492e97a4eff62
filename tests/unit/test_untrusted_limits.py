"""An untrusted project may only tighten: every key declares what it may do (issue 16, item 4).

Regression: an untrusted ``max_steps = 1000000`` ran past the user's 10, and
``retry_max_wait = 1e9`` let a ``Retry-After: 999999`` be waited for. Properties: for every key
the schema marks ``tighten``, whatever the project and the user say, the result is never looser
than the user's; every key declares a class, and docs/config.md lists it.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from totem_engine.config import Config, ConfigLayer, LoadedConfig, merge_layers, untrusted_class
from totem_engine.providers.errors import ProviderError
from totem_engine.retry import retry_delay
from totem_engine.trust import apply_trust, restrict

PROPERTY = settings(max_examples=150, deadline=None)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "config.md"


def _loaded(user: dict, project: dict) -> LoadedConfig:
    layers = [ConfigLayer("~/.config/totem/config.toml", "user", user), ConfigLayer(".totem/config.toml", "project", project)]
    return LoadedConfig(config=merge_layers(layers), layers=layers)


async def test_an_untrusted_project_cannot_raise_the_users_limits(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    loaded = _loaded({"max_steps": 10}, {"max_steps": 1_000_000, "retry_max_wait": 1e9})
    restricted, notice = await apply_trust(tmp_path, loaded, None)
    assert restricted.config.max_steps == 10
    assert restricted.config.retry_max_wait == 60.0
    assert "max_steps = 1000000" in notice and "retry_max_wait" in notice
    wait = retry_delay(ProviderError("slow down", retry_after=999_999), 1, restricted.config.retry_max_wait)
    assert wait == 60.0


async def test_no_limit_from_an_untrusted_project_is_the_loosest_value(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    restricted, notice = await apply_trust(tmp_path, _loaded({"max_steps": 10}, {"max_steps": 0}), None)
    assert restricted.config.max_steps == 10 and notice
    # A user with no limit keeps the project's tighter cap, and nothing is reported as dropped.
    restricted, notice = await apply_trust(tmp_path, _loaded({"max_steps": 0}, {"max_steps": 30}), None)
    assert restricted.config.max_steps == 30 and notice is None


_TIGHTENED = [key for key in Config.model_fields if untrusted_class(key).kind == "tighten"]
_NUMBERS = {
    "max_steps": st.integers(0, 10**7),
    "max_agents": st.integers(1, 10**4),
    "retry_max_wait": st.floats(0.001, 1e12),
    "request_timeout": st.floats(0.001, 1e12),
    "stall_timeout": st.floats(0.001, 1e12),
    "permission_timeout": st.floats(0.001, 1e12),
    "mcp_start_timeout": st.floats(0.001, 1e12),
    "mcp_call_timeout": st.floats(0.001, 1e12),
    "mcp_idle_stop": st.floats(0, 1e12),
    "mcp_schema_share": st.floats(0.001, 1),
    "forge_pages": st.integers(0, 10**4),
    "forge_chars": st.integers(200, 10**9),
}


def _looseness(key: str, value):
    """How loose a value is: bigger is looser; "no limit" is the loosest of all."""
    rule = untrusted_class(key)
    if rule.order:
        return -rule.order.index(value)
    return math.inf if rule.no_limit is not None and value == rule.no_limit else value


@st.composite
def _settings(draw):
    key = draw(st.sampled_from(_TIGHTENED))
    values = st.sampled_from(untrusted_class(key).order) if untrusted_class(key).order else _NUMBERS[key]
    user = draw(st.none() | values)
    return key, user, draw(values)


@PROPERTY
@given(_settings())
def test_a_tightened_key_is_never_looser_than_the_users(case):
    key, user, project = case
    base = Config.model_validate({key: user} if user is not None else {})
    kept, dropped = restrict({key: project}, base)
    result = merge_layers([ConfigLayer("user", "user", {key: user} if user is not None else {}),
                           ConfigLayer("project", "project", kept)])
    assert _looseness(key, getattr(result, key)) <= _looseness(key, getattr(base, key))
    assert _looseness(key, getattr(result, key)) <= _looseness(key, getattr(Config.model_validate({key: project}), key))
    assert bool(dropped) == (_looseness(key, project) > _looseness(key, getattr(base, key)))


def test_every_key_declares_what_an_untrusted_project_may_do_and_the_docs_list_it():
    text = DOCS.read_text()
    section = text[text.index("## What an untrusted project may set"):]
    section = section[: section.index("\n## ", 1)]
    listed = {
        key: kind
        for cell, kind in re.findall(r"^\|([^|]*)\| ([a-z]+) \|", section, re.MULTILINE)
        for key in re.findall(r"`\[?([a-z_]+)", cell)
    }
    for key in Config.model_fields:
        rule = untrusted_class(key)  # raises for a key that declares nothing
        assert listed.get(key) == rule.kind, f"docs/config.md lists {key} as {listed.get(key)}, the schema as {rule.kind}"
