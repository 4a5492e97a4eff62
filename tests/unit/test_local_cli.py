"""``totem local start|status|stop`` end to end through ``totem_cli.main`` with a fake server."""

from __future__ import annotations

from tests.unit.test_local_server import fake_install
from totem_cli.main import main
from totem_engine.local import server


def test_start_status_stop(tmp_path, capsys):
    root = tmp_path / "local"
    config = tmp_path / "c.toml"
    config.write_text(f'local_dir = "{root}"\n')
    args = ["local", "--config", str(config)]
    assert main([*args, "status"]) == 3
    assert "run `totem local setup`" in capsys.readouterr().out
    assert main([*args, "start"]) == 1  # nothing set up
    assert "totem local setup" in capsys.readouterr().err
    fake_install(root)
    try:
        assert main([*args, "start"]) == 0
        assert "started: local/qwen2.5-coder-1.5b at http://127.0.0.1:" in capsys.readouterr().out
        assert main([*args, "start"]) == 0
        assert "already running" in capsys.readouterr().out
        assert main([*args, "status"]) == 0
        assert "started by `totem local start`" in capsys.readouterr().out
        assert main([*args, "stop"]) == 0
        assert capsys.readouterr().out.strip() == "stopped"
        assert main([*args, "stop"]) == 0
        assert capsys.readouterr().out.strip() == "not running"
    finally:
        server.stop(root)


def test_setup_reports_a_missing_tool(tmp_path, capsys, monkeypatch):
    root = tmp_path / "local"
    config = tmp_path / "c.toml"
    config.write_text(f'local_dir = "{root}"\n')
    # A finished source stage would need the network; start at the build with no tools on PATH.
    from totem_engine.local.build import Setup

    monkeypatch.setattr(Setup, "_source_done", lambda self: True)
    monkeypatch.setattr(Setup, "_extract_done", lambda self: True)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CXX", raising=False)
    assert main(["local", "--config", str(config), "setup"]) == 1
    err = capsys.readouterr().err
    assert "needs cmake, a C++ compiler (g++ or clang++), ninja or make" in err
    assert "apt-get install cmake g++" in err


def test_models_lists_the_installed_local_model_until_a_provider_of_that_name_replaces_it(tmp_path, capsys):
    root = tmp_path / "local"
    config = tmp_path / "c.toml"
    config.write_text(f'local_dir = "{root}"\nlocal_ctx = 4096\n')
    args = ["models", "--config", str(config), "--cwd", str(tmp_path), "--no-local"]
    assert main(args) == 1  # nothing configured, nothing installed
    capsys.readouterr()
    fake_install(root)
    assert main(args) == 0
    assert capsys.readouterr().out == "local/qwen2.5-coder-1.5b\t4096\tstarts on demand (the default: no model configured)\n"
    config.write_text(f'local_dir = "{root}"\n[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n')
    main(args)
    assert "starts on demand" not in capsys.readouterr().out


def test_main_in_process_keeps_broken_pipe_errors(tmp_path, capsys):
    # A test runner that called main() once must not then be killed by SIGPIPE when a child's
    # pipe closes: only the `totem` executable restores the default action.
    import signal

    config = tmp_path / "c.toml"
    config.write_text(f'local_dir = "{tmp_path / "local"}"\n')
    before = signal.getsignal(signal.SIGPIPE)
    main(["local", "--config", str(config), "status"])
    assert signal.getsignal(signal.SIGPIPE) == before == signal.SIG_IGN



def test_status_shows_the_disk_use(tmp_path, capsys):
    from totem_engine.local.model import LocalPaths

    root = tmp_path / "local"
    config = tmp_path / "c.toml"
    config.write_text(f'local_dir = "{root}"\n')
    install = fake_install(root)
    leftover = LocalPaths(root).downloads / "model" / "part.whl"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"w" * 2000)
    assert main(["local", "--config", str(config), "status"]) == 3  # set up, not running
    out = capsys.readouterr().out
    model = install.model.stat().st_size
    binary = install.binary.stat().st_size
    assert f"(model {model} bytes, server {binary / 1000:.1f} kB, downloads, sources and build 2.0 kB)" in out
    total = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())  # all of local_dir
    assert f"disk       {total / 1000:.1f} kB (model" in out


def test_setup_measures_the_speed_and_status_shows_it(tmp_path, capsys, monkeypatch):
    from totem_engine.local.build import Setup

    root = tmp_path / "local"
    config = tmp_path / "c.toml"
    config.write_text(f'local_dir = "{root}"\n')
    install = fake_install(root)
    monkeypatch.setattr(Setup, "run", lambda self: install)  # the stages have their own tests
    args = ["local", "--config", str(config)]
    assert main([*args, "status"]) == 3
    out = capsys.readouterr().out
    assert "speed      not measured (`totem local setup` measures it)" in out
    try:
        assert main([*args, "setup"]) == 0
        out = capsys.readouterr().out
        assert "  speed   80 tokens/s of prompt, 22.0 generated (" in out
        assert server.status(root).state is None  # started for the benchmark only
        assert main([*args, "status"]) == 3  # set up, not running
        assert "speed      80 tokens/s of prompt, 22.0 generated (" in capsys.readouterr().out
    finally:
        server.stop(root)


def test_setup_fails_when_the_built_server_does_not_run(tmp_path, capsys, monkeypatch):
    from totem_engine.local.build import Setup

    root = tmp_path / "local"
    config = tmp_path / "c.toml"
    config.write_text(f'local_dir = "{root}"\n')
    install = fake_install(root)
    monkeypatch.setattr(Setup, "run", lambda self: install)
    monkeypatch.setenv("FAKE_SERVER_FAIL", "1")
    assert main(["local", "--config", str(config), "setup"]) == 1
    captured = capsys.readouterr()
    assert "the server was built but does not run on this machine: llama-server exited" in captured.err
    assert "now use it" not in captured.out


def test_setup_says_when_the_speed_could_not_be_measured(tmp_path, capsys, monkeypatch):
    from totem_engine.api import local as local_api
    from totem_engine.local import benchmark
    from totem_engine.local.build import Setup

    root = tmp_path / "local"
    config = tmp_path / "c.toml"
    config.write_text(f'local_dir = "{root}"\n')
    install = fake_install(root)
    monkeypatch.setattr(Setup, "run", lambda self: install)

    def unanswered(*args, **kwargs):
        raise benchmark.BenchmarkError("the server did not answer the benchmark: timed out")

    monkeypatch.setattr(local_api, "benchmark", unanswered)  # the name totem_cli.local calls
    assert main(["local", "--config", str(config), "setup"]) == 0  # the server runs: set up all the same
    out = capsys.readouterr().out
    assert "  speed   not measured: the server did not answer the benchmark: timed out" in out
