"""The key store: keys.json (mode 0600), the keyring when usable, config api_key first, no leaks."""

from __future__ import annotations

import json
import os
import stat
import sys
import types

import pytest

from tests.support.model_server import ModelServer, Reply
from totem_engine.config import ConfigError, ProviderConfig
from totem_engine.keys import (
    KeyStoreError,
    api_key_for,
    check_key,
    keys_file,
    remove_key,
    store_key,
    stored_key,
)
from totem_engine.providers.errors import AuthenticationError
from totem_engine.providers.registry import make_provider
from totem_engine.vocab.chat import ChatRequest
from totem_engine.vocab.messages import Message

KEY = "sk-stored-secret-0123456789"


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """A fresh user config folder and no keyring package, unless a test installs a fake one."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setitem(sys.modules, "keyring", None)  # import keyring -> ImportError
    return tmp_path


def mode_of(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_file_store_is_0600_even_with_a_permissive_umask_and_round_trips():
    old = os.umask(0)
    try:
        where = store_key("work", KEY)
        store_key("other", "sk-other-key-9999")
    finally:
        os.umask(old)

    path = keys_file()
    assert where.endswith("keys.json") and path.exists()
    assert mode_of(path) == 0o600
    assert json.loads(path.read_text()) == {"providers": {"other": "sk-other-key-9999", "work": KEY}}
    assert stored_key("work") == KEY and stored_key("other") == "sk-other-key-9999"
    assert stored_key("missing") is None
    # No temporary file is left beside it.
    assert sorted(p.name for p in path.parent.iterdir()) == ["keys.json"]


def test_config_api_key_wins_over_the_stored_one():
    store_key("work", KEY)
    assert api_key_for("work", ProviderConfig(kind="openai", api_key="sk-from-config")) == "sk-from-config"
    assert api_key_for("work", ProviderConfig(kind="openai")) == KEY
    assert api_key_for("nobody", ProviderConfig(kind="openai")) is None


def test_remove_key():
    store_key("work", KEY)
    store_key("keep", "sk-keep-this-one")
    assert remove_key("work") is True
    assert remove_key("work") is False
    assert stored_key("work") is None and stored_key("keep") == "sk-keep-this-one"


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_file_others_may_read_is_refused_without_showing_the_key():
    store_key("work", KEY)
    keys_file().chmod(0o644)
    with pytest.raises(KeyStoreError) as caught:
        api_key_for("work", ProviderConfig(kind="openai"))
    assert "chmod 600" in str(caught.value) and "644" in str(caught.value)
    assert KEY not in str(caught.value)
    assert isinstance(caught.value, ConfigError)  # the CLI reports it as a config problem
    # A key in the config does not need the file at all.
    assert api_key_for("work", ProviderConfig(kind="openai", api_key="sk-config")) == "sk-config"


def test_broken_file_error_does_not_quote_it():
    keys_file().parent.mkdir(parents=True)
    keys_file().write_text('{"providers": {"work": "' + KEY + '",,}}')
    keys_file().chmod(0o600)
    with pytest.raises(KeyStoreError) as caught:
        stored_key("work")
    assert "not valid JSON" in str(caught.value) and KEY not in str(caught.value)


def test_bad_keys_are_refused_without_echo():
    assert check_key(f"  {KEY}\n") == KEY
    with pytest.raises(KeyStoreError, match="empty"):
        store_key("work", " \n")
    with pytest.raises(KeyStoreError) as caught:
        store_key("work", "sk-abc def-secretpart")
    assert "secretpart" not in str(caught.value)
    assert not keys_file().exists()


class FakeBackend:
    def __init__(self, priority: float = 5, fail_set: bool = False):
        self.priority = priority
        self.fail_set = fail_set
        self.saved: dict[tuple[str, str], str] = {}

    def get_password(self, service, user):
        return self.saved.get((service, user))

    def set_password(self, service, user, value):
        if self.fail_set:
            raise RuntimeError("locked collection")
        self.saved[(service, user)] = value

    def delete_password(self, service, user):
        del self.saved[(service, user)]


def install_keyring(monkeypatch, backend: FakeBackend) -> None:
    module = types.ModuleType("keyring")
    module.get_keyring = lambda: backend
    monkeypatch.setitem(sys.modules, "keyring", module)


def test_a_usable_keyring_is_preferred_and_the_file_is_not_written(monkeypatch):
    backend = FakeBackend()
    install_keyring(monkeypatch, backend)
    assert store_key("work", KEY) == "the system keyring"
    assert backend.saved == {("totem", "work"): KEY}
    assert not keys_file().exists()
    assert api_key_for("work", ProviderConfig(kind="openai")) == KEY
    assert remove_key("work") is True and backend.saved == {}


def test_a_keyring_that_fails_or_is_the_null_backend_falls_back_to_the_file(monkeypatch):
    install_keyring(monkeypatch, FakeBackend(fail_set=True))
    assert store_key("work", KEY).endswith("keys.json")
    assert json.loads(keys_file().read_text())["providers"]["work"] == KEY

    null = FakeBackend(priority=-1)  # keyring.backends.null.Keyring's priority
    install_keyring(monkeypatch, null)
    store_key("second", "sk-second-key-42")
    assert null.saved == {} and stored_key("second") == "sk-second-key-42"


async def test_make_provider_uses_the_stored_key_and_keeps_it_out_of_repr_and_errors():
    store_key("sim", KEY)
    with ModelServer() as server:
        # Some vendors echo the key back in their 401 text.
        server.enqueue(Reply(status=401, body=json.dumps({"error": {"message": f"bad key {KEY}"}})))
        provider = make_provider("sim", ProviderConfig(kind="openai", base_url=server.base_url), timeout=10)
        assert KEY not in repr(provider)
        try:
            with pytest.raises(AuthenticationError) as caught:
                async for _ in provider.stream(
                    ChatRequest(model="m", system="", messages=(Message(role="user", text="hi"),))
                ):
                    pass
        finally:
            await provider.aclose()
        assert server.request_headers[0]["Authorization"] == f"Bearer {KEY}"
    assert KEY not in str(caught.value) and "***" in str(caught.value)
    # The settings object the provider was built from still shows no key either.
    assert KEY not in repr(ProviderConfig(kind="openai", api_key=KEY))
