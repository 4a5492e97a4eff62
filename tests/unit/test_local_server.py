"""The local server process (totem_engine.local.server) with a fake llama-server: a small Python
script that answers /health (503 for a moment, as while loading, then 200), /v1/models and the
benchmark's /completion."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from totem_engine.local import server
from totem_engine.local.model import InstalledModel, LocalPaths

FAKE_SERVER = textwrap.dedent(
    """\
    #!{python}
    import http.server, json, os, sys, time
    args = sys.argv[1:]
    port = int(args[args.index("--port") + 1])
    alias = args[args.index("--alias") + 1] if "--alias" in args else "fake"
    if os.environ.get("FAKE_SERVER_FAIL"):
        print("error: cannot load model", flush=True)
        sys.exit(1)
    started = time.monotonic()
    with open(os.path.join(os.getcwd(), "fake-argv.json"), "w") as f:
        json.dump(args, f)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/health":
                ready = time.monotonic() - started > 0.3
                body = {{"status": "ok"}} if ready else {{"error": "loading"}}
                code = 200 if ready else 503
            elif self.path == "/v1/models":
                body, code = {{"object": "list", "data": [{{"id": alias, "object": "model"}}]}}, 200
            else:
                body, code = {{}}, 404
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            # The benchmark's /completion: llama-server's timings, made up; the request kept.
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with open(os.path.join(os.getcwd(), "fake-completion.json"), "w") as f:
                json.dump(body, f)
            timings = {{"prompt_n": 212, "prompt_ms": 2650.0, "prompt_per_second": 80.0,
                        "predicted_n": body["n_predict"], "predicted_ms": 1454.5, "predicted_per_second": 22.0}}
            answer = {{"content": "x" * body["n_predict"], "timings": timings}}
            data = json.dumps(answer if self.path == "/completion" else {{}}).encode()
            self.send_response(200 if self.path == "/completion" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
    """
)


def fake_install(root: Path, model_id: str = "qwen2.5-coder-1.5b") -> InstalledModel:
    """A finished "setup" under ``root`` whose llama-server is the fake script."""
    paths = LocalPaths(root)
    paths.server_binary.parent.mkdir(parents=True, exist_ok=True)
    paths.server_binary.write_text(FAKE_SERVER.format(python=sys.executable))
    paths.server_binary.chmod(0o755)
    paths.model_file.parent.mkdir(parents=True, exist_ok=True)
    paths.model_file.write_bytes(b"GGUF" + b"\0" * 60)
    paths.write_marker("build", {"sha256": "x"})
    paths.write_marker("model", {"path": str(paths.model_file), "model_id": model_id, "source": "pypi"})
    return InstalledModel(paths.server_binary, paths.model_file, model_id)


@pytest.fixture
def local_root(tmp_path):
    root = tmp_path / "local"
    yield root
    server.stop(root)  # never leave a fake server behind


def test_start_waits_for_health_records_state_and_stop_kills_the_group(local_root):
    install = fake_install(local_root)
    state, started = server.start(local_root, install, ctx=8192, timeout=20)
    assert started
    assert server.health(state.port)  # answered 503 first: start waited for 200
    argv = json.loads((local_root / "fake-argv.json").read_text())
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert argv[argv.index("-c") + 1] == "8192"
    assert "--jinja" in argv and argv[argv.index("--alias") + 1] == "qwen2.5-coder-1.5b"
    assert os.getpgid(state.pid) == state.pid  # its own process group
    recorded = json.loads(LocalPaths(local_root).server_state.read_text())
    assert recorded["pid"] == state.pid and recorded["port"] == state.port
    assert recorded["base_url"] == f"http://127.0.0.1:{state.port}/v1"
    models = httpx.get(f"{state.base_url}/models", trust_env=False).json()
    assert models["data"][0]["id"] == "qwen2.5-coder-1.5b"

    st = server.status(local_root)
    assert st.alive and st.healthy and st.state == state

    # A second start reuses it.
    again, started_again = server.start(local_root, install, timeout=20)
    assert not started_again and again.pid == state.pid

    assert server.stop(local_root)
    assert not server.pid_alive(state.pid)
    assert not LocalPaths(local_root).server_state.exists()
    assert server.status(local_root).state is None
    assert not server.stop(local_root)  # nothing to stop


def test_configured_port_is_used(local_root):
    install = fake_install(local_root)
    port = server.free_port()
    state, _ = server.start(local_root, install, port=port, timeout=20)
    assert state.port == port and server.health(port)


def test_a_server_that_exits_is_reported_with_its_log(local_root, monkeypatch):
    install = fake_install(local_root)
    monkeypatch.setenv("FAKE_SERVER_FAIL", "1")
    with pytest.raises(server.LocalServerError, match="exited(.|\n)*cannot load model"):
        server.start(local_root, install, timeout=20)
    assert server.read_state(local_root) is None


def test_a_stale_state_file_is_replaced(local_root):
    install = fake_install(local_root)
    LocalPaths(local_root).server_state.write_text(
        json.dumps({"pid": 999999, "port": 1, "model_id": "m", "model": "x", "ctx": 1, "owner": None, "started_at": 0})
    )
    assert not server.status(local_root).alive
    state, started = server.start(local_root, install, timeout=20)
    assert started and state.pid != 999999


def test_owner_stops_it_on_release_only_when_no_other_lease_is_live(local_root):
    install = fake_install(local_root)
    me = os.getpid()
    server.acquire_lease(local_root)
    state, _ = server.start(local_root, install, owner=me, timeout=20)
    # Another live Totem process (the parent of this test process) holds a lease too.
    other = os.getppid()
    server.acquire_lease(local_root, other)
    assert not server.release_lease(local_root)
    assert server.status(local_root).healthy
    (LocalPaths(local_root).leases / str(other)).unlink()
    server.acquire_lease(local_root)
    assert server.release_lease(local_root)
    assert not server.pid_alive(state.pid)


def test_a_user_started_server_is_not_stopped_by_a_release(local_root):
    install = fake_install(local_root)
    server.start(local_root, install, owner=None, timeout=20)
    server.acquire_lease(local_root)
    assert not server.release_lease(local_root)
    assert server.status(local_root).healthy


def test_dead_leases_are_pruned_and_a_dead_owner_does_not_keep_it(local_root):
    install = fake_install(local_root)
    state, _ = server.start(local_root, install, owner=999999, timeout=20)  # an owner that died
    server.acquire_lease(local_root, 999998)  # a lease of a dead process
    assert server.live_leases(local_root) == []
    server.acquire_lease(local_root)
    assert server.release_lease(local_root)
    assert not server.pid_alive(state.pid)
