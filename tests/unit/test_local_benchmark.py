"""The benchmark of the installed server (totem_engine.local.benchmark) against the fake
llama-server of test_local_server: its request, what it keeps, and the server left as it was."""

from __future__ import annotations

import json

import pytest

from tests.unit.test_local_server import fake_install
from totem_engine.local import server
from totem_engine.local.benchmark import (
    GENERATED,
    BenchmarkError,
    benchmark,
    last_speed,
    measure,
)
from totem_engine.local.model import LocalPaths


@pytest.fixture
def local_root(tmp_path):
    root = tmp_path / "local"
    yield root
    server.stop(root)


def test_a_benchmark_starts_the_server_measures_keeps_the_speed_and_stops_it(local_root):
    install = fake_install(local_root)
    assert last_speed(local_root) is None
    speed = benchmark(local_root, install, ctx=4096)

    assert (speed.prompt_per_second, speed.generated_per_second) == (80.0, 22.0)
    assert (speed.prompt_tokens, speed.generated_tokens) == (212, GENERATED)
    assert speed.model_id == "qwen2.5-coder-1.5b" and speed.cores >= 1
    sent = json.loads((local_root / "fake-completion.json").read_text())
    assert sent["n_predict"] == GENERATED and sent["ignore_eos"] is True and sent["cache_prompt"] is False
    assert "inventory" in sent["prompt"]  # prompts/local_benchmark.txt
    assert last_speed(local_root) == speed
    assert json.loads(LocalPaths(local_root).benchmark.read_text())["prompt_per_second"] == 80.0
    # Started for the benchmark, so stopped after it; no lease left behind.
    assert server.status(local_root).state is None
    assert server.live_leases(local_root) == []
    assert speed.line().startswith("80 tokens/s of prompt, 22.0 generated (")
    assert f"{speed.cores} core" in speed.line()


def test_a_running_server_is_measured_and_left_running(local_root):
    install = fake_install(local_root)
    state, _ = server.start(local_root, install, owner=None, timeout=20)
    benchmark(local_root, install)
    assert server.status(local_root).healthy and server.read_state(local_root).pid == state.pid


def test_a_server_that_does_not_answer_the_benchmark_is_an_error_worded_for_the_user(local_root):
    install = fake_install(local_root)
    state, _ = server.start(local_root, install, owner=None, timeout=20)
    with pytest.raises(BenchmarkError, match="did not answer the benchmark"):
        measure(f"{state.address}/nothing-here", install.model_id)
    with pytest.raises(BenchmarkError, match="did not answer"):
        measure("http://127.0.0.1:9", install.model_id, timeout=2)
