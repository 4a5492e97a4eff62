"""``totem providers``, ``totem auth`` and the local servers of ``totem models``, as subprocesses."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess

import pytest

from tests.support.model_server import ModelServer, _Handler, text_reply
from totem_engine.config import load_config

KEY = "sk-stored-by-auth-set-4242"


def totem_cmd(totem, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(totem.env)
    # If keyring happens to be installed, make it pick its null backend: the file store is tested.
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    return subprocess.run(
        totem.command(*args),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def user_config(totem):
    return totem.home / "config" / "totem" / "config.toml"


def test_providers_add_writes_a_table_load_config_accepts_and_refuses_a_duplicate(totem, monkeypatch):
    path = user_config(totem)
    path.parent.mkdir(parents=True)
    path.write_text('# my settings\nmodel = "x/y"\n\n[providers.x]\nkind = "openai"\nbase_url = "http://h/v1"\n')

    added = totem_cmd(totem, "providers", "add", "LM Studio", "desk")
    assert added.returncode == 0, added.stderr
    added = totem_cmd(totem, "providers", "add", "other", "box", "--base-url", "http://gpu-box:9000/v1", "--no-key")
    assert added.returncode == 0, added.stderr
    text = path.read_text()
    assert text.startswith('# my settings\nmodel = "x/y"\n')  # the rest of the file kept as it was

    monkeypatch.setenv("XDG_CONFIG_HOME", str(totem.home / "config"))
    config = load_config(None).config
    assert config.model == "x/y"
    assert (config.providers["desk"].kind, config.providers["desk"].base_url) == ("openai", "http://127.0.0.1:1234/v1")
    assert config.providers["box"].base_url == "http://gpu-box:9000/v1"
    assert config.providers["x"].base_url == "http://h/v1"

    again = totem_cmd(totem, "providers", "add", "vllm", "desk")
    assert again.returncode == 1 and "already exists" in again.stderr
    assert path.read_text() == text

    assert totem_cmd(totem, "providers", "add", "nosuch", "n").returncode == 2
    assert totem_cmd(totem, "providers", "add", "other", "n").returncode == 2  # no address, no terminal
    assert totem_cmd(totem, "providers", "add", "openai", "bad name").returncode == 2
    assert path.read_text() == text


def test_providers_templates_lists_every_template(totem):
    result = totem_cmd(totem, "providers", "templates")
    assert result.returncode == 0
    names = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert {"openai", "litellm", "vllm", "lmstudio", "llamacpp", "cohere", "other"} <= set(names)
    assert "http://127.0.0.1:4000" in result.stdout


def test_auth_set_from_stdin_then_run_sends_the_key(totem):
    added = totem_cmd(totem, "providers", "add", "other", "sim", "--base-url", totem.server.base_url)
    assert added.returncode == 0, added.stderr
    assert "totem auth set sim" in added.stderr  # no terminal: told how to store the key

    stored = totem_cmd(totem, "auth", "set", "sim", stdin=KEY + "\n")
    assert stored.returncode == 0, stored.stderr
    keys = totem.home / "config" / "totem" / "keys.json"
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    assert KEY not in user_config(totem).read_text()

    totem.server.enqueue(text_reply("Hello with a key."))
    ran = totem_cmd(totem, "run", "--cwd", str(totem.project), "--model", "sim/test-model", "--json", "say hi")
    assert ran.returncode == 0, ran.stderr
    assert totem.server.request_headers[0]["Authorization"] == f"Bearer {KEY}"
    for output in (added, stored, ran):
        assert KEY not in output.stdout + output.stderr

    removed = totem_cmd(totem, "auth", "remove", "sim")
    assert removed.returncode == 0
    assert json.loads(keys.read_text()) == {"providers": {}}
    assert totem_cmd(totem, "auth", "remove", "sim").returncode == 1


class _Unauthorized(_Handler):
    def do_GET(self) -> None:
        self.send_json(401, {"error": {"message": "Authentication Error, No api key passed in."}})


class _KeyedGateway(ModelServer):
    """A gateway that wants a key: every GET answers 401."""

    handler = _Unauthorized


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(os.name != "posix", reason="loopback ports as on POSIX")
def test_models_lists_local_servers_that_answered(totem):
    with ModelServer() as vllm, _KeyedGateway() as gateway:
        vllm.models = [{"id": "Qwen/Qwen2.5-Coder-7B", "object": "model"}]
        ports = {"vllm": vllm.port, "litellm": gateway.port, "ollama": closed_port(), "lmstudio": closed_port(),
                 "llamacpp": closed_port()}
        probe_args = [arg for name, port in ports.items() for arg in ("--local-port", f"{name}={port}")]

        alone = totem_cmd(totem, "models", "--cwd", str(totem.project), *probe_args)
        assert alone.returncode == 0, alone.stderr
        lines = alone.stdout.splitlines()
        assert lines[0] == "local:"
        assert f"  vllm\thttp://127.0.0.1:{vllm.port}\tQwen/Qwen2.5-Coder-7B" in lines
        assert f"  litellm\thttp://127.0.0.1:{gateway.port}\tneeds a key" in lines
        assert not any(line.startswith(("  ollama", "  lmstudio", "  llamacpp")) for line in lines)

        # Once the vLLM server is configured it is listed as a provider, not again as local.
        added = totem_cmd(totem, "providers", "add", "vllm", "gpu", "--base-url", vllm.base_url)
        assert added.returncode == 0, added.stderr
        both = totem_cmd(totem, "models", "--cwd", str(totem.project), *probe_args)
        assert both.returncode == 0, both.stderr
        assert "gpu/Qwen/Qwen2.5-Coder-7B" in both.stdout.splitlines()
        assert not any(line.startswith("  vllm") for line in both.stdout.splitlines())
        assert any(line.startswith("  litellm") for line in both.stdout.splitlines())

        nothing = totem_cmd(totem, "models", "--cwd", str(totem.project), "--no-local")
        assert "local:" not in nothing.stdout
