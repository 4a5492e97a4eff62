"""The embedded default: which runs use the local model, and the server started for them
(totem_engine.local.ensure_local_provider / with_local_default / LocalLease)."""

from __future__ import annotations

import os

import httpx
import pytest

from tests.unit.test_local_server import fake_install
from totem_engine.config import Config, ProviderConfig
from totem_engine.local import (
    ensure_local_provider,
    server,
    wants_local,
    with_local_default,
)
from totem_engine.local.model import MODEL_ID


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "local"
    yield root
    server.stop(root)


def config_for(root, **kw) -> Config:
    return Config(local_dir=str(root), **kw)


def test_which_specs_want_the_local_model():
    assert wants_local(Config()) == ""  # nothing configured: the default model
    assert wants_local(Config(model="local/qwen2.5-coder-1.5b")) == "qwen2.5-coder-1.5b"
    assert wants_local(Config(model="ollama/qwen")) is None
    mine = Config(model="local/x", providers={"local": ProviderConfig(kind="openai", base_url="http://h/v1")})
    assert wants_local(mine) is None  # the user's own [providers.local] wins
    assert wants_local(Config(model="ollama/qwen"), "local/abc") == "abc"  # --model local/abc


def test_nothing_set_up_means_no_local_provider(root):
    assert ensure_local_provider(config_for(root)) is None
    assert not root.joinpath("server.json").exists()


def test_a_configured_model_is_left_alone(root):
    fake_install(root)
    config = config_for(root, model="ollama/qwen2.5-coder", providers={"ollama": ProviderConfig(kind="ollama")})
    assert ensure_local_provider(config) is None
    assert server.read_state(root) is None  # not started


def test_no_model_and_an_install_start_the_server_and_give_the_provider(root):
    fake_install(root)
    name, settings, model_id, lease = ensure_local_provider(config_for(root, local_ctx=4096))
    assert (name, settings.kind, model_id) == ("local", "openai", MODEL_ID)
    state = server.read_state(root)
    assert settings.base_url == f"http://127.0.0.1:{state.port}/v1"
    assert state.owner == os.getpid() and state.ctx == 4096
    assert httpx.get(settings.base_url + "/models", trust_env=False).status_code == 200
    assert server.live_leases(root) == [os.getpid()]
    # The run ends: this process started it and no one else uses it, so it stops.
    lease.release()
    assert not server.pid_alive(state.pid)
    assert server.read_state(root) is None


def test_a_running_server_is_reused_and_left_running(root):
    install = fake_install(root)
    state, _ = server.start(root, install, owner=None, timeout=20)  # `totem local start`
    _name, settings, _id, lease = ensure_local_provider(config_for(root))
    assert settings.base_url == state.base_url
    lease.release()
    assert server.status(root).healthy


def test_local_port_is_honoured(root):
    fake_install(root)
    port = server.free_port()
    _name, settings, _id, lease = ensure_local_provider(config_for(root, local_port=port))
    assert settings.base_url == f"http://127.0.0.1:{port}/v1"
    lease.release()


def test_the_default_is_a_new_config_with_the_provider_model_and_window(root):
    fake_install(root)
    config = config_for(root)
    local, spec, lease = with_local_default(config)
    assert spec == f"local/{MODEL_ID}"
    assert local.model == f"local/{MODEL_ID}"
    assert local.providers["local"].kind == "openai"
    assert local.models[f"local/{MODEL_ID}"].context_window == 8192
    assert local.provider_and_model() == ("local", MODEL_ID)
    # The loaded config is left as it was.
    assert (config.model, config.providers, config.models) == (None, {}, {})
    lease.release()


def test_the_default_with_a_local_spec_keeps_the_configured_model_unset(root):
    fake_install(root)
    local, spec, lease = with_local_default(config_for(root), "local/other")
    assert spec == "local/other"
    assert local.providers["local"].base_url.startswith("http://127.0.0.1:")
    lease.release()


def test_the_server_stops_with_the_last_lease_of_the_process(root):
    """Two projects open on one server (an editor's workspace folders): closing one leaves it."""
    fake_install(root)
    _n, _s, _id, first = ensure_local_provider(config_for(root))
    _n, _s, _id, second = ensure_local_provider(config_for(root))
    state = server.read_state(root)
    first.release()
    first.release()  # a second release of the same lease changes nothing
    assert server.pid_alive(state.pid) and server.live_leases(root) == [os.getpid()]
    second.release()
    assert not server.pid_alive(state.pid)
    assert server.live_leases(root) == []


def test_a_config_with_the_new_keys_validates():
    from totem_engine.config import ConfigError, ConfigLayer, merge_layers

    config = merge_layers([ConfigLayer("f", "user", {"local_dir": "~/x", "local_port": 8091, "local_ctx": 4096})])
    assert (config.local_port, config.local_ctx) == (8091, 4096)
    with pytest.raises(ConfigError, match="local_port: expected at most 65535"):
        merge_layers([ConfigLayer("f", "user", {"local_port": 70000})])
