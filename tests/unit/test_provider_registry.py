"""The providers' registry (providers/registry.py): one builder per kind the config allows, each
building the class that declares that kind; an openai entry without its base_url refused."""

from __future__ import annotations

from typing import get_args

import pytest

from totem_engine.config import ConfigError, ProviderConfig, ProviderKind
from totem_engine.providers.registry import BUILDERS, make_provider


def test_every_kind_the_config_allows_has_a_builder_and_no_other():
    assert set(BUILDERS) == set(get_args(ProviderKind))
    assert len(BUILDERS) == 5  # the kinds were read


@pytest.mark.parametrize("kind", get_args(ProviderKind))
async def test_each_kind_builds_the_class_that_declares_it(kind: str):
    settings = ProviderConfig(kind=kind, base_url="http://127.0.0.1:9", api_key="sk-registry-test")
    provider = make_provider("entry", settings, timeout=5)
    try:
        assert type(provider).kind == kind
        assert provider.name == "entry"
    finally:
        await provider.aclose()


def test_an_openai_entry_needs_its_base_url():
    with pytest.raises(ConfigError, match=r'\[providers.entry\]: base_url is required for kind "openai"'):
        make_provider("entry", ProviderConfig(kind="openai", api_key="sk-registry-test"), timeout=5)
