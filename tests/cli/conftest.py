"""Run the real ``totem`` command as a subprocess against a scripted loopback model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.model_server import ModelServer


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.events]

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["kind"] == kind]


@dataclass
class Totem:
    """A project folder, isolated user dirs, and a config that points at the model server."""

    project: Path
    home: Path
    server: ModelServer

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            XDG_DATA_HOME=str(self.home / "data"),
            XDG_CONFIG_HOME=str(self.home / "config"),
            PYTHONUNBUFFERED="1",
        )
        return env

    @property
    def config(self) -> Path:
        path = self.home / "totem.toml"
        if not path.exists():
            path.write_text(
                # forge = false: an empty project folder is a Total.js one, whose built-in Forge
                # would ask to start in every test; tests/cli/test_forge.py points it to its stand-in.
                'model = "sim/test-model"\nretry_max_wait = 2.0\nforge = false\n'
                f'[providers.sim]\nkind = "openai"\nbase_url = "{self.server.base_url}"\napi_key = "sk-secret-test-key"\n'
            )
        return path

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "totem_cli.main", *args]

    def run(self, *args: str, timeout: float = 60) -> Result:
        proc = subprocess.run(
            self.command(*args), capture_output=True, text=True, env=self.env, timeout=timeout, stdin=subprocess.DEVNULL
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def agent(self, *prompt: str, extra: tuple[str, ...] = ()) -> Result:
        """``totem run --json`` in the project with the test config."""
        return self.run("run", "--cwd", str(self.project), "--config", str(self.config), "--json", *extra, *prompt)

    def export(self, session_id: str) -> dict:
        result = self.run("sessions", "export", session_id)
        assert result.code == 0, result.stderr
        return json.loads(result.stdout)


@pytest.fixture
def totem(tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "home").mkdir()
    with ModelServer() as server:
        yield Totem(project=project, home=tmp_path / "home", server=server)
