"""Each door once from Totem as a user installs it: the wheel in a fresh venv outside the
checkout (tests/support/wheel.py), run from a folder outside it with the user's own HOME.

An editable install hides a package the wheel leaves out (``totem run`` of an installed wheel once
failed at ``run_script``: ``No module named 'totem_engine.codemode'``), so every module these
doors load must come from the installed wheel.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path

import pytest

from tests.support.model_server import ModelServer, text_reply, tool_reply
from tests.support.wheel import ROOT, outside_env
from tests.support.reminder import sent_messages

WAIT = 60


@pytest.fixture
def user(tmp_path, installed_totem):
    """A user outside the checkout: HOME and XDG dirs, a project, a working folder."""
    assert ROOT not in tmp_path.parents
    for name in ("home", "project", "elsewhere"):
        (tmp_path / name).mkdir()
    return tmp_path


def config(user: Path, model: ModelServer | None = None) -> Path:
    """The user's config (``totem acp`` reads no --config), with the loopback model."""
    path = user / "home" / "config" / "totem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = 'forge = false\n[permission]\nedit = "allow"\n'
    if model:
        text = f'model = "sim/test-model"\n{text}[providers.sim]\nkind = "openai"\nbase_url = "{model.base_url}"\n'
    path.write_text(text)
    return path


class Stdio:
    """A door's process spoken to in JSON-RPC over stdio: LSP's framed messages, or one JSON
    object a line (ACP, MCP)."""

    def __init__(self, argv: list, user: Path, *, framed: bool):
        self.framed = framed
        self.proc = subprocess.Popen(
            [str(a) for a in argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=outside_env(user / "home"), cwd=user / "elsewhere",
        )
        self.messages: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            if self.framed:
                headers = {}
                while (line := out.readline()) not in (b"\r\n", b""):
                    name, _, value = line.decode().partition(":")
                    headers[name.strip().lower()] = value.strip()
                if not headers:
                    return
                body = out.read(int(headers["content-length"]))
            elif not (body := out.readline()):
                return
            self.messages.put(json.loads(body))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body) if self.framed else body + b"\n")
        self.proc.stdin.flush()

    def request(self, id: int, method: str, params: dict) -> dict:
        """The result of the request (notifications and the server's own requests are passed over)."""
        self.send({"id": id, "method": method, "params": params})
        while True:
            try:
                message = self.messages.get(timeout=WAIT)
            except queue.Empty:
                self.proc.kill()
                raise AssertionError(f"no answer to {method}: {self.proc.stderr.read().decode()[-3000:]}") from None
            if message.get("id") == id and "method" not in message:
                assert "error" not in message, message
                return message["result"]

    def close(self) -> None:
        self.proc.kill()
        self.proc.communicate(timeout=WAIT)


def test_the_installed_totem_is_the_wheel_not_the_checkout(installed_totem, user):
    where = subprocess.run(
        [installed_totem.python, "-c", (
            "import totem_engine, totem_prompts, totem_engine.codemode as c; "
            "print(totem_engine.__file__); print(totem_prompts.__file__); print(c.__file__)"
        )],
        capture_output=True, text=True, env=outside_env(user / "home"), cwd=user / "elsewhere", check=True,
    ).stdout.split()
    assert len(where) == 3
    for file in where:
        assert Path(file).is_relative_to(installed_totem.venv), file
        assert not Path(file).is_relative_to(ROOT), file


def test_totem_run_drives_a_scripted_model_through_run_script(installed_totem, user):
    script = "import totem\ntotem.write('made.txt', 'by a script\\n')\nprint('wrote it')"
    with ModelServer() as model:
        model.enqueue(tool_reply([("run_script", {"script": script})]))
        model.enqueue(text_reply("Done."))
        result = subprocess.run(
            [installed_totem.totem, "run", "--cwd", user / "project", "--config", config(user, model), "--yes", "--json", "write it"],
            capture_output=True, text=True, env=outside_env(user / "home"), cwd=user / "elsewhere", timeout=WAIT * 2, check=False,
        )
        assert result.returncode == 0, result.stderr
        events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
        (end,) = [e for e in events if e["kind"] == "toolEnd"]
        assert (end["tool"], end["status"]) == ("run_script", "ok"), end
        assert end["output"].startswith("wrote it\n")
        assert (user / "project" / "made.txt").read_text() == "by a script\n"
        # The script's output went back to the model.
        assert sent_messages(model.requests[1])[-1]["content"] == end["output"]
        assert events[-1]["kind"] == "turnEnd" and events[-1]["stopReason"] == "finished"


def test_totem_lsp_answers_initialize(installed_totem, user):
    config(user)
    lsp = Stdio([installed_totem.totem, "lsp"], user, framed=True)
    try:
        result = lsp.request(1, "initialize", {"processId": None, "capabilities": {}, "rootUri": (user / "project").as_uri()})
        assert result["serverInfo"]["name"].lower().startswith("totem")
        assert result["capabilities"]["experimental"]["totem"]["protocolVersion"] == 1
        lsp.request(2, "shutdown", None)
    finally:
        lsp.close()


def test_totem_acp_opens_a_session(installed_totem, user):
    with ModelServer() as model:  # a session needs a model; opening one asks it nothing
        config(user, model)
        acp = Stdio([installed_totem.totem, "acp"], user, framed=False)
        try:
            assert acp.request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})["protocolVersion"] == 1
            session = acp.request(2, "session/new", {"cwd": str(user / "project"), "mcpServers": []})
            assert session["sessionId"].startswith("ses_")
        finally:
            acp.close()


def test_totem_mcp_serve_lists_its_tools(installed_totem, user):
    mcp = Stdio([installed_totem.totem, "mcp", "serve", "--cwd", user / "project", "--config", config(user)], user, framed=False)
    try:
        mcp.request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
        mcp.send({"method": "notifications/initialized"})
        tools = {t["name"] for t in mcp.request(2, "tools/list", {})["tools"]}
        assert {"start_session", "send_prompt", "undo_turn", "rewind"} <= tools, tools
    finally:
        mcp.close()


def test_totem_local_status_says_nothing_is_installed(installed_totem, user):
    result = subprocess.run(
        [installed_totem.totem, "local", "status"],
        capture_output=True, text=True, env=outside_env(user / "home"), cwd=user / "elsewhere", timeout=WAIT, check=False,
    )
    assert result.returncode == 3, result.stderr  # the server does not run (totem_cli/local.py)
    assert result.stdout.split("\n")[:3] == [
        f"local_dir  {user / 'home' / 'data' / 'totem' / 'local'}",
        "installed  no (run `totem local setup`)",
        "server     not running",
    ]
