"""The real MCP servers the tests run, installed once per test session by
``scripts/setup-mcp-servers.sh`` (version-pinned, cached under TOTEM_TEST_CACHE or
~/.cache/totem-test), and the ``mcp.json`` entries that start them and the stand-ins."""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def installed_servers() -> dict[str, list[str]]:
    """Server name (``filesystem``, ``time``, ``git``) → the command line that starts it."""
    setup = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-mcp-servers.sh")], capture_output=True, text=True, timeout=900, check=False,
    )
    assert setup.returncode == 0, f"scripts/setup-mcp-servers.sh failed:\n{setup.stderr[-4000:]}"
    cache = Path(os.environ.get("TOTEM_TEST_CACHE", Path.home() / ".cache" / "totem-test"))
    lines = (cache / "mcp.env").read_text().splitlines()
    return {name: shlex.split(value) for name, _, value in (line.partition("=") for line in lines if line)}


def stdio_entry(argv: list[str], **extra) -> dict:
    return {"command": argv[0], "args": argv[1:], **extra}


def standin(*flags: str) -> dict:
    """The misbehaving stand-in (tests/support/mcp_standin.py) run by this interpreter."""
    return {"command": sys.executable, "args": [str(ROOT / "tests" / "support" / "mcp_standin.py"), *flags]}


def sdk_server(era: str) -> dict:
    """The ``mcp`` package's own server speaking one era only (tests/support/mcp_sdk_stdio.py):
    ``modern`` (2026-07-28) or ``legacy`` (the ``initialize`` handshake)."""
    return {"command": sys.executable, "args": [str(ROOT / "tests" / "support" / "mcp_sdk_stdio.py"), era]}


def real_entries(project: Path) -> dict:
    """``fs`` (the filesystem server, allowed the project folder) and ``time`` (UTC)."""
    servers = installed_servers()
    return {"fs": stdio_entry([*servers["filesystem"], str(project)]), "time": stdio_entry(servers["time"])}


def git_entry(repository: Path) -> dict:
    """``git`` confined to ``repository`` (its tools still take the repository as ``repo_path``)."""
    return stdio_entry([*installed_servers()["git"], "--repository", str(repository)])


def write_mcp_json(path: Path, servers: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"servers": servers}, indent=2))
    return path


class HttpServer:
    """tests/support/mcp_http.py in a process of its own: ``url``, and the ``token`` it wants in
    ``X-Token``; ``handshake_only``: it refuses the 2026-07-28 probe as a server of 2025 does."""

    def __init__(self, token: str = "sesame", *, handshake_only: bool = False):
        self.token = token
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.mcp_http", token, *(["--handshake-only"] if handshake_only else [])],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.process.stdout.readline())}/mcp"
        self._wait_listening()

    def _wait_listening(self) -> None:
        import socket

        port = int(self.url.rsplit(":", 1)[1].split("/")[0])
        for _ in range(200):
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.05)
        raise AssertionError("the MCP HTTP stand-in did not listen")

    def entry(self, token: str | None = None) -> dict:
        return {"url": self.url, "headers": {"X-Token": self.token if token is None else token}}

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
