"""``totem mcp serve`` as a subprocess, driven by the ``mcp`` package's own client, against a
scripted loopback model (tests/support/model_server.py).

``served`` gives a project, isolated user dirs, a config pointing at the model server (edits
allowed by a ``[permission]`` rule, since the server asks nobody) and ways in: ``stdio()``
(``mcp.client.stdio``) and ``http()`` (the server on ``127.0.0.1:0``, its URL and token read from
its stderr, ``mcp.client.streamable_http`` with the bearer token).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Totem
from tests.support.model_server import ModelServer

API_KEY = "sk-secret-test-key"  # the test config's provider key (tests/cli/conftest.py)
TOOLS = {
    "list_projects", "list_sessions", "read_session", "start_session", "send_prompt", "retry_turn", "abort_turn",
    "session_diff", "undo_turn", "redo_turn", "rewind", "fork_session",
}


@dataclass
class HttpServer:
    """A running ``totem mcp serve --http``; ``log`` is its stderr so far, line by line."""

    proc: subprocess.Popen
    url: str
    token: str | None
    log: list[str] = field(default_factory=list)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


@dataclass
class Served(Totem):
    def serve_config(self, extra: str = "") -> Path:
        """The test config with edits allowed (and ``extra`` TOML appended)."""
        path = self.home / "serve.toml"
        path.write_text(self.config.read_text() + '[permission]\nedit = "allow"\n' + extra)
        return path

    def command_line(self, *extra: str, config: Path | None = None) -> list[str]:
        return self.command("mcp", "serve", "--cwd", str(self.project), "--config", str(config or self.serve_config()), *extra)

    @contextlib.asynccontextmanager
    async def stdio(self, config: Path | None = None) -> AsyncIterator[Any]:
        """An initialized ``mcp.ClientSession`` over the server's stdio."""
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        line = self.command_line(config=config)
        params = StdioServerParameters(command=line[0], args=line[1:], env=self.env, cwd=str(self.project))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session

    @contextlib.contextmanager
    def http(self, config: Path | None = None):
        """``totem mcp serve --http 127.0.0.1:0`` running, its URL and printed token read."""
        proc = subprocess.Popen(
            self.command_line("--http", "127.0.0.1:0", config=config), env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        server = HttpServer(proc, url="", token=None)
        assert proc.stderr is not None
        for line in proc.stderr:
            server.log.append(line)
            if line.startswith("totem mcp serve: token "):
                server.token = line.split()[-1]
            if line.startswith("totem mcp serve: listening on "):
                server.url = line.split()[-1]
                break
        assert server.url, "".join(server.log)
        threading.Thread(target=lambda: server.log.extend(proc.stderr), daemon=True).start()
        try:
            yield server
        finally:
            if proc.poll() is None:
                server.stop()

    @contextlib.asynccontextmanager
    async def http_client(self, url: str, token: str) -> AsyncIterator[Any]:
        """An initialized ``mcp.ClientSession`` over streamable HTTP, sending the bearer token."""
        import httpx2
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30.0, read=120.0))
        async with client, streamable_http_client(url, http_client=client) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@pytest.fixture
def served(tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "home").mkdir()
    with ModelServer() as server:
        yield Served(project=project, home=tmp_path / "home", server=server)


def result(called: Any) -> dict:
    """A tool call's structured result; the text block is the same JSON."""
    assert not called.is_error, called.content[0].text
    assert json.loads(called.content[0].text) == called.structured_content
    return called.structured_content


def error_text(called: Any) -> str:
    assert called.is_error, called.structured_content
    return called.content[0].text
